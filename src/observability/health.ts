// Proxy health as kube-proxy 1.32 reports it (pkg/proxy/healthcheck/proxier_health.go):
// - healthy while starting and whenever nothing is queued; unhealthy once the
//   oldest change queued since the last successful sync is older than the
//   timeout (the dataplane is stuck);
// - /healthz also needs the Node eligible: not being deleted and without the
//   cluster autoscaler's ToBeDeletedByClusterAutoscaler taint, so that load
//   balancers drain a node before it goes; /livez ignores the Node;
// - when healthy, lastUpdated is reported as the current time (kube-proxy keeps
//   that for compatibility with releases where it was the last loop run).
// Pure: callers pass the time in.

import type { NodeInfo } from '../k8s/types.ts';
import { TO_BE_DELETED_TAINT } from '../k8s/well-known.ts';

export interface HealthAnswer {
  status: 200 | 503;
  /** The JSON body, field for field as kube-proxy writes it. */
  body: string;
}

/** Go's time.Time.String() in UTC (what kube-proxy's bodies carry), without its monotonic suffix. */
export function goTimeString(ms: number | undefined): string {
  if (ms === undefined) return '0001-01-01 00:00:00 +0000 UTC';
  const iso = new Date(ms).toISOString(); // 2026-11-25T16:30:02.120Z
  const fraction = iso.slice(20, 23).replace(/0+$/, '');
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${fraction ? `.${fraction}` : ''} +0000 UTC`;
}

/** Whether a Node may receive load-balancer traffic (kube-proxy's SyncNode). */
export function nodeEligible(node: Pick<NodeInfo, 'deleting' | 'taints'>): boolean {
  return node.deleting !== true && !(node.taints ?? []).includes(TO_BE_DELETED_TAINT);
}

export class HealthState {
  private lastUpdatedMs: number | undefined;
  /** Oldest change queued since the last successful sync. */
  private oldestPendingMs: number | undefined;
  private eligible = true;
  private seenNode = false;
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    this.timeoutMs = timeoutMs;
  }

  /** A change arrived that the rules do not reflect yet. */
  queued(nowMs: number): void {
    if (this.oldestPendingMs === undefined) this.oldestPendingMs = nowMs;
  }

  /** The rules now reflect every change queued so far. */
  synced(nowMs: number): void {
    this.lastUpdatedMs = nowMs;
    this.oldestPendingMs = undefined;
  }

  /**
   * This Node's latest state. Eligible while starting, until a Node says
   * otherwise; a Node that disappears after it was seen is not eligible
   * (kube-proxy keeps its last answer; a deleted node should drain).
   */
  node(node: NodeInfo | undefined): void {
    if (node === undefined) {
      if (this.seenNode) this.eligible = false;
      return;
    }
    this.seenNode = true;
    this.eligible = nodeEligible(node);
  }

  get nodeEligible(): boolean {
    return this.eligible;
  }

  /** The proxy's own health, without the Node (what health-check node ports report). */
  isHealthy(nowMs: number): boolean {
    return this.oldestPendingMs === undefined || nowMs - this.oldestPendingMs < this.timeoutMs;
  }

  healthz(nowMs: number): HealthAnswer {
    const healthy = this.isHealthy(nowMs) && this.eligible;
    const lastUpdated = goTimeString(healthy ? nowMs : this.lastUpdatedMs);
    const body =
      `{"lastUpdated": ${JSON.stringify(lastUpdated)},"currentTime": ${JSON.stringify(goTimeString(nowMs))}, ` +
      `"nodeEligible": ${this.eligible}}`;
    return { status: healthy ? 200 : 503, body };
  }

  livez(nowMs: number): HealthAnswer {
    const healthy = this.isHealthy(nowMs);
    const lastUpdated = goTimeString(healthy ? nowMs : this.lastUpdatedMs);
    return {
      status: healthy ? 200 : 503,
      body: `{"lastUpdated": ${JSON.stringify(lastUpdated)},"currentTime": ${JSON.stringify(goTimeString(nowMs))}}`,
    };
  }
}

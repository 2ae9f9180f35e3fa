// Proxy health as kube-proxy's /healthz reports it: healthy once rules have been
// programmed, and unhealthy when a queued change has waited longer than the
// timeout without a successful sync (the dataplane is stuck). Pure: callers pass
// the time in.

export interface HealthReport {
  healthy: boolean;
  lastUpdated?: string;
  currentTime: string;
  reason?: string;
}

export class HealthState {
  private lastSyncedMs: number | undefined;
  /** Oldest change queued since the last successful sync. */
  private oldestPendingMs: number | undefined;
  private readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    this.timeoutMs = timeoutMs;
  }

  queued(nowMs: number): void {
    if (this.oldestPendingMs === undefined) this.oldestPendingMs = nowMs;
  }

  synced(nowMs: number): void {
    this.lastSyncedMs = nowMs;
    this.oldestPendingMs = undefined;
  }

  report(nowMs: number): HealthReport {
    const currentTime = new Date(nowMs).toISOString();
    const lastUpdated = this.lastSyncedMs === undefined ? undefined : new Date(this.lastSyncedMs).toISOString();
    if (this.lastSyncedMs === undefined) {
      return { healthy: false, currentTime, reason: 'rules have not been programmed yet' };
    }
    if (this.oldestPendingMs !== undefined && nowMs - this.oldestPendingMs > this.timeoutMs) {
      return { healthy: false, lastUpdated, currentTime, reason: `a change has waited ${Math.round((nowMs - this.oldestPendingMs) / 1000)}s without a successful sync` };
    }
    return { healthy: true, lastUpdated, currentTime };
  }
}

// kube-proxy's change metrics, kept as its change trackers keep them:
// - *_changes_pending: Services with a Service change, and Services with an
//   EndpointSlice change, received but not yet taken by a sync;
// - network programming latency: per Service, the EndpointSlices'
//   endpoints.kubernetes.io/last-change-trigger-time values, observed once the
//   sync that carries them lands. Skipped, as kube-proxy skips them: slices
//   without the annotation, times before this agent started (whoever ran
//   before programmed those), and a deleted slice (its annotation dates its
//   last update, not the deletion; it also drops the Service's pending times).
// Times are passed in; the caller owns the clock.

import type { EndpointSliceInfo, ServiceInfo, StoreEvent } from '../k8s/types.ts';
import type { ProxyMetrics } from '../observability/metrics.ts';

export class ChangeMetrics {
  readonly #metrics: ProxyMetrics;
  readonly #startedAt: number;
  readonly #services = new Set<string>();
  readonly #endpoints = new Set<string>();
  readonly #triggers = new Map<string, number[]>();
  /** Handed to a sync that has not landed yet; a failed sync keeps them for its retry. */
  #inFlight: number[] = [];

  constructor(metrics: ProxyMetrics, startedAtMs: number) {
    this.#metrics = metrics;
    this.#startedAt = startedAtMs;
  }

  service(ev: StoreEvent<ServiceInfo>): void {
    this.#metrics.serviceChanges.inc();
    this.#services.add(ev.key);
    this.#metrics.serviceChangesPending.set(this.#services.size);
  }

  endpointSlice(ev: StoreEvent<EndpointSliceInfo>): void {
    this.#metrics.endpointChanges.inc();
    const serviceKey = `${ev.object.namespace}/${ev.object.serviceName}`;
    this.#endpoints.add(serviceKey);
    this.#metrics.endpointChangesPending.set(this.#endpoints.size);
    const t = ev.object.lastChangeTriggerTime;
    if (ev.type === 'delete') this.#triggers.delete(serviceKey);
    else if (t !== undefined && t > this.#startedAt) this.#triggers.set(serviceKey, (this.#triggers.get(serviceKey) ?? []).concat(t));
  }

  /** A sync took every pending change. */
  drained(): void {
    for (const times of this.#triggers.values()) for (const t of times) this.#inFlight.push(t);
    this.#triggers.clear();
    this.#services.clear();
    this.#endpoints.clear();
    this.#metrics.serviceChangesPending.set(0);
    this.#metrics.endpointChangesPending.set(0);
  }

  /** The sync that took them is programmed. */
  landed(nowMs: number): void {
    for (const t of this.#inFlight) this.#metrics.networkProgrammingDuration.observe(Math.max(0, nowMs - t) / 1000);
    this.#inFlight = [];
  }
}

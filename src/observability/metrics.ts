// Prometheus metrics under kube-proxy's names, so existing dashboards and alerts
// keep working, plus kube_nft_proxy_* for what kube-proxy has no name for.
// One registry per agent (not prom-client's global), so embedders and tests can
// run several agents in one process.

import { Counter, Gauge, Histogram, Registry } from 'prom-client';

// kube-proxy's sync-duration buckets: exponential from 1 ms.
const SYNC_BUCKETS = [0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096, 8.192, 16.384];
const PROGRAMMING_BUCKETS = [0.25, 0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 65, 70, 75, 80, 85, 90, 95, 100, 105, 110, 115, 120, 150, 180, 210, 240, 270, 300];

export type SyncKind = 'full' | 'partial';

export class ProxyMetrics {
  readonly registry = new Registry();
  readonly syncDuration = new Histogram({
    name: 'kubeproxy_sync_proxy_rules_duration_seconds',
    help: 'SyncProxyRules latency in seconds',
    buckets: SYNC_BUCKETS,
    registers: [this.registry],
  });
  readonly fullSyncDuration = new Histogram({
    name: 'kubeproxy_sync_full_proxy_rules_duration_seconds',
    help: 'SyncProxyRules latency in seconds for full resyncs',
    buckets: SYNC_BUCKETS,
    registers: [this.registry],
  });
  readonly partialSyncDuration = new Histogram({
    name: 'kubeproxy_sync_partial_proxy_rules_duration_seconds',
    help: 'SyncProxyRules latency in seconds for partial resyncs',
    buckets: SYNC_BUCKETS,
    registers: [this.registry],
  });
  readonly lastSyncTimestamp = new Gauge({
    name: 'kubeproxy_sync_proxy_rules_last_timestamp_seconds',
    help: 'The last time proxy rules were successfully synced',
    registers: [this.registry],
  });
  readonly lastQueuedTimestamp = new Gauge({
    name: 'kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds',
    help: 'The last time a sync of proxy rules was queued',
    registers: [this.registry],
  });
  readonly networkProgrammingDuration = new Histogram({
    name: 'kubeproxy_network_programming_duration_seconds',
    help: 'In Cluster Network Programming Latency in seconds',
    buckets: PROGRAMMING_BUCKETS,
    registers: [this.registry],
  });
  readonly endpointChanges = new Counter({
    name: 'kubeproxy_sync_proxy_rules_endpoint_changes_total',
    help: 'Cumulative proxy rules Endpoint changes',
    registers: [this.registry],
  });
  readonly serviceChanges = new Counter({
    name: 'kubeproxy_sync_proxy_rules_service_changes_total',
    help: 'Cumulative proxy rules Service changes',
    registers: [this.registry],
  });
  readonly syncFailures = new Counter({
    name: 'kubeproxy_sync_proxy_rules_nftables_sync_failures_total',
    help: 'Cumulative proxy nftables sync failures',
    registers: [this.registry],
  });
  readonly noLocalEndpoints = new Gauge({
    name: 'kubeproxy_sync_proxy_rules_no_local_endpoints_total',
    help: 'Number of services with a Local traffic policy and no endpoints',
    labelNames: ['traffic_policy'],
    registers: [this.registry],
  });
  readonly nftablesOperations = new Counter({
    name: 'kube_nft_proxy_nftables_operations_total',
    help: 'nftables operations committed, by verb and object kind',
    labelNames: ['verb', 'kind'],
    registers: [this.registry],
  });
  readonly offloadEnabled = new Gauge({
    name: 'kube_nft_proxy_flowtable_offload_enabled',
    help: '1 when Service connections are offloaded to a flowtable (KEP-4963), 0 when off (disabled, or the kernel lacks flowtables)',
    registers: [this.registry],
  });
  readonly offloadDevices = new Gauge({
    name: 'kube_nft_proxy_flowtable_devices',
    help: 'Interfaces in the offload flowtable',
    registers: [this.registry],
  });
  // Conntrack cleanup (UDP/SCTP entries that no longer lead to a serving endpoint).
  readonly conntrackEntriesDeleted = new Counter({
    name: 'kube_nft_proxy_conntrack_entries_deleted_total',
    help: 'Stale UDP/SCTP conntrack entries deleted, by kind of cleanup (changed: after a sync, for the Service ports it changed; full: the whole table at the full resync)',
    labelNames: ['kind'],
    registers: [this.registry],
  });
  readonly conntrackCleanupFailures = new Counter({
    name: 'kube_nft_proxy_conntrack_cleanup_failures_total',
    help: 'Conntrack cleanups that failed in part or whole (a dump or deletes refused); the rules are unaffected',
    labelNames: ['kind'],
    registers: [this.registry],
  });

  recordSync(kind: SyncKind, seconds: number, nowSeconds: number): void {
    this.syncDuration.observe(seconds);
    (kind === 'full' ? this.fullSyncDuration : this.partialSyncDuration).observe(seconds);
    this.lastSyncTimestamp.set(nowSeconds);
  }
}

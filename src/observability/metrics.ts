// Prometheus metrics under kube-proxy's names, so existing dashboards and alerts
// keep working, plus kube_nft_proxy_* for what kube-proxy has no name for.
// kube-proxy 1.32 (pkg/proxy/metrics/metrics.go) registers, in nftables mode,
// the names in KUBE_PROXY_NFTABLES_METRICS with the same types, labels and
// buckets as here. Its iptables-mode full/partial histograms are kept too:
// they cost nothing and dashboards written for iptables mode read them.
// One registry per agent (not prom-client's global), so embedders and tests can
// run several agents in one process.

import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from './prom-parts.ts';

// kube-proxy's sync-duration buckets: exponential from 1 ms.
const SYNC_BUCKETS = [0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096, 8.192, 16.384];
// kube-proxy's network programming buckets: MergeBuckets starts from a 0 bucket, then
// 0.25 s, 0.5 s, every second to 59 s, every 5 s to 115 s, every 30 s to 5 min.
const PROGRAMMING_BUCKETS = [
  0, 0.25, 0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33,
  34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 65, 70, 75, 80, 85, 90, 95,
  100, 105, 110, 115, 120, 150, 180, 210, 240, 270, 300,
];

export type SyncKind = 'full' | 'partial';

/** Every metric kube-proxy 1.32 registers in nftables mode (without the kubeproxy_ prefix). */
export const KUBE_PROXY_NFTABLES_METRICS = [
  'sync_proxy_rules_duration_seconds',
  'sync_proxy_rules_last_queued_timestamp_seconds',
  'sync_proxy_rules_last_timestamp_seconds',
  'sync_proxy_rules_endpoint_changes_pending',
  'sync_proxy_rules_endpoint_changes_total',
  'sync_proxy_rules_service_changes_pending',
  'sync_proxy_rules_service_changes_total',
  'proxy_healthz_total',
  'proxy_livez_total',
  'network_programming_duration_seconds',
  'sync_proxy_rules_no_local_endpoints_total',
  'sync_proxy_rules_nftables_sync_failures_total',
  'sync_proxy_rules_nftables_cleanup_failures_total',
] as const;

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
  readonly endpointChangesPending = new Gauge({
    name: 'kubeproxy_sync_proxy_rules_endpoint_changes_pending',
    help: 'Pending proxy rules Endpoint changes',
    registers: [this.registry],
  });
  readonly serviceChangesPending = new Gauge({
    name: 'kubeproxy_sync_proxy_rules_service_changes_pending',
    help: 'Pending proxy rules Service changes',
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
  readonly cleanupFailures = new Counter({
    name: 'kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total',
    help: 'Cumulative proxy nftables cleanup failures',
    registers: [this.registry],
  });
  readonly healthzTotal = new Counter({
    name: 'kubeproxy_proxy_healthz_total',
    help: 'Cumulative proxy healthz HTTP status',
    labelNames: ['code'],
    registers: [this.registry],
  });
  readonly livezTotal = new Counter({
    name: 'kubeproxy_proxy_livez_total',
    help: 'Cumulative proxy livez HTTP status',
    labelNames: ['code'],
    registers: [this.registry],
  });
  readonly noLocalEndpoints = new Gauge({
    name: 'kubeproxy_sync_proxy_rules_no_local_endpoints_total',
    help: 'Number of services with a Local traffic policy and no endpoints',
    labelNames: ['traffic_policy'],
    registers: [this.registry],
  });
  // (kube_nft_proxy_refused_service_ports and the conntrack counters belong here too; see the isolation and conntrack work.)
  readonly nftablesOperations = new Counter({
    name: 'kube_nft_proxy_nftables_operations_total',
    help: 'nftables operations committed, by verb and object kind',
    labelNames: ['verb', 'kind'],
    registers: [this.registry],
  });
  readonly healthCheckServers = new Gauge({
    name: 'kube_nft_proxy_health_check_node_ports',
    help: 'Services whose health-check node port is being served on this node',
    registers: [this.registry],
  });
  readonly healthCheckBindFailures = new Counter({
    name: 'kube_nft_proxy_health_check_node_port_bind_failures_total',
    help: 'Attempts to open a health-check node port that failed (the port is retried at the next sync)',
    registers: [this.registry],
  });
  readonly httpConnectionsRefused = new Counter({
    name: 'kube_nft_proxy_http_connections_refused_total',
    help: 'HTTP connections closed on arrival because the server group had its maximum open',
    labelNames: ['server'],
    registers: [this.registry],
  });
  readonly events = new Counter({
    name: 'kube_nft_proxy_events_total',
    help: 'Kubernetes Events by type and outcome: sent, deduplicated, rate_limited (dropped), failed (the API refused or was unreachable)',
    labelNames: ['type', 'outcome'],
    registers: [this.registry],
  });
  #invalidObjectsSource: (() => { services: number; endpointSlices: number; nodes: number }) | undefined;
  /** Objects the stream boundary left out as invalid, by kind: read at scrape time from observeInvalidObjects' source. */
  readonly invalidObjects = new Gauge({
    name: 'kube_nft_proxy_invalid_objects',
    help:
      'API objects left out (or with parts left out) because the API server accepted what the proxy cannot program; ' +
      'each is logged once with its reason',
    labelNames: ['kind'],
    registers: [this.registry],
    collect: () => {
      const n = this.#invalidObjectsSource?.();
      if (!n) return;
      this.invalidObjects.set({ kind: 'Service' }, n.services);
      this.invalidObjects.set({ kind: 'EndpointSlice' }, n.endpointSlices);
      this.invalidObjects.set({ kind: 'Node' }, n.nodes);
    },
  });

  /** The streams' count of what they left out, for kube_nft_proxy_invalid_objects. */
  observeInvalidObjects(source: () => { services: number; endpointSlices: number; nodes: number }): void {
    this.#invalidObjectsSource = source;
  }

  readonly refusedServicePorts = new Gauge({
    name: 'kube_nft_proxy_refused_service_ports',
    help:
      'Service ports set aside because their rules were refused (by validation, the batch builder or the kernel): ' +
      'their last applied rules stay in force, or they are not programmed, until they change or a full ' +
      'sync runs',
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
  readonly linkMonitorRestarts = new Counter({
    name: 'kube_nft_proxy_link_monitor_restarts_total',
    help:
      'Link monitors started again after the one the flowtable devices follow failed (until a new one runs, the devices ' +
      'stay as they were)',
    registers: [this.registry],
  });
  // Conntrack cleanup (UDP/SCTP entries that no longer lead to a serving endpoint).
  readonly conntrackEntriesDeleted = new Counter({
    name: 'kube_nft_proxy_conntrack_entries_deleted_total',
    help:
      'Stale UDP/SCTP conntrack entries deleted, by kind of cleanup (changed: after a sync, for the Service ports it ' +
      'changed; full: the whole table at the full resync)',
    labelNames: ['kind'],
    registers: [this.registry],
  });
  readonly conntrackCleanupFailures = new Counter({
    name: 'kube_nft_proxy_conntrack_cleanup_failures_total',
    help: 'Conntrack cleanups that failed in part or whole (a dump or deletes refused); the rules are unaffected',
    labelNames: ['kind'],
    registers: [this.registry],
  });

  /** Service ports with a Local policy whose traffic of that kind is dropped here (kube-proxy recounts them every sync). */
  recordNoLocalEndpoints(internal: number, external: number): void {
    this.noLocalEndpoints.set({ traffic_policy: 'internal' }, internal);
    this.noLocalEndpoints.set({ traffic_policy: 'external' }, external);
  }

  recordSync(kind: SyncKind, seconds: number, nowSeconds: number): void {
    this.syncDuration.observe(seconds);
    (kind === 'full' ? this.fullSyncDuration : this.partialSyncDuration).observe(seconds);
    this.lastSyncTimestamp.set(nowSeconds);
  }

  #processMetrics = false;

  /**
   * prom-client's default metrics in this registry from now on:
   * process_resident_memory_bytes, nodejs_heap_size_used_bytes, GC and
   * event-loop figures next to kube-proxy's own (kube-proxy exports Go's
   * process_* the same way), so that the agent's memory after a large sync is
   * visible without a shell. Their modules are loaded by the first call.
   */
  collectProcessMetrics(): void {
    if (this.#processMetrics) return;
    this.#processMetrics = true;
    collectDefaultMetrics(this.registry);
  }

  /** What a scrape gets: the registry's metrics, the process metrics among them from the first scrape on. */
  exposition(): Promise<string> {
    this.collectProcessMetrics();
    return this.registry.metrics();
  }
}

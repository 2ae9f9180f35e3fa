// The running agent: wires cluster streams → change tracker → reconciler →
// dataplane, plus the flowtable's link-following, metrics and health. Every
// decision lives in the pure modules; this file only connects them and logs.

import { hostname, networkInterfaces } from 'node:os';
import { merge, type Observable, Subject, Subscription, type SchedulerLike } from '../rx.ts';
import type { AgentOptions } from './options.ts';
import { parseFeatureGates } from '../config/feature-gates.ts';
import type { NodeInfo } from '../k8s/types.ts';
import type { LinkSource } from '../links/sysfs-links.ts';
import { ServiceChangeTracker } from '../model/change-tracker.ts';
import { LocalEndpointSignals } from '../model/local-endpoints.ts';
import type { ServicePort } from '../model/service-port.ts';
import type { NativeConntrack } from '../native/conntrack-types.ts';
import type { Dataplane } from '../nft/dataplane.ts';
import { HealthState } from '../observability/health.ts';
import type { ObservabilityServer } from '../observability/http-server.ts';
import type { Logger } from '../observability/logger.ts';
import { ProxyMetrics } from '../observability/metrics.ts';
import type { RulesetConfig } from '../reconciler/config.ts';
import { type ModelRead, Reconciler, type ReconcilerOptions, type RejectedServicePort } from '../reconciler/reconciler.ts';
import { syncRunner, type SyncResult } from '../reconciler/sync-runner.ts';
import type { ConnectionOptions } from '../streams/api/api-connection.ts';
import { createClusterStreams, type ClusterStreams, type ClusterStreamsOptions } from '../streams/cluster-streams.ts';
import { decideOffload, followDevices } from './offload-setup.ts';
import { type KernelShare, kernelShare, kernelShareSince, memoryMiB, PortsInFlight, reportRefused, syncLogFields } from './sync-outcome.ts';
import { LARGE_SYNC_OPS, MemoryReleaser, type ReleaseReason, releaseMemory } from './memory-release.ts';
import { ChangeMetrics } from './change-metrics.ts';
import { ConntrackCleaner } from './conntrack-cleaner.ts';
import { assertTablesOurs, type TablesAtStart, tablesAtStart } from './table-ownership.ts';
import { countingDataplane } from './counting-dataplane.ts';
import type { EventRecorder } from './event-recorder.ts';
import type { HealthCheckServers } from './health-check-servers.ts';
import { OperatorEndpoints, type OperatorEndpointsOptions } from './operator-endpoints.ts';
import { nodePortAddressesFor, rulesetConfigFor, type LocalAddress, type OffloadState } from './ruleset-config.ts';

export { MAX_FLOWTABLE_DEVICES } from './offload-setup.ts';

export interface AgentDeps {
  logger: Logger;
  dataplane: Dataplane;
  /** Default: from options (--manifests or --kubeconfig). */
  streams?: ClusterStreams;
  /** Default: a LinkMonitor (the addon's rtnetlink monitor) on options.netns when offload is on and supported. */
  linkMonitor?: () => LinkSource;
  scheduler?: SchedulerLike;
  /** Whether to serve /metrics and /healthz (default true). */
  serveHttp?: boolean;
  /**
   * Runs after the first and every large sync, and once quiet after small ones have grown the RSS (default: a full V8 collection, then the
   * dataplane's releaseMemory).
   */
  releaseMemory?: () => void;
  /** The addon's conntrack functions: UDP/SCTP conntrack cleanup after syncs (absent: none, e.g. over the fake kernel). */
  conntrack?: Pick<NativeConntrack, 'conntrackClean'>;
  /**
   * kube-proxy's conntrack sysctls and oom_score_adj: applied once the streams are set up (kubeconfig read, connection
   * made), as kube-proxy sets them only after making its client; a start that cannot read its kubeconfig changes nothing.
   */
  applyNodeSettings?: () => Promise<void>;
  /** Called with every sync's outcome from the first on (syncs$ reaches only subscribers that exist by then). */
  onSync?: (result: SyncResult) => void;
}

export interface Agent {
  /** The node this agent programs for (--hostname-override or the host name). */
  readonly nodeName: string;
  readonly metrics: ProxyMetrics;
  readonly health: HealthState;
  readonly offload: Readonly<OffloadState> & { reason: string };
  /** Every sync's outcome, for tests and embedders. */
  readonly syncs$: Subject<SyncResult>;
  /**
   * Each Service port set aside, once per refusal, with the reason: its rules
   * failed (the transaction's checks, the batch builder or the kernel), so
   * its last applied rules stay in force, or it is not programmed, until it
   * changes or a full sync runs (see reconciler.ts). The hook for a Warning
   * Event on the Service (`namespace`/`serviceName`): the subscriber decides
   * how often to tell. Already logged at error level and counted in
   * kube_nft_proxy_refused_service_ports.
   */
  readonly refused$: Observable<RejectedServicePort>;
  readonly servers: ObservabilityServer[];
  /** Health-check node ports (undefined when not served: no HTTP, or --netns). */
  readonly healthChecks: HealthCheckServers | undefined;
  /** Kubernetes Events: recordServiceWarning(service, reason, message) for a Warning on a Service. */
  readonly events: EventRecorder;
  /** The conntrack cleanup, when deps.conntrack was given. */
  readonly conntrack: ConntrackCleaner | undefined;
  /** Stops watching and syncing; the programmed rules stay in place. */
  stop(): Promise<void>;
}

/** Once, when the first sync finds no Node object of our name: NodePorts on 'primary' addresses and topology need it. */
function warnNodeNotFound(logger: Logger, nodeName: string): void {
  logger.warn(
    { nodeName },
    "this node's Node object was not found: NodePorts on the primary addresses, NodeCIDR local detection and " +
      "topology-aware routing wait for it (set --hostname-override to the Node's name)",
  );
}

export function netnsPath(netns: string | undefined): string | undefined {
  if (netns === undefined) return undefined;
  return netns.includes('/') ? netns : `/var/run/netns/${netns}`;
}

/** The API connection's rate limit and server override (--kube-api-qps, --kube-api-burst, --master). */
export function apiConnectionOptions({ apiClient }: AgentOptions): ConnectionOptions {
  if (!apiClient) return {};
  return { qps: apiClient.qps, burst: apiClient.burst, ...(apiClient.server !== undefined ? { server: apiClient.server } : {}) };
}

function streamsOptions(options: AgentOptions, nodeName: string, logger: Logger): ClusterStreamsOptions {
  return options.manifests !== undefined
    ? { source: 'manifests', path: options.manifests, nodeName, serviceProxyName: options.serviceProxyName, logger }
    : {
        source: 'apiserver',
        kubeConfig: options.kubeconfig,
        nodeName,
        serviceProxyName: options.serviceProxyName,
        logger,
        connectionOptions: apiConnectionOptions(options),
      };
}

function localAddresses(): LocalAddress[] {
  const out: LocalAddress[] = [];
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (!a.internal) out.push({ address: a.address, family: a.family === 'IPv4' ? 'IPv4' : 'IPv6' });
  }
  return out;
}

/** The Node, its Services and EndpointSlices feed the change tracker; every event marks a change to sync. */
function followStreams(
  streams: ClusterStreams,
  subs: Subscription,
  t: { tracker: ServiceChangeTracker; changeMetrics: ChangeMetrics; onNode: (n: NodeInfo | undefined) => void; markChanged: () => void },
): void {
  subs.add(
    streams.services$.subscribe((ev) => {
      t.tracker.onService(ev, Date.now());
      t.changeMetrics.service(ev);
      t.markChanged();
    }),
  );
  subs.add(
    streams.endpointSlices$.subscribe((ev) => {
      t.tracker.onEndpointSlice(ev, Date.now());
      t.changeMetrics.endpointSlice(ev);
      t.markChanged();
    }),
  );
  subs.add(
    streams.node$.subscribe((n) => {
      t.onNode(n);
      t.markChanged();
    }),
  );
}

const RELEASE_MESSAGES: Record<ReleaseReason, string> = {
  'rendering of a large full sync': "released a large full sync's rendering before encoding it",
  'large sync': 'released memory after a large sync',
  'planning of a large sync': "released a large sync's planning while the kernel commits it",
  idle: 'released memory once idle',
};

/** Releases memory after large syncs and once idle, logging what it gained. */
function memoryReleaser(deps: AgentDeps): MemoryReleaser {
  const collect = deps.releaseMemory ?? (() => releaseMemory(deps.dataplane));
  return new MemoryReleaser({
    release: (reason) => {
      const before = memoryMiB();
      const t0 = performance.now();
      collect();
      const durationMs = performance.now() - t0;
      deps.logger.info({ durationMs: Math.round(durationMs * 10) / 10, before, after: memoryMiB() }, RELEASE_MESSAGES[reason]);
    },
    rss: () => process.memoryUsage.rss(),
  });
}

/** What a sync's outcome reaches: metrics, health, conntrack cleanup, the operator's endpoints, logs and subscribers. */
interface SyncOutcomeSinks {
  deps: AgentDeps;
  metrics: ProxyMetrics;
  health: HealthState;
  changeMetrics: ChangeMetrics;
  operator: OperatorEndpoints;
  conntrack: ConntrackCleaner | undefined;
  ports: PortsInFlight;
  /** The model as of the last drain: what the last sync programmed; `settled` once that sync is over (it need not keep its ports). */
  model: { all: () => ServicePort[]; signals: LocalEndpointSignals; settled: () => void };
  releaser: MemoryReleaser;
  refused$: Subject<RejectedServicePort>;
  syncs$: Subject<SyncResult>;
}

/** Takes one sync's outcome; `firstSync` says whether it is the first to succeed, `kernel` the kernel's share. */
function syncDone(s: SyncOutcomeSinks, result: SyncResult, firstSync: boolean, kernel: KernelShare | undefined): void {
  const { logger } = s.deps;
  const r = result.report;
  const fields = syncLogFields(result, kernel);
  // A failed sync may have set ports aside before it gave up (see reconciler.ts): told either way.
  for (const x of r?.rejected ?? []) reportRefused(x, logger, s.operator.events, (x) => s.refused$.next(x));
  if (r) s.metrics.refusedServicePorts.set(r.setAside);
  if (result.ok) {
    s.releaser.synced(r?.ops, firstSync);
    const now = Date.now();
    s.health.synced(now);
    s.metrics.recordSync(r?.kind === 'full' ? 'full' : 'partial', result.durationMs / 1000, now / 1000);
    s.changeMetrics.landed(now);
    s.operator.synced(s.model.signals);
    // After the commit, never before: new packets of a deleted entry's flow must meet the new rules.
    const changed = s.ports.landed();
    if (r?.kind === 'full') s.conntrack?.full(s.model.all());
    else s.conntrack?.changed(changed);
    for (const p of r?.problems ?? []) logger.warn({ problem: p }, 'service port left out of the ruleset');
    logger.info({ ...fields, ...(r?.setAside ? { servicePortsSetAside: r.setAside } : {}) }, 'synced nftables rules');
  } else {
    // In flight triggers stay: the retry carries the same changes; so do the ports to clean.
    s.ports.failed();
    s.metrics.syncFailures.inc();
    // kube-proxy deletes stale chains in a transaction of their own; ours ride in the sync that failed.
    if ((r?.stats.chainsDeleted ?? 0) > 0) s.metrics.cleanupFailures.inc();
    logger.error({ ...fields, consecutiveFailures: result.consecutiveFailures, err: result.error }, 'nftables sync failed; will retry');
  }
  s.model.settled();
  s.deps.onSync?.(result);
  s.syncs$.next(result);
  // Once the first sync has an outcome, not at start, where loading them would
  // delay the first rules by their modules' time (a scrape before then loads them itself).
  s.metrics.collectProcessMetrics();
}

/** UDP/SCTP conntrack cleanup after syncs, when the addon's conntrack functions are given. */
function conntrackCleaner(options: AgentOptions, deps: AgentDeps, metrics: ProxyMetrics): ConntrackCleaner | undefined {
  if (!deps.conntrack) return undefined;
  return new ConntrackCleaner({
    native: deps.conntrack,
    logger: deps.logger,
    metrics,
    ...(options.netns !== undefined ? { netns: netnsPath(options.netns) } : {}),
  });
}

/** Serves /healthz, /metrics and the health-check node ports (as asked) and posts the start-up Event. */
async function startOperator(
  options: AgentOptions,
  deps: AgentDeps,
  a: { metrics: ProxyMetrics; health: HealthState; nodeName: string; streams: ClusterStreams },
  nodePortAddresses: OperatorEndpointsOptions['nodePortAddresses'],
): Promise<OperatorEndpoints> {
  const { logger } = deps;
  const { metrics, health, nodeName, streams } = a;
  const serveHttp = deps.serveHttp ?? true;
  if (serveHttp && options.netns !== undefined) {
    logger.info(
      { netns: options.netns },
      'health-check node ports are not served: this process is not in the network namespace it programs',
    );
  }
  const operator = await OperatorEndpoints.start({
    logger,
    metrics,
    health,
    nodeName,
    connection: streams.connection,
    ...(serveHttp ? { bind: { healthz: options.healthzBindAddress, metrics: options.metricsBindAddress } } : {}),
    serveHealthCheckPorts: serveHttp && options.netns === undefined,
    nodePortAddresses,
  });
  // kube-proxy's start-up event on its Node.
  operator.events.recordStartup(nodeName);
  return operator;
}

/** The reconciler over the counting dataplane; `servicePorts` drains the change tracker. */
function newReconciler(
  deps: AgentDeps,
  { metrics, releaser }: { metrics: ProxyMetrics; releaser: MemoryReleaser },
  config: RulesetConfig,
  tables: TablesAtStart,
  servicePorts: ReconcilerOptions['servicePorts'],
): Reconciler {
  const { logger, dataplane } = deps;
  return new Reconciler({
    dataplane: countingDataplane(dataplane, (verb, kind, n) => metrics.nftablesOperations.inc({ verb, kind }, n)),
    config,
    adopt: tables.adopt,
    tablesAbsent: tables.absent,
    now: () => (deps.scheduler ?? { now: Date.now }).now(),
    servicePorts,
    // Between "programming the initial ruleset" and "synced", a large sync spends seconds in the model
    // and the planner and then seconds in the kernel: say which, so that a slow first sync is not silent.
    onPlanned: (p) => {
      // The same size from which memory is released afterwards: a ~1k-service cluster's cold sync.
      if (p.ops < LARGE_SYNC_OPS) return;
      logger.info(
        { kind: p.kind, servicePorts: p.servicePorts, ops: p.ops, planMs: Math.round(p.planMs) },
        'ruleset planned; committing it to the kernel',
      );
      releaser.planned(p.kind, p.ops, p.adoption);
    },
    onReleased: (ops, adoption) => releaser.released(ops, adoption),
  });
}

/** Runs the syncs (on changes, at most every min sync period, and fully every sync period) and hands each outcome to syncDone. */
function runSyncs(
  options: AgentOptions,
  deps: AgentDeps,
  a: { streams: ClusterStreams; reconciler: Reconciler; changes$: Subject<void>; nodeMissing: () => boolean; nodeName: string },
  sinks: SyncOutcomeSinks,
): Subscription {
  const { logger, dataplane } = deps;
  const { streams, reconciler } = a;
  let firstSync = true;
  /** The kernel's share when the running sync started (syncs never overlap). */
  let kernelAtStart: KernelShare | undefined;
  return syncRunner({
    changes$: merge(a.changes$),
    synced$: streams.synced$,
    sync: (request) => {
      if (firstSync) {
        logger.info(
          { services: streams.services.size, endpointSlices: streams.endpointSlices.size },
          'cluster state synced; programming the initial ruleset',
        );
        if (a.nodeMissing()) warnNodeNotFound(logger, a.nodeName);
      }
      kernelAtStart = kernelShare(dataplane);
      return reconciler.sync(request);
    },
    minSyncPeriodMs: options.minSyncPeriodMs,
    syncPeriodMs: options.fullSyncPeriodMs,
    scheduler: deps.scheduler,
  }).subscribe((result) => {
    syncDone(sinks, result, firstSync, kernelShareSince(dataplane, kernelAtStart));
    if (result.ok) firstSync = false;
  });
}

/** What the reconciler reads of the tracker after a drain: `every` port is walked only by a full render, an incremental one reads by id. */
function modelRead(tracker: ServiceChangeTracker, every: Iterable<ServicePort>, changed: ReadonlySet<string>): ModelRead {
  return { ports: every, port: (id) => tracker.servicePort(id), services: tracker.serviceCount, changed, again: (sp) => tracker.again(sp) };
}

export async function startAgent(options: AgentOptions, deps: AgentDeps): Promise<Agent> {
  const { logger, dataplane } = deps;
  const gates = parseFeatureGates(options.featureGates);
  const nodeName = options.hostnameOverride ?? hostname();
  const metrics = new ProxyMetrics();
  // kube-proxy's health timeout is 2 × its sync period (--sync-period, 30 s by
  // default): a change not programmed within a minute means the dataplane is stuck.
  const health = new HealthState(2 * options.syncPeriodMs);
  const subs = new Subscription();
  const syncs$ = new Subject<SyncResult>();
  const startedAt = Date.now();
  const refused$ = new Subject<RejectedServicePort>();

  logger.info({ nodeName, table: options.table, featureGates: gates, netns: options.netns }, 'starting kube-nft-proxy');
  // Before anything is programmed: a table of our name that is not ours is never replaced (ForeignTableError).
  const tables = tablesAtStart(await assertTablesOurs(dataplane, options.table));
  const offload = await decideOffload(options, gates, dataplane, logger);
  metrics.offloadEnabled.set(offload.wanted && offload.supported ? 1 : 0);

  const streams = deps.streams ?? (await createClusterStreams(streamsOptions(options, nodeName, logger)));
  await deps.applyNodeSettings?.();
  metrics.observeInvalidObjects(() => streams.invalidObjects());
  const tracker = new ServiceChangeTracker({ nodeName, featureGates: gates });
  let node: NodeInfo | undefined;
  const local = options.netns === undefined ? localAddresses() : [];
  const configNow = () => rulesetConfigFor(options, node, offload, local);

  const operator = await startOperator(options, deps, { metrics, health, nodeName, streams }, (family) =>
    nodePortAddressesFor(family, options.nodePortAddresses, node, local),
  );

  const changeMetrics = new ChangeMetrics(metrics, startedAt);
  const ports = new PortsInFlight();
  const signals = new LocalEndpointSignals();
  const everyPort: Iterable<ServicePort> = { [Symbol.iterator]: () => tracker.servicePorts() };
  const conntrack = conntrackCleaner(options, deps, metrics);
  const releaser = memoryReleaser(deps);
  const reconciler = newReconciler(deps, { metrics, releaser }, configNow(), tables, () => {
    const drained = tracker.drain();
    for (const w of drained.warnings) logger.warn({ warning: w }, 'service model warning');
    changeMetrics.drained();
    ports.drained(drained.changes);
    signals.apply(drained.changes);
    return modelRead(tracker, everyPort, drained.changed);
  });
  // While the cluster's state is listed (adoption only).
  reconciler.readBack();

  const changes$ = new Subject<void>();
  const markChanged = () => {
    health.queued(Date.now());
    metrics.lastQueuedTimestamp.set(Date.now() / 1000);
    changes$.next();
  };
  const onNode = (n: NodeInfo | undefined) => {
    node = n;
    health.node(n);
    tracker.onNode(n, Date.now());
    reconciler.setConfig(configNow());
  };
  followStreams(streams, subs, { tracker, changeMetrics, onNode, markChanged });
  const following = { options, offload, metrics, subs, netnsPath: netnsPath(options.netns) };
  const monitor = followDevices(following, deps, (departed) => {
    reconciler.setConfig(configNow(), departed);
    markChanged();
  });

  const model = { all: () => [...everyPort], signals, settled: () => tracker.settled() };
  const sinks: SyncOutcomeSinks = { deps, metrics, health, changeMetrics, operator, conntrack, ports, model, releaser, refused$, syncs$ };
  subs.add(runSyncs(options, deps, { streams, reconciler, changes$, nodeMissing: () => node === undefined, nodeName }, sinks));

  const servers = operator.servers;
  if (servers.length > 0) {
    logger.info(operator.listening, 'serving /healthz and /metrics');
  }

  return {
    nodeName,
    metrics,
    health,
    offload,
    syncs$,
    refused$: refused$.asObservable(),
    servers,
    healthChecks: operator.healthChecks,
    events: operator.events,
    conntrack,
    async stop() {
      subs.unsubscribe();
      releaser.stop();
      monitor?.stop();
      syncs$.complete();
      refused$.complete();
      await operator.close();
      await conntrack?.idle();
      if (!deps.streams) await streams.stop();
      logger.info('stopped; the programmed rules stay in place');
    },
  };
}

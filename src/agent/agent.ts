// The running agent: wires cluster streams → change tracker → reconciler →
// dataplane, plus the flowtable's link-following, metrics and health. Every
// decision lives in the pure modules; this file only connects them and logs.

import { hostname, networkInterfaces } from 'node:os';
import { collectDefaultMetrics } from 'prom-client';
import { merge, type Observable, Subject, Subscription, type SchedulerLike } from 'rxjs';
import type { AgentOptions } from './options.ts';
import { parseFeatureGates, type FeatureGates } from '../config/feature-gates.ts';
import type { NodeInfo } from '../k8s/types.ts';
import type { FlowtableDeviceFilter } from '../links/flowtable-devices.ts';
import { LinkMonitor } from '../links/link-monitor.ts';
import type { LinkSource } from '../links/sysfs-links.ts';
import { ServiceChangeTracker } from '../model/change-tracker.ts';
import type { ServicePort } from '../model/service-port.ts';
import type { NativeConntrack } from '../native/conntrack-types.ts';
import { probeFlowtables } from '../nft/capabilities.ts';
import type { Dataplane } from '../nft/dataplane.ts';
import { HealthState } from '../observability/health.ts';
import type { ObservabilityServer } from '../observability/http-server.ts';
import type { Logger } from '../observability/logger.ts';
import { ProxyMetrics } from '../observability/metrics.ts';
import { TABLE_FORMAT_VERSION } from '../reconciler/ownership.ts';
import { Reconciler, type RejectedServicePort } from '../reconciler/reconciler.ts';
import { syncRunner, type SyncResult } from '../reconciler/sync-runner.ts';
import { createClusterStreams, type ClusterStreams, type ClusterStreamsOptions } from '../streams/cluster-streams.ts';
import { DEFAULT_DEVICE_MAX_WAIT_MS, DEFAULT_DEVICE_SETTLE_MS, followFlowtableDevices } from './flowtable-device-follower.ts';
import { LARGE_SYNC_OPS, MemoryReleaser, releaseMemory } from './memory-release.ts';
import { ChangeMetrics } from './change-metrics.ts';
import { ConntrackCleaner } from './conntrack-cleaner.ts';
import { assertTablesOurs } from './table-ownership.ts';
import { countingDataplane } from './counting-dataplane.ts';
import type { EventRecorder } from './event-recorder.ts';
import type { HealthCheckServers } from './health-check-servers.ts';
import { OperatorEndpoints } from './operator-endpoints.ts';
import { nodePortAddressesFor, rulesetConfigFor, type LocalAddress, type OffloadState } from './ruleset-config.ts';

/**
 * Kernels before the 2023 netfilter change that lifted the cap refuse a
 * flowtable with 256 or more devices (EFBIG), failing the whole batch.
 */
export const MAX_FLOWTABLE_DEVICES = 255;

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

function memoryMiB(): Record<string, number> {
  const m = process.memoryUsage();
  const mib = (b: number) => Math.round(b / 2 ** 20);
  return {
    rss: mib(m.rss),
    heapUsed: mib(m.heapUsed),
    heapTotal: mib(m.heapTotal),
    external: mib(m.external),
    arrayBuffers: mib(m.arrayBuffers),
  };
}

/** Once, when the first sync finds no Node object of our name: NodePorts on 'primary' addresses and topology need it. */
export function warnNodeNotFound(logger: Logger, nodeName: string): void {
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

export function streamsOptions(options: AgentOptions, nodeName: string, logger: Logger): ClusterStreamsOptions {
  return options.manifests !== undefined
    ? { source: 'manifests', path: options.manifests, nodeName, serviceProxyName: options.serviceProxyName, logger }
    : {
        source: 'apiserver',
        kubeConfig: options.kubeconfig,
        nodeName,
        serviceProxyName: options.serviceProxyName,
        logger,
        ...(options.apiClient
          ? {
              connectionOptions: {
                qps: options.apiClient.qps,
                burst: options.apiClient.burst,
                ...(options.apiClient.server !== undefined ? { server: options.apiClient.server } : {}),
              },
            }
          : {}),
      };
}

function localAddresses(): LocalAddress[] {
  const out: LocalAddress[] = [];
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (!a.internal) out.push({ address: a.address, family: a.family === 'IPv4' ? 'IPv4' : 'IPv6' });
  }
  return out;
}

function interfaceFilter(options: AgentOptions): FlowtableDeviceFilter {
  const asMatcher = (names: string[]) => (names.length === 1 && /^\/.*\/$/.test(names[0]!) ? new RegExp(names[0]!.slice(1, -1)) : names);
  return {
    ...(options.offloadInterfaces.length > 0 ? { include: asMatcher(options.offloadInterfaces) } : {}),
    ...(options.offloadExcludeInterfaces.length > 0 ? { exclude: asMatcher(options.offloadExcludeInterfaces) } : {}),
  };
}

/** KEP-4963: decide whether to offload and tell the operator clearly when the kernel cannot. */
async function decideOffload(
  options: AgentOptions,
  gates: FeatureGates,
  dataplane: Dataplane,
  logger: Logger,
): Promise<OffloadState & { reason: string }> {
  if (!gates.KubeProxyAcceleration)
    return { wanted: false, supported: false, devices: [], reason: 'feature gate KubeProxyAcceleration is off' };
  if (options.offloadPacketThreshold === 0)
    return { wanted: false, supported: false, devices: [], reason: '--offload-packet-threshold is 0' };
  const answer = await probeFlowtables(dataplane);
  if (answer.status !== 'supported') {
    logger.warn(
      { capability: 'flowtable', status: answer.status, reason: answer.reason },
      'flowtable acceleration (KEP-4963) is OFF: this kernel has no nftables flowtables (needs CONFIG_NF_FLOW_TABLE, ' +
        'nf_flow_table_inet and nft_flow_offload); Service traffic is proxied without offload',
    );
    return { wanted: true, supported: false, devices: [], reason: answer.reason };
  }
  logger.info(
    { capability: 'flowtable', status: answer.status, reason: answer.reason, offloadPacketThreshold: options.offloadPacketThreshold },
    'flowtable acceleration (KEP-4963) is on: Service connections are offloaded after the packet threshold',
  );
  return { wanted: true, supported: true, devices: [], reason: answer.reason };
}

export async function startAgent(options: AgentOptions, deps: AgentDeps): Promise<Agent> {
  const { logger, dataplane } = deps;
  const gates = parseFeatureGates(options.featureGates);
  const nodeName = options.hostnameOverride ?? hostname();
  const metrics = new ProxyMetrics();
  // process_resident_memory_bytes, nodejs_heap_size_used_bytes, GC and event-loop
  // figures next to kube-proxy's own (kube-proxy exports Go's process_* the same
  // way): the agent's memory after a large sync is visible without a shell.
  collectDefaultMetrics({ register: metrics.registry });
  // kube-proxy's health timeout is 2 × its sync period (--sync-period, 30 s by
  // default): a change not programmed within a minute means the dataplane is stuck.
  const health = new HealthState(2 * options.syncPeriodMs);
  const subs = new Subscription();
  const syncs$ = new Subject<SyncResult>();
  const startedAt = Date.now();
  const refused$ = new Subject<RejectedServicePort>();

  logger.info({ nodeName, table: options.table, featureGates: gates, netns: options.netns }, 'starting kube-nft-proxy');
  // Before anything is programmed: a table of our name that is not ours is never replaced (ForeignTableError).
  const owners = await assertTablesOurs(dataplane, options.table);
  const adoptable = [...owners.values()].some((o) => o.kind === 'ours' && o.version === TABLE_FORMAT_VERSION);
  const offload = await decideOffload(options, gates, dataplane, logger);
  metrics.offloadEnabled.set(offload.wanted && offload.supported ? 1 : 0);

  const streams = deps.streams ?? (await createClusterStreams(streamsOptions(options, nodeName, logger)));
  metrics.observeInvalidObjects(() => streams.invalidObjects());
  const tracker = new ServiceChangeTracker({ nodeName, featureGates: gates });
  let node: NodeInfo | undefined;
  const local = options.netns === undefined ? localAddresses() : [];
  const configNow = () => rulesetConfigFor(options, node, offload, local);

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
    nodePortAddresses: (family) => nodePortAddressesFor(family, options.nodePortAddresses, node, local),
  });
  // kube-proxy's start-up event on its Node.
  operator.events.recordStartup(nodeName);

  const changeMetrics = new ChangeMetrics(metrics, startedAt);
  let lastPorts: ServicePort[] = [];
  // Ports changed since the last successful sync, by id (undefined: removed): their conntrack cleanup follows that sync.
  let pendingPorts = new Map<string, ServicePort | undefined>();
  let inFlightPorts = new Map<string, ServicePort | undefined>();
  const conntrack = deps.conntrack
    ? new ConntrackCleaner({
        native: deps.conntrack,
        logger,
        metrics,
        ...(options.netns !== undefined ? { netns: netnsPath(options.netns) } : {}),
      })
    : undefined;
  const reconciler = new Reconciler({
    dataplane: countingDataplane(dataplane, (verb, kind, n) => metrics.nftablesOperations.inc({ verb, kind }, n)),
    config: configNow(),
    adopt: adoptable,
    now: () => (deps.scheduler ?? { now: Date.now }).now(),
    servicePorts: () => {
      const drained = tracker.drain();
      for (const w of drained.warnings) logger.warn({ warning: w }, 'service model warning');
      changeMetrics.drained();
      for (const c of drained.changes) pendingPorts.set(c.id, c.kind === 'removed' ? undefined : c.current);
      inFlightPorts = pendingPorts;
      pendingPorts = new Map();
      lastPorts = [...tracker.servicePorts()];
      return { ports: lastPorts, changed: drained.changed };
    },
    // Between "programming the initial ruleset" and "synced", a large sync spends
    // seconds in the model and the planner and then seconds in the kernel: say
    // which, so that a slow first sync on a big cluster is not a silent one.
    onPlanned: (p) => {
      // The same size from which memory is released afterwards: a ~1k-service cluster's cold sync.
      if (p.ops < LARGE_SYNC_OPS) return;
      logger.info(
        { kind: p.kind, servicePorts: p.servicePorts, ops: p.ops, planMs: Math.round(p.planMs) },
        'ruleset planned; committing it to the kernel',
      );
    },
  });

  const changes$ = new Subject<void>();
  const markChanged = () => {
    health.queued(Date.now());
    metrics.lastQueuedTimestamp.set(Date.now() / 1000);
    changes$.next();
  };
  subs.add(
    streams.services$.subscribe((ev) => {
      tracker.onService(ev, Date.now());
      changeMetrics.service(ev);
      markChanged();
    }),
  );
  subs.add(
    streams.endpointSlices$.subscribe((ev) => {
      tracker.onEndpointSlice(ev, Date.now());
      changeMetrics.endpointSlice(ev);
      markChanged();
    }),
  );
  subs.add(
    streams.node$.subscribe((n) => {
      node = n;
      health.node(n);
      tracker.onNode(n, Date.now());
      reconciler.setConfig(configNow());
      markChanged();
    }),
  );

  let monitor: LinkSource | undefined;
  if (offload.wanted && offload.supported) {
    monitor = deps.linkMonitor ? deps.linkMonitor() : new LinkMonitor({ netns: netnsPath(options.netns) });
    const follower = followFlowtableDevices(monitor.links$, {
      filter: interfaceFilter(options),
      maxDevices: MAX_FLOWTABLE_DEVICES,
      settleMs: DEFAULT_DEVICE_SETTLE_MS,
      maxWaitMs: DEFAULT_DEVICE_MAX_WAIT_MS,
      scheduler: deps.scheduler,
    });
    subs.add(
      follower.subscribe({
        next: ({ devices, matched }) => {
          if (matched > MAX_FLOWTABLE_DEVICES) {
            logger.warn(
              { interfaces: matched, limit: MAX_FLOWTABLE_DEVICES },
              'more interfaces than a flowtable takes on older kernels (EFBIG at 256); offloading through the first ones ' +
                'only (narrow the set with --offload-interfaces)',
            );
          }
          logger.info({ devices }, 'flowtable devices follow the node interfaces');
          offload.devices = devices;
          metrics.offloadDevices.set(devices.length);
          reconciler.setConfig(configNow());
          markChanged();
        },
        // The devices stay as last decided: they no longer follow the node's interfaces.
        error: (err: unknown) => logger.error({ err }, 'link monitor failed: flowtable devices no longer follow the node interfaces'),
      }),
    );
    monitor.start();
  }

  const collect = deps.releaseMemory ?? (() => releaseMemory(dataplane));
  const releaser = new MemoryReleaser({
    release: (reason) => {
      const before = memoryMiB();
      const t0 = performance.now();
      collect();
      const durationMs = performance.now() - t0;
      logger.info(
        { durationMs: Math.round(durationMs * 10) / 10, before, after: memoryMiB() },
        reason === 'idle' ? 'released memory once idle' : 'released memory after a large sync',
      );
    },
    rss: () => process.memoryUsage.rss(),
  });

  let firstSync = true;
  /** dataplane.kernelMs when the running sync started (syncs never overlap). */
  let kernelMsAtStart: number | undefined;
  subs.add(
    syncRunner({
      changes$: merge(changes$),
      synced$: streams.synced$,
      sync: (request) => {
        if (firstSync) {
          logger.info(
            { services: streams.services.size, endpointSlices: streams.endpointSlices.size },
            'cluster state synced; programming the initial ruleset',
          );
          if (node === undefined) warnNodeNotFound(logger, nodeName);
        }
        kernelMsAtStart = dataplane.kernelMs;
        return reconciler.sync(request);
      },
      minSyncPeriodMs: options.minSyncPeriodMs,
      syncPeriodMs: options.fullSyncPeriodMs,
      scheduler: deps.scheduler,
    }).subscribe((result) => {
      const r = result.report;
      const fields = {
        reason: result.reason,
        kind: r?.kind ?? result.request.kind,
        ...(r?.mode ? { mode: r.mode } : {}),
        ...(r?.adoptionRefused ? { adoptionRefused: r.adoptionRefused } : {}),
        ops: r?.ops,
        servicePorts: r?.servicePorts,
        endpointChains: r?.endpointChains,
        staleChains: r?.staleChains,
        durationMs: Math.round(result.durationMs * 10) / 10,
        // The kernel's share of it (its commits' send → last answer): what no user space can go below.
        ...(kernelMsAtStart !== undefined && dataplane.kernelMs !== undefined
          ? { kernelMs: Math.round((dataplane.kernelMs - kernelMsAtStart) * 10) / 10 }
          : {}),
        // Full syncs build the whole ruleset at once: where memory stands after one (MiB) shows what it cost.
        ...(r?.kind === 'full' ? { memoryMiB: memoryMiB() } : {}),
      };
      // A failed sync may have set ports aside before it gave up (see reconciler.ts): told either way.
      for (const x of r?.rejected ?? []) {
        logger.error(
          {
            service: `${x.namespace}/${x.serviceName}`,
            servicePort: x.servicePortId,
            stage: x.stage,
            code: x.code,
            reason: x.message,
            keptLastApplied: x.keptLastApplied,
          },
          x.keptLastApplied
            ? 'service port set aside: its rules were refused; its previous rules stay until it changes'
            : 'service port set aside: its rules were refused; it is not programmed until it changes',
        );
        refused$.next(x);
        operator.events.recordServiceWarning(
          { namespace: x.namespace, name: x.serviceName },
          'FailedToProgramServiceRules',
          `rules of ${x.servicePortId} refused (${x.stage}): ${x.code} ${x.message}`,
        );
      }
      if (r) metrics.refusedServicePorts.set(r.setAside);
      if (result.ok) {
        releaser.synced(r?.ops, firstSync);
        firstSync = false;
        const now = Date.now();
        health.synced(now);
        metrics.recordSync(r?.kind === 'full' ? 'full' : 'partial', result.durationMs / 1000, now / 1000);
        changeMetrics.landed(now);
        operator.synced(lastPorts);
        // After the commit, never before: new packets of a deleted entry's flow must meet the new rules.
        if (r?.kind === 'full') conntrack?.full(lastPorts);
        else conntrack?.changed([...inFlightPorts.values()].filter((sp) => sp !== undefined));
        inFlightPorts = new Map();
        for (const p of r?.problems ?? []) logger.warn({ problem: p }, 'service port left out of the ruleset');
        logger.info({ ...fields, ...(r?.setAside ? { servicePortsSetAside: r.setAside } : {}) }, 'synced nftables rules');
      } else {
        // In flight triggers stay: the retry carries the same changes; so do the ports to clean.
        for (const [id, sp] of pendingPorts) inFlightPorts.set(id, sp);
        pendingPorts = inFlightPorts;
        inFlightPorts = new Map();
        metrics.syncFailures.inc();
        // kube-proxy deletes stale chains in a transaction of their own; ours ride in the sync that failed.
        if ((r?.stats.chainsDeleted ?? 0) > 0) metrics.cleanupFailures.inc();
        logger.error({ ...fields, consecutiveFailures: result.consecutiveFailures, err: result.error }, 'nftables sync failed; will retry');
      }
      deps.onSync?.(result);
      syncs$.next(result);
    }),
  );

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

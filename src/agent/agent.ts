// The running agent: wires cluster streams → change tracker → reconciler →
// dataplane, plus the flowtable's link-following, metrics and health. Every
// decision lives in the pure modules; this file only connects them and logs.

import { hostname, networkInterfaces } from 'node:os';
import { collectDefaultMetrics } from 'prom-client';
import { merge, Subject, Subscription, type SchedulerLike } from 'rxjs';
import type { AgentOptions } from './options.ts';
import { parseFeatureGates, type FeatureGates } from '../config/feature-gates.ts';
import type { NodeInfo } from '../k8s/types.ts';
import type { FlowtableDeviceFilter } from '../links/flowtable-devices.ts';
import { LinkMonitor } from '../links/link-monitor.ts';
import type { LinkSource } from '../links/sysfs-links.ts';
import { ServiceChangeTracker } from '../model/change-tracker.ts';
import { probeFlowtables } from '../nft/capabilities.ts';
import type { Dataplane } from '../nft/dataplane.ts';
import { HealthState } from '../observability/health.ts';
import { startObservabilityServer, type ObservabilityServer } from '../observability/http-server.ts';
import type { Logger } from '../observability/logger.ts';
import { ProxyMetrics } from '../observability/metrics.ts';
import { Reconciler } from '../reconciler/reconciler.ts';
import { syncRunner, type SyncResult } from '../reconciler/sync-runner.ts';
import { createClusterStreams, type ClusterStreams, type ClusterStreamsOptions } from '../streams/cluster-streams.ts';
import { DEFAULT_DEVICE_MAX_WAIT_MS, DEFAULT_DEVICE_SETTLE_MS, followFlowtableDevices } from './flowtable-device-follower.ts';
import { LARGE_SYNC_OPS, MemoryReleaser, releaseMemory } from './memory-release.ts';
import { rulesetConfigFor, type LocalAddress, type OffloadState } from './ruleset-config.ts';

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
  /** Runs after the first and every large sync, and once quiet after small ones have grown the RSS (default: a full V8 collection, then the dataplane's releaseMemory). */
  releaseMemory?: () => void;
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
  readonly servers: ObservabilityServer[];
  /** Stops watching and syncing; the programmed rules stay in place. */
  stop(): Promise<void>;
}

function memoryMiB(): Record<string, number> {
  const m = process.memoryUsage();
  const mib = (b: number) => Math.round(b / 2 ** 20);
  return { rss: mib(m.rss), heapUsed: mib(m.heapUsed), heapTotal: mib(m.heapTotal), external: mib(m.external), arrayBuffers: mib(m.arrayBuffers) };
}

export function netnsPath(netns: string | undefined): string | undefined {
  if (netns === undefined) return undefined;
  return netns.includes('/') ? netns : `/var/run/netns/${netns}`;
}

export function streamsOptions(options: AgentOptions, nodeName: string, logger: Logger): ClusterStreamsOptions {
  return options.manifests !== undefined
    ? { source: 'manifests', path: options.manifests, nodeName, serviceProxyName: options.serviceProxyName, logger }
    : { source: 'apiserver', kubeConfig: options.kubeconfig, nodeName, serviceProxyName: options.serviceProxyName, logger };
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
async function decideOffload(options: AgentOptions, gates: FeatureGates, dataplane: Dataplane, logger: Logger): Promise<OffloadState & { reason: string }> {
  if (!gates.KubeProxyAcceleration) return { wanted: false, supported: false, devices: [], reason: 'feature gate KubeProxyAcceleration is off' };
  if (options.offloadPacketThreshold === 0) return { wanted: false, supported: false, devices: [], reason: '--offload-packet-threshold is 0' };
  const answer = await probeFlowtables(dataplane);
  if (answer.status !== 'supported') {
    logger.warn(
      { capability: 'flowtable', status: answer.status, reason: answer.reason },
      'flowtable acceleration (KEP-4963) is OFF: this kernel has no nftables flowtables (needs CONFIG_NF_FLOW_TABLE, nf_flow_table_inet and nft_flow_offload); Service traffic is proxied without offload',
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
  // kube-proxy's health timeout is 2 × its 30 s sync period: a change not
  // programmed within a minute means the dataplane is stuck.
  const health = new HealthState(Math.max(60_000, 2 * options.minSyncPeriodMs));
  const subs = new Subscription();
  const syncs$ = new Subject<SyncResult>();
  const servers: ObservabilityServer[] = [];

  logger.info({ nodeName, table: options.table, featureGates: gates, netns: options.netns }, 'starting kube-nft-proxy');
  const offload = await decideOffload(options, gates, dataplane, logger);
  metrics.offloadEnabled.set(offload.wanted && offload.supported ? 1 : 0);

  const streams = deps.streams ?? (await createClusterStreams(streamsOptions(options, nodeName, logger)));
  const tracker = new ServiceChangeTracker({ nodeName, featureGates: gates });
  let node: NodeInfo | undefined;
  const local = options.netns === undefined ? localAddresses() : [];
  const configNow = () => rulesetConfigFor(options, node, offload, local);

  /** Trigger times handed to the reconciler, observed once their sync lands. */
  let pendingTriggers: number[] = [];
  let inFlightTriggers: number[] = [];
  const reconciler = new Reconciler({
    dataplane,
    config: configNow(),
    now: () => (deps.scheduler ?? { now: Date.now }).now(),
    servicePorts: () => {
      const drained = tracker.drain();
      for (const w of drained.warnings) logger.warn({ warning: w }, 'service model warning');
      for (const c of drained.changes) pendingTriggers.push(c.triggeredAt);
      inFlightTriggers = pendingTriggers;
      pendingTriggers = [];
      return [...tracker.servicePorts()];
    },
    // Between "programming the initial ruleset" and "synced", a large sync spends
    // seconds in the model and the planner and then seconds in the kernel: say
    // which, so that a slow first sync on a big cluster is not a silent one.
    onPlanned: (p) => {
      // The same size from which memory is released afterwards: a ~1k-service cluster's cold sync.
      if (p.ops < LARGE_SYNC_OPS) return;
      logger.info({ kind: p.kind, servicePorts: p.servicePorts, ops: p.ops, planMs: Math.round(p.planMs) }, 'ruleset planned; committing it to the kernel');
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
      metrics.serviceChanges.inc();
      markChanged();
    }),
  );
  subs.add(
    streams.endpointSlices$.subscribe((ev) => {
      tracker.onEndpointSlice(ev, Date.now());
      metrics.endpointChanges.inc();
      markChanged();
    }),
  );
  subs.add(
    streams.node$.subscribe((n) => {
      node = n;
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
              'more interfaces than a flowtable takes on older kernels (EFBIG at 256); offloading through the first ones only (narrow the set with --offload-interfaces)',
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
      logger.info({ durationMs: Math.round(durationMs * 10) / 10, before, after: memoryMiB() }, reason === 'idle' ? 'released memory once idle' : 'released memory after a large sync');
    },
    rss: () => process.memoryUsage.rss(),
  });

  let firstSync = true;
  subs.add(
    syncRunner({
      changes$: merge(changes$),
      synced$: streams.synced$,
      sync: (request) => {
        if (firstSync) logger.info({ services: streams.services.size, endpointSlices: streams.endpointSlices.size }, 'cluster state synced; programming the initial ruleset');
        return reconciler.sync(request);
      },
      minSyncPeriodMs: options.minSyncPeriodMs,
      syncPeriodMs: options.syncPeriodMs,
      scheduler: deps.scheduler,
    }).subscribe((result) => {
      const r = result.report;
      const fields = {
        reason: result.reason,
        kind: r?.kind ?? result.request.kind,
        ops: r?.ops,
        servicePorts: r?.servicePorts,
        endpointChains: r?.endpointChains,
        staleChains: r?.staleChains,
        durationMs: Math.round(result.durationMs * 10) / 10,
        // Full syncs build the whole ruleset at once: where memory stands after one (MiB) shows what it cost.
        ...(r?.kind === 'full' ? { memoryMiB: memoryMiB() } : {}),
      };
      if (result.ok) {
        releaser.synced(r?.ops, firstSync);
        firstSync = false;
        const now = Date.now();
        health.synced(now);
        metrics.recordSync(r?.kind === 'full' ? 'full' : 'partial', result.durationMs / 1000, now / 1000);
        for (const t of inFlightTriggers) metrics.networkProgrammingDuration.observe(Math.max(0, now - t) / 1000);
        inFlightTriggers = [];
        for (const p of r?.problems ?? []) logger.warn({ problem: p }, 'service port left out of the ruleset');
        for (const x of r?.rejected ?? []) {
          logger.error(
            { servicePort: x.servicePortId, errno: x.code, kernelMessage: x.message, keptLastApplied: x.keptLastApplied },
            x.keptLastApplied
              ? 'the kernel refused the rules of this service port; its previous rules stay until it changes'
              : 'the kernel refused the rules of this service port; it is not programmed until it changes',
          );
        }
        logger.info({ ...fields, ...(r?.setAside ? { servicePortsSetAside: r.setAside } : {}) }, 'synced nftables rules');
      } else {
        pendingTriggers = inFlightTriggers.concat(pendingTriggers);
        inFlightTriggers = [];
        metrics.syncFailures.inc();
        logger.error({ ...fields, consecutiveFailures: result.consecutiveFailures, err: result.error }, 'nftables sync failed; will retry');
      }
      deps.onSync?.(result);
      syncs$.next(result);
    }),
  );

  if (deps.serveHttp ?? true) {
    servers.push(await startObservabilityServer(options.healthzBindAddress, { health }));
    servers.push(await startObservabilityServer(options.metricsBindAddress, { metrics }));
    // With port 0 (tests, several agents on one host) the log is the only place the real port shows.
    const [healthz, metricsAddr] = servers.map((s) => (s.address.family === 'IPv6' ? `[${s.address.address}]:${s.address.port}` : `${s.address.address}:${s.address.port}`));
    logger.info({ healthz, metrics: metricsAddr }, 'serving /healthz and /metrics');
  }

  return {
    nodeName,
    metrics,
    health,
    offload,
    syncs$,
    servers,
    async stop() {
      subs.unsubscribe();
      releaser.stop();
      monitor?.stop();
      syncs$.complete();
      await Promise.all(servers.map((s) => s.close()));
      if (!deps.streams) await streams.stop();
      logger.info('stopped; the programmed rules stay in place');
    },
  };
}

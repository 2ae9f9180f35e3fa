// Runs inside the flowtable VM: the REAL agent (node src/cli.ts, cluster state
// from YAML manifests) programs the router namespace of client → router →
// server, with a ClusterIP Service (198.51.100.10) whose endpoint is the server.
//
// Phase "on" (--offload-packet-threshold 20): the start-up probe, the flowtable
// with the router's devices, a long transfer THROUGH THE CLUSTER IP offloaded
// and a short one not, then the router's interfaces change under the agent
// while that transfer runs (a veth added, a link flapped, a rename, a delete, a
// re-creation under the old name), and the transfer's FIN.
// Phase "off": a second agent with --offload-packet-threshold 0 programs a
// second, identical router (started at once: an agent takes tens of seconds to
// start under TCG, so the two start-ups overlap): no flowtable, nothing offloaded.
//
// Prints one JSON object of observations; agent-offload.test.ts judges them.
// The nft CLI and our own list() only read.

import { appendFileSync } from 'node:fs';
import { NetlinkDataplane } from '../../../src/nft/netlink/netlink-dataplane.ts';
import { DEFAULT_TABLE_NAME } from '../../../src/reconciler/config.ts';
import { FLOWTABLE } from '../../../src/reconciler/names.ts';
import { metricValue, startAgentChild, SYNC_FAILED, SYNCED, writeManifests, type AgentChild, type LogEntry } from './agent-child.ts';
import { createRouterTopology, type RouterTopology } from './topology.ts';
import { conntrackTcp, fastPathLook, pollFor, startLongFlow, startShortFlow, startSink, type ConntrackEntry } from './traffic.ts';

const CLUSTER_IP = '198.51.100.10';
const LONG_PORT = 5201;
const SHORT_PORT = 5202;
const THRESHOLD = 20;

const t0 = Date.now();
/** Progress on the guest's console: what a timed-out VM shows of how far it got. */
function step(what: string): void {
  try {
    appendFileSync('/dev/console', `knp-scenario: ${what} at +${Date.now() - t0} ms\n`);
  } catch {
    // No console (run outside the VM): progress is only a convenience.
  }
}
const topo = createRouterTopology();
const dp = new NetlinkDataplane({ netns: topo.router.path });
const sinks = [startSink(topo.server, LONG_PORT), startSink(topo.server, SHORT_PORT)];
const manifests = writeManifests('node-a', '192.0.2.1', [
  { name: 'bulk', clusterIP: CLUSTER_IP, ports: [LONG_PORT, SHORT_PORT], endpointIP: topo.serverIp },
]);
const agentArgs = (threshold: number, router: string) => [
  `--manifests=${manifests}`,
  '--hostname-override=node-a',
  `--netns=${router}`,
  '--service-cluster-ip-range=198.51.100.0/24',
  `--offload-packet-threshold=${threshold}`,
  '--log-level=debug',
];

interface Devices {
  /** `nft list flowtable` in the ip and ip6 tables (sorted; null: no such flowtable). */
  ip: string[] | null;
  ip6: string[] | null;
  /** Our NetlinkDataplane.list() of the ip table. */
  ours: string[] | null;
}

function nftDevices(family: 'ip' | 'ip6'): string[] | null {
  const r = topo.router.tryExec('nft', ['list', 'flowtable', family, DEFAULT_TABLE_NAME, FLOWTABLE]);
  if (r.status !== 0) return null;
  const m = /devices = \{ ([^}]*) \}/.exec(r.stdout);
  return m
    ? m[1]!
        .split(',')
        .map((d) => d.trim())
        .sort()
    : [];
}

async function devices(): Promise<Devices> {
  const listing = await dp.list('ip', DEFAULT_TABLE_NAME);
  const ft = listing?.flowtables.find((f) => f.name === FLOWTABLE);
  return { ip: nftDevices('ip'), ip6: nftDevices('ip6'), ours: ft ? [...ft.devices].sort() : null };
}

const has = (d: Devices, name: string) => !!(d.ip?.includes(name) && d.ip6?.includes(name) && d.ours?.includes(name));
const lacks = (d: Devices, name: string) => !d.ip?.includes(name) && !d.ip6?.includes(name) && !d.ours?.includes(name);

const entryOf = (port: number, router = topo.router): ConntrackEntry | undefined => conntrackTcp(router).find((e) => e.sport === port);

const DEVICES_FOLLOW = 'flowtable devices follow the node interfaces';

/** What the agent logged from index `from` on: its device decisions and its syncs. */
function agentSince(agent: AgentChild, from: number) {
  const es = agent.entries().slice(from);
  return {
    deviceLogs: es.filter((e) => e.msg === DEVICES_FOLLOW).map((e) => e.devices as string[]),
    syncs: es.filter((e) => e.msg === SYNCED).length,
    /** Operations each incremental sync committed (periodic full syncs left out). */
    incrementalOps: es.filter((e) => e.msg === SYNCED && e.kind !== 'full').map((e) => e.ops as number),
    failedSyncs: es.filter((e) => e.msg === SYNC_FAILED).length,
  };
}

/** The follower's first decision from log entry `from` on whose devices satisfy `decided`. */
const decision = (agent: AgentChild, decided: (devices: string[]) => boolean, timeoutMs: number, from: number) =>
  agent.waitFor((e) => e.msg === DEVICES_FOLLOW && decided(e.devices as string[]), timeoutMs, from);

/**
 * The first sync's log line from entry `from` on (ok or failed) of a sync that started at
 * `time` or later (any sync when undefined): a line is written at a sync's end, 1 ms of rounding.
 */
const syncStartedAfter = (agent: AgentChild, time: number | undefined, timeoutMs: number, from: number) =>
  agent.waitFor(
    (e) => (e.msg === SYNCED || e.msg === SYNC_FAILED) && (time === undefined || e.time - Number(e.durationMs ?? 0) >= time - 1),
    timeoutMs,
    from,
  );

/**
 * Runs a change to the router's links and waits until the kernel's flowtable
 * satisfies pred and, with `decided`, until the agent has decided devices that
 * satisfy it: the kernel shows a renamed device under its new name at once
 * (its hook follows the interface), before the agent has decided to keep it.
 */
async function linkStep(
  agent: AgentChild,
  change: () => void,
  pred: (d: Devices) => boolean,
  opts: { timeoutMs?: number; syncWaitMs?: number; decided?: (devices: string[]) => boolean } = {},
) {
  // Generous: under TCG on a loaded CI machine a link change took 17-19 s to reach the
  // kernel (a poll of our list and two nft runs alone takes ~2 s there); a step that
  // needs nothing from the agent ends at its first poll.
  const { timeoutMs = 60_000, decided } = opts;
  const from = agent.entries().length;
  const started = Date.now();
  change();
  const after = await pollFor(devices, pred, timeoutMs, 50);
  const ms = Date.now() - started;
  if (decided) await decision(agent, decided, timeoutMs, from).catch(() => undefined);
  // A sync that is still running when the kernel already shows the change logs a little
  // later; where no sync is expected, this is the window in which one would show. A
  // change the follower decided in steps (a rename: the old name leaves, then the new
  // one joins) ends with the sync that started after its last decision; a sync of the
  // first decision may log after the second, and the one that commits it must not fall
  // into the next step's window. Generous for the same reason as timeoutMs (a change
  // reached the kernel 10 s after it in a CI run); the steps that expect no sync (the
  // flap) give their own window.
  const decisions = agent
    .entries()
    .slice(from)
    .filter((e) => e.msg === DEVICES_FOLLOW);
  await syncStartedAfter(agent, decisions.at(-1)?.time, opts.syncWaitMs ?? 30_000, from).catch(() => undefined);
  return { ms, devices: after, ...agentSince(agent, from) };
}

const agents: AgentChild[] = [];
let topoOff: RouterTopology | undefined;
let dpOff: NetlinkDataplane | undefined;
const problems = (agent: AgentChild): LogEntry[] => agent.entries().filter((e) => e.level >= 50 || e.msg === SYNC_FAILED);

try {
  // ---- phase "on" -------------------------------------------------------------
  step('topology ready; starting the agent');
  const on = startAgentChild(agentArgs(THRESHOLD, topo.router.name));
  agents.push(on);
  const agentSpawnedAt = Date.now();
  // The second router is built while the first agent starts.
  topoOff = createRouterTopology();
  dpOff = new NetlinkDataplane({ netns: topoOff.router.path });
  sinks.push(startSink(topoOff.server, LONG_PORT));
  const off = startAgentChild(agentArgs(0, topoOff.router.name));
  agents.push(off);
  const firstSync = await on.waitFor((e) => e.msg === SYNCED, 240_000);
  const agentReadyMs = Date.now() - agentSpawnedAt;
  step('first sync');
  const probeLog = on.entries().find((e) => e.capability === 'flowtable') ?? null;
  // The flowtable holds the router's interfaces once the follower has decided them from the
  // LinkMonitor's first dump and a sync started after that decision has committed. Under TCG,
  // with the second agent starting beside it, that sync can end tens of seconds after the
  // first one: a fixed wait once caught it mid-commit (our list read before it, nft after).
  const routerIfs = [topo.routerClientIf, topo.routerServerIf];
  const decided = await decision(on, (ds) => routerIfs.every((i) => ds.includes(i)), 120_000, 0);
  const programmed = await syncStartedAfter(on, decided.time, 120_000, 0);
  const devicesTiming = { decidedMs: decided.time - firstSync.time, programmedMs: programmed.time - firstSync.time };
  const initialDevices = await pollFor(devices, (d) => routerIfs.every((i) => has(d, i)), 15_000, 100);
  const metricsOn = await on.metrics();
  const nftRuleset = topo.router.exec('nft', ['list', 'ruleset']);
  const listing = await dp.list('ip', DEFAULT_TABLE_NAME);
  const listedFlowtables = listing?.flowtables ?? null;
  const unreadable = dp.lastUnreadable;

  step('initial devices seen');
  const short = await startShortFlow(topo.client, topo.router, CLUSTER_IP, SHORT_PORT);
  const long = await startLongFlow(topo.client, topo.router, CLUSTER_IP, LONG_PORT);
  const longOffloaded = await pollFor(
    () => entryOf(long.port),
    (e) => !!e?.offloaded,
    15_000,
  );
  const shortWhileOpen = entryOf(short.port);

  step('long flow offloaded');
  // A pod's veth appears in the router.
  const addVeth = await linkStep(
    on,
    () => topo.addRouterVeth('r-extra'),
    (d) => has(d, 'r-extra'),
  );
  step('veth added');
  // The interface that carries the transfer goes down and up: membership does not change; the flow comes back to the flowtable.
  const flap = await linkStep(
    on,
    () => {
      topo.router.exec('ip', ['link', 'set', topo.routerServerIf, 'down']);
      topo.router.exec('ip', ['link', 'set', topo.routerServerIf, 'up']);
    },
    (d) => has(d, topo.routerServerIf),
    // Ten times the device settle time.
    { syncWaitMs: 2_500 },
  );
  const onFastPath = () => fastPathLook(topo.router, long.port, topo.routerServerIf);
  const longAfterFlap = await pollFor(onFastPath, (l) => l.onFastPath, 20_000, 0);
  step('flap done');
  // A rename (only a down link can be renamed): the old name leaves, the new one joins.
  const rename = await linkStep(
    on,
    () => {
      topo.router.exec('ip', ['link', 'set', 'r-extra', 'down']);
      topo.router.exec('ip', ['link', 'set', 'r-extra', 'name', 'r-renamed']);
      topo.router.exec('ip', ['link', 'set', 'r-renamed', 'up']);
    },
    (d) => has(d, 'r-renamed') && lacks(d, 'r-extra'),
    { decided: (ds) => ds.includes('r-renamed') && !ds.includes('r-extra') },
  );
  const renameDesired = rename.deviceLogs.at(-1) ?? null;
  // Deleted: the kernel drops it from the flowtable by itself; the agent drops it from what it commits,
  // and commits nothing for it.
  step('rename done');
  const delFrom = on.entries().length;
  const del = await linkStep(
    on,
    () => topo.deleteRouterLink('r-renamed'),
    (d) => lacks(d, 'r-renamed'),
  );
  // Give the agent the time of a few syncs to (wrongly) name the vanished device.
  await new Promise((r) => setTimeout(r, 1_500));
  const afterDelete = { devices: await devices(), ...agentSince(on, delFrom) };
  step('delete done');
  const longAfterDelete = await pollFor(onFastPath, (l) => l.onFastPath, 20_000, 0);
  // Re-created under a name the flowtable held before: the kernel does not re-attach it; the agent does.
  const recreate = await linkStep(
    on,
    () => topo.addRouterVeth('r-extra'),
    (d) => has(d, 'r-extra'),
  );

  step('re-created veth');
  const longStillOpen = await pollFor(onFastPath, (l) => l.onFastPath, 10_000, 0);
  await long.close();
  const longAfterClose = await pollFor(
    () => entryOf(long.port),
    (e) => !e?.offloaded,
    10_000,
  );
  await short.close();
  const metricsOnEnd = await on.metrics();
  const onExit = await on.stop();
  const onSummary = { ...agentSince(on, 0), problems: problems(on), exitCode: onExit };

  step('phase on done');
  // ---- phase "off": the agent with threshold 0 on the second router ----
  const offFirstSync = await off.waitFor((e) => e.msg === SYNCED, 240_000);
  const metricsOff = await off.metrics();
  if (!topoOff || !dpOff) throw new Error('unreachable: the second router was built above');
  const offRuleset = topoOff.router.exec('nft', ['list', 'ruleset']);
  const offListing = await dpOff.list('ip', DEFAULT_TABLE_NAME);
  step('off: first sync');
  // Conntrack accounting on (the offload rule would have switched it on): the entries then show that the flow went far past the threshold.
  topoOff.router.exec('sysctl', ['-qw', 'net.netfilter.nf_conntrack_acct=1']);
  const offLong = await startLongFlow(topoOff.client, topoOff.router, CLUSTER_IP, LONG_PORT);
  // Many times the threshold's packets flow; sample conntrack all along.
  const offSamples: ConntrackEntry[] = [];
  const offDeadline = Date.now() + 3_000;
  while (Date.now() < offDeadline) {
    const e = entryOf(offLong.port, topoOff.router);
    if (e) offSamples.push(e);
    await new Promise((r) => setTimeout(r, 200));
  }
  await offLong.close();
  const offExit = await off.stop();
  const offSummary = { ...agentSince(off, 0), problems: problems(off), exitCode: offExit };

  console.log(
    JSON.stringify({
      agentReadyMs,
      probeLog,
      initialDevices,
      devicesTiming,
      offloadEnabledMetric: metricValue(metricsOn, 'kube_nft_proxy_flowtable_offload_enabled') ?? null,
      devicesMetric: metricValue(metricsOn, 'kube_nft_proxy_flowtable_devices') ?? null,
      devicesMetricAtEnd: metricValue(metricsOnEnd, 'kube_nft_proxy_flowtable_devices') ?? null,
      monitorRestartsAtEnd: metricValue(metricsOnEnd, 'kube_nft_proxy_link_monitor_restarts_total') ?? null,
      nftRuleset,
      listedFlowtables,
      unreadable,
      longOffloaded: longOffloaded ?? null,
      shortWhileOpen: shortWhileOpen ?? null,
      addVeth,
      flap,
      longAfterFlap,
      rename,
      renameDesired,
      del,
      afterDelete,
      longAfterDelete,
      recreate,
      longStillOpen,
      longAfterClose: longAfterClose ?? null,
      on: onSummary,
      off: {
        firstSyncKind: offFirstSync.kind ?? null,
        probeLog: off.entries().find((e) => e.capability === 'flowtable') ?? null,
        offloadEnabledMetric: metricValue(metricsOff, 'kube_nft_proxy_flowtable_offload_enabled') ?? null,
        ruleset: offRuleset,
        listedFlowtables: offListing?.flowtables ?? null,
        samples: offSamples,
        ...offSummary,
      },
      scenarioMs: Date.now() - t0,
    }),
  );
} finally {
  for (const a of agents) a.child.kill('SIGKILL');
  for (const s of sinks) s.kill('SIGKILL');
  topo.destroy();
  topoOff?.destroy();
}

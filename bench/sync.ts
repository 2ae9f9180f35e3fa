// npm run bench:sync — the whole pipeline at scale, as root.
//
// First the start-up figure (bench/sync-startup.ts: 1,000 services x 2
// endpoints over TLS, spawn → all rules in the kernel, split into phases;
// BENCH_STARTUP_RUNS=5, 0 skips it). Then for each size (BENCH_SIZES, labels as
// in bench/sizes.ts: default 1k,10k,30k,100k,5k50,44k1; 10k is 10,000 ClusterIP
// services x 10 endpoints, 5k50 5,006 x 50, 44k1 44,000 x 1; "10kv6" the same
// cluster single-stack IPv6, BENCH_LATENCY_AT naming it to time its changes) the parent process
// runs the fake API server and:
//   1. starts the real agent as a child process, as the package and the image
//      run it (bin/kube-nft-proxy.js over the built dist/, its bundle; so
//      its RSS is its own and has no type stripper in it: node src/cli.ts
//      keeps ~18 MiB more for that) programming a fresh network namespace, and times its cold sync:
//      spawn → first successful sync logged, with the boot, list/ready and the
//      sync's own durationMs apart, and the kernel's share (the synced line's
//      kernelMs: its commits' send → last answer) and the CPU time spent to
//      then (cpuMs: its JS thread's, the process's, the JS thread's wait for a
//      core); then VmRSS/VmHWM from /proc;
//   2. the floor (bench/sync-floor.ts): spawn → the same lists read by a child
//      that parses nothing, quickest of three, plus the cold sync's kernel time;
//   3. at 10k and 100k (BENCH_LATENCY_AT), event→kernel latency of one endpoint
//      change: API write → the agent's sync log line (written once the commit
//      carrying it returned), with the default --min-sync-period=1s: changes
//      written while the agent is idle, and changes written right after a sync
//      (which wait for the period);
//   4. up to 300k endpoints (BENCH_COMPARE_MAX_ENDPOINTS), the raw load: the
//      same ServicePorts' full-sync operations committed through the
//      NetlinkDataplane into a fresh namespace (bench/sync-raw-load.ts, a
//      child: also the heap each stage keeps);
//   5. and the same operations as `nft` text through `nft -f` in a fresh
//      namespace, with nft's peak RSS.
// --endpoint-shape=map|chains (default map, the agent's) is passed to the agent and to
// the raw load. Prints a table; the last line is one JSON object.

import { fork } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENDPOINT_SHAPES, type EndpointShape } from '../src/reconciler/config.ts';
import { FakeApiServer } from '../test/fake-apiserver/index.ts';
import { buildDist } from '../test/helpers/build-dist.ts';
import { createNetns, type NetNs } from '../test/helpers/netns.ts';
import { servicePortNameBase } from '../src/reconciler/names.ts';
import { tableFamily } from '../src/reconciler/statements.ts';
import { type NftLoad, nftLoadFile } from './nft-load.ts';
import type { RawLoadResult } from './sync-raw-load.ts';
import { IDLE_RELEASE_QUIET_MS } from '../src/agent/memory-release.ts';
import { AgentChild, type LogRecord } from './agent-child.ts';
import { parseSizes, type BenchSize } from './sizes.ts';
import { agentFlags, populate, podIP, servicePortName, sliceKey, sliceObject } from './sync-cluster.ts';
import { measureStartup, type StartupResult } from './sync-startup.ts';
import { measureListFloor } from './sync-floor.ts';
import { printSize, printStartup, summarize, type ChangeSample, type ColdResult, type SizeResult } from './sync-report.ts';

/** Extra node flags for the agent child (e.g. --cpu-prof), space-separated. */
const AGENT_NODE_FLAGS = (process.env.BENCH_AGENT_NODE_FLAGS ?? '').split(' ').filter(Boolean);
const RAW = fileURLToPath(new URL('./sync-raw-load.ts', import.meta.url));
const MIN_SYNC_MS = 1000;
const argValue = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
/** The sizes at which one-change latency is measured. */
const LATENCY_AT = new Set(parseSizes(argValue('latency-at') ?? process.env.BENCH_LATENCY_AT ?? '10k,100k').map((s) => s.label));
const IDLE_SAMPLES = 10;
const BUSY_SAMPLES = 5;
/** Children timed for the floor; the quickest counts. */
const FLOOR_RUNS = 3;
const SIZES = parseSizes(argValue('sizes') ?? process.env.BENCH_SIZES ?? '1k,10k,30k,100k,5k50,44k1');
/** Above this many endpoints the raw load and nft -f are left out (nft -f alone would need GiBs and minutes). */
const COMPARE_MAX_ENDPOINTS = Number(process.env.BENCH_COMPARE_MAX_ENDPOINTS ?? 300_000);
const STARTUP_RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 5);
const ENDPOINT_SHAPE = (process.argv.find((a) => a.startsWith('--endpoint-shape='))?.slice('--endpoint-shape='.length) ??
  'map') as EndpointShape;
if (!ENDPOINT_SHAPES.includes(ENDPOINT_SHAPE))
  throw new Error(`--endpoint-shape=${ENDPOINT_SHAPE}: expected ${ENDPOINT_SHAPES.join(' or ')}`);
const dir = mkdtempSync(join(tmpdir(), 'knp-bench-sync-'));
// `npm run build`, what prepack and the image's build run: the agent is timed and weighed as shipped.
buildDist();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const isSync = (r: LogRecord) => r.msg === 'synced nftables rules';

async function coldSync(agent: AgentChild, spawnedAt: number, size: BenchSize): Promise<ColdResult> {
  const timeout = 120_000 + size.services * size.endpoints * 2;
  const start = await agent.waitFor(0, (r) => r.msg === 'starting kube-nft-proxy', timeout, 'agent start');
  const ready = await agent.waitFor(start.index, (r) => r.msg === 'cluster state synced; programming the initial ruleset', timeout, 'list');
  const synced = await agent.waitFor(ready.index, isSync, timeout, 'cold sync');
  const mem = agent.memory();
  await sleep(3000);
  const settled = agent.memory();
  const smaps = agent.smaps();
  const s = synced.record;
  if (s.servicePorts !== size.services)
    throw new Error(`cold sync programmed ${String(s.servicePorts)} service ports, want ${size.services}`);
  return {
    coldMs: s.time - spawnedAt,
    bootMs: start.record.time - spawnedAt,
    listMs: ready.record.time - start.record.time,
    syncMs: s.durationMs as number,
    kernelMs: Number(s.kernelMs ?? NaN),
    kernelTransactions: Number(s.kernelTransactions ?? NaN),
    cpuMs: s.cpuMs as ColdResult['cpuMs'],
    ops: s.ops as number,
    servicePorts: s.servicePorts as number,
    rss: mem.rss,
    hwm: mem.hwm,
    rssSettled: settled.rss,
    smaps,
    atSync: s.memoryMiB as ColdResult['atSync'],
  };
}

/** A second agent over the rules the first one left (SIGTERM keeps them): what a restart or an upgrade costs. */
async function restartSync(kubeconfig: string, ns: NetNs, size: BenchSize): Promise<NonNullable<SizeResult['restart']>> {
  const spawnedAt = Date.now();
  const agent = new AgentChild(
    [`--kubeconfig=${kubeconfig}`, `--netns=${ns.path}`, ...agentFlags(`${MIN_SYNC_MS}ms`, ENDPOINT_SHAPE, size.family)],
    AGENT_NODE_FLAGS,
  );
  try {
    const synced = await agent.waitFor(0, isSync, 120_000 + size.services * size.endpoints * 2, 'restart sync');
    const s = synced.record;
    return { restartMs: s.time - spawnedAt, mode: String(s.mode ?? s.kind), ops: s.ops as number, hwmMiB: agent.memory().hwm };
  } finally {
    await agent.stop();
  }
}

/** Moves endpoint j of service i to a new pod address; returns the new address. */
function moveEndpoint(api: FakeApiServer, moved: Map<number, Map<number, number>>, size: BenchSize, i: number, j: number): string {
  const m = moved.get(i) ?? new Map<number, number>();
  const gen = ((m.get(j) ?? 0) + 1) % 4;
  m.set(j, gen);
  moved.set(i, m);
  api.update('endpointslices', sliceObject(i, m, size.endpoints, size.family));
  return podIP(i, j, gen, size.endpoints, size.family);
}

async function changeLatency(api: FakeApiServer, agent: AgentChild, ns: NetNs, size: BenchSize): Promise<ChangeSample[]> {
  const n = size.services;
  const samples: ChangeSample[] = [];
  const moved = new Map<number, Map<number, number>>();
  let last = { i: 0, ip: '' };
  for (let s = 0; s < IDLE_SAMPLES + BUSY_SAMPLES; s++) {
    const busy = s >= IDLE_SAMPLES;
    // Idle: well after every sync (incl. the stale-chain follow-up a second later).
    // Busy: right after the previous change's sync, so the runner must wait for the period.
    if (!busy) await sleep(2500);
    const i = (s * 997 + 13) % n;
    const from = agent.records.length;
    const writtenAt = Date.now();
    last = { i, ip: moveEndpoint(api, moved, size, i, s % size.endpoints) };
    // The sync that carries it, matched on content: a moved endpoint is at least
    // four operations (its map element and its hairpin element, each deleted and
    // added; with per-endpoint chains, a chain rewrite of > 10). A stale-chain follow-up (1 or 2 chain deletions, per-endpoint
    // chains only) due at the same moment may carry it too.
    const { record, index } = await agent.waitFor(
      from,
      (r) => isSync(r) && (r.ops as number) > 2 && r.time >= writtenAt,
      30_000,
      'change sync',
    );
    // The runner may start a sync min-sync-period after the previous one started, not before.
    let prevStart = Number.NEGATIVE_INFINITY;
    for (let k = index - 1; k >= 0; k--) {
      const r = agent.records[k]!;
      if (isSync(r)) {
        prevStart = r.time - (r.durationMs as number);
        break;
      }
    }
    const allowedAt = Math.max(writtenAt, prevStart + MIN_SYNC_MS);
    samples.push({
      kind: busy ? 'busy' : 'idle',
      latencyMs: record.time - writtenAt,
      excessMs: record.time - allowedAt,
      syncMs: record.durationMs as number,
      ops: record.ops as number,
    });
  }
  // The last change is in the kernel: its service chain sends traffic to the moved
  // pod, through an endpoint chain or through the service's endpoints map.
  const base = servicePortNameBase(servicePortName(last.i));
  const family = tableFamily(size.family);
  const listing = ns.exec('nft', ['list', 'chain', family, 'kube-nft-proxy', `service-${base}`], { timeoutMs: 120_000 });
  // Through a shared endpoints map: some slot of the chain's range holds the pod.
  const shared = /numgen random mod (\d+)(?: offset (\d+))? map @(service-endpoints-\d+)/.exec(listing);
  const inSharedMap = (): boolean => {
    const [mod, offset] = [Number(shared![1]), Number(shared![2] ?? 0)];
    const map = ns.exec('nft', ['list', 'map', family, 'kube-nft-proxy', shared![3]!], { timeoutMs: 120_000 });
    const escaped = last.ip.replaceAll('.', '\\.');
    for (const m of map.matchAll(new RegExp(`(\\d+) : ${escaped} \\. 8080\\b`, 'g')))
      if (Number(m[1]) >= offset && Number(m[1]) < offset + mod) return true;
    return false;
  };
  const routed = shared
    ? inSharedMap()
    : listing.includes(`map @endpoints-${base}`)
      ? ns.exec('nft', ['list', 'map', family, 'kube-nft-proxy', `endpoints-${base}`], { timeoutMs: 120_000 }).includes(`${last.ip} . 8080`)
      : listing.includes(`__${last.ip.replaceAll(':', '.')}/8080`);
  if (!routed) throw new Error(`kernel does not route ${sliceKey(last.i)} to ${last.ip}:\n${listing}`);
  return samples;
}

function rawLoad(kubeconfig: string, textFile: string, size: BenchSize): Promise<RawLoadResult> {
  const ns = createNetns('knp-bench-raw');
  const timeoutMs = 120_000 + size.services * size.endpoints * 2;
  const child = fork(RAW, [kubeconfig, ns.path, textFile, `${MIN_SYNC_MS}ms`, ENDPOINT_SHAPE, size.family], {
    timeout: timeoutMs,
    execArgv: ['--expose-gc'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise<RawLoadResult>((resolve, reject) => {
    let result: RawLoadResult | undefined;
    child.on('message', (m) => (result = m as RawLoadResult));
    child.on('exit', (code) => (result && code === 0 ? resolve(result) : reject(new Error(`raw load child exited ${code}`))));
  }).finally(() => ns.destroy());
}

/** `nft -f file` in a fresh namespace. */
function nftLoad(file: string): NftLoad {
  const ns = createNetns('knp-bench-nft');
  try {
    return nftLoadFile(ns, file);
  } finally {
    ns.destroy();
  }
}

async function runSize(size: BenchSize): Promise<SizeResult> {
  const api = await FakeApiServer.start({ maxHistory: 10_000 });
  const kubeconfig = join(dir, `kubeconfig-${size.label}.json`);
  const textFile = join(dir, `ruleset-${size.label}.nft`);
  try {
    populate(api, size.services, size.endpoints, size.family);
    api.writeKubeconfig(kubeconfig);
    const load = loadavg();
    const ns = createNetns('knp-bench-agent');
    let cold: ColdResult;
    let changes: ChangeSample[] | undefined;
    let restart: SizeResult['restart'];
    let floor: SizeResult['floor'];
    try {
      const spawnedAt = Date.now();
      const agent = new AgentChild(
        [`--kubeconfig=${kubeconfig}`, `--netns=${ns.path}`, ...agentFlags(`${MIN_SYNC_MS}ms`, ENDPOINT_SHAPE, size.family)],
        AGENT_NODE_FLAGS,
      );
      try {
        cold = await coldSync(agent, spawnedAt, size);
        if (LATENCY_AT.has(size.label)) changes = await changeLatency(api, agent, ns, size);
        else await sleep(10_000);
        cold.rssAfterChanges = agent.memory().rss;
        // What a node shows between bursts of churn: the agent gives back what small syncs left once quiet.
        await sleep(IDLE_RELEASE_QUIET_MS + 3000);
        cold.rssSteady = agent.memory().rss;
      } finally {
        await agent.stop();
      }
      // ~1 s at 100k: a child that takes many times that has stalled (see measureListFloor).
      floor = await measureListFloor(kubeconfig, FLOOR_RUNS, 20_000 + (size.services * size.endpoints) / 10);
      restart = await restartSync(kubeconfig, ns, size);
    } finally {
      ns.destroy();
    }
    const measured = { size, cold, ...(changes ? { changes } : {}), floor, restart, load };
    if (size.services * size.endpoints > COMPARE_MAX_ENDPOINTS) return measured;
    const raw = await rawLoad(kubeconfig, textFile, size);
    if (raw.ops !== cold.ops)
      throw new Error(`raw load has ${raw.ops} operations, the agent's cold sync ${cold.ops}: not the same ruleset`);
    const nft = nftLoad(textFile);
    return { ...measured, compare: { raw, nft } };
  } finally {
    rmSync(textFile, { force: true });
    await api.close();
  }
}

const results: SizeResult[] = [];
let startup: StartupResult | undefined;
try {
  if (process.getuid?.() !== 0) throw new Error('bench:sync needs root (network namespaces, nftables)');
  statSync('/usr/bin/time');
  if (STARTUP_RUNS > 0) {
    startup = await measureStartup(dir, ENDPOINT_SHAPE, STARTUP_RUNS);
    printStartup(startup);
  }
  for (const size of SIZES) {
    const r = await runSize(size);
    printSize(r, ENDPOINT_SHAPE);
    results.push(r);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(JSON.stringify(summarize(ENDPOINT_SHAPE, startup, results, MIN_SYNC_MS)));

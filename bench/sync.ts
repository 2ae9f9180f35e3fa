// npm run bench:sync — the whole pipeline at scale, as root.
//
// For each size (1k / 10k / 30k ClusterIP services x 10 endpoints; --sizes=1000,10000
// to limit) the parent process runs the fake API server and:
//   1. starts the real agent as a child process, as the package and the image
//      run it (bin/kube-nft-proxy.js over the compiled dist/, built first; so
//      its RSS is its own and has no type stripper in it: node src/cli.ts
//      keeps ~18 MiB more for that) programming a fresh network namespace, and times its cold sync:
//      spawn → first successful sync logged, with the boot, list/ready and the
//      sync's own durationMs apart; then VmRSS/VmHWM from /proc;
//   2. at 10k, event→kernel latency of one endpoint change: API write → the
//      agent's sync log line (written once the commit carrying it returned),
//      with the default --min-sync-period=1s: changes written while the agent
//      is idle, and changes written right after a sync (which wait for the period);
//   3. the raw load: the same ServicePorts' full-sync operations committed
//      through the NetlinkDataplane into a fresh namespace (bench/sync-raw-load.ts,
//      a child: also the heap each stage keeps);
//   4. the same operations as `nft` text through `nft -f` in a fresh namespace,
//      with nft's peak RSS.
// --endpoint-shape=map|chains (default map, the agent's) is passed to the agent and to
// the raw load. Prints a table; the last line is one JSON object.

import { spawn, fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENDPOINT_SHAPES, type EndpointShape } from '../src/reconciler/config.ts';
import { FakeApiServer } from '../test/fake-apiserver/index.ts';
import { buildDist } from '../test/helpers/build-dist.ts';
import { createNetns, type NetNs } from '../test/helpers/netns.ts';
import { packageRoot } from '../src/package-root.ts';
import { servicePortNameBase } from '../src/reconciler/names.ts';
import { type NftLoad, nftLoadFile } from './nft-load.ts';
import type { RawLoadResult } from './sync-raw-load.ts';
import { IDLE_RELEASE_QUIET_MS } from '../src/agent/memory-release.ts';
import { agentFlags, populate, podIP, servicePortName, sliceKey, sliceObject } from './sync-cluster.ts';

const BIN = join(packageRoot, 'bin', 'kube-nft-proxy.js');
/** Extra node flags for the agent child (e.g. --cpu-prof), space-separated. */
const AGENT_NODE_FLAGS = (process.env.BENCH_AGENT_NODE_FLAGS ?? '').split(' ').filter(Boolean);
const RAW = fileURLToPath(new URL('./sync-raw-load.ts', import.meta.url));
const MIN_SYNC_MS = 1000;
const latencyArg = process.argv.find((a) => a.startsWith('--latency-at='));
/** The size at which one-change latency is measured (default 10k). */
const LATENCY_SIZE = latencyArg ? Number(latencyArg.slice('--latency-at='.length)) : 10_000;
const IDLE_SAMPLES = 10;
const BUSY_SAMPLES = 5;

const arg = process.argv.find((a) => a.startsWith('--sizes='));
const SIZES = (arg ? arg.slice('--sizes='.length) : '1000,10000,30000').split(',').map(Number);
const ENDPOINT_SHAPE = (process.argv.find((a) => a.startsWith('--endpoint-shape='))?.slice('--endpoint-shape='.length) ?? 'map') as EndpointShape;
if (!ENDPOINT_SHAPES.includes(ENDPOINT_SHAPE)) throw new Error(`--endpoint-shape=${ENDPOINT_SHAPE}: expected ${ENDPOINT_SHAPES.join(' or ')}`);
const dir = mkdtempSync(join(tmpdir(), 'knp-bench-sync-'));
// `npm run build`, what prepack and the image's build run: the agent is timed and weighed as shipped.
buildDist();
const MiB = 2 ** 20;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const r1 = (n: number) => Math.round(n * 10) / 10;

interface LogRecord {
  msg: string;
  time: number;
  [k: string]: unknown;
}

/** The agent child and its pino lines, with a way to wait for one. */
class AgentChild {
  readonly child: ChildProcess;
  readonly records: LogRecord[] = [];
  #waiters: Array<() => void> = [];
  #partial = '';
  #stderr = '';

  constructor(kubeconfig: string, netns: string) {
    this.child = spawn(process.execPath, [...AGENT_NODE_FLAGS, BIN, `--kubeconfig=${kubeconfig}`, `--netns=${netns}`, ...agentFlags(`${MIN_SYNC_MS}ms`, ENDPOINT_SHAPE)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      const lines = (this.#partial + d).split('\n');
      this.#partial = lines.pop()!;
      for (const l of lines) if (l.startsWith('{')) this.records.push(JSON.parse(l) as LogRecord);
      for (const w of this.#waiters.splice(0)) w();
    });
    this.child.stderr!.setEncoding('utf8').on('data', (d: string) => (this.#stderr += d));
    this.child.on('exit', () => {
      for (const w of this.#waiters.splice(0)) w();
    });
  }

  /** The first record at index >= from that matches, waiting for it. */
  async waitFor(from: number, match: (r: LogRecord) => boolean, timeoutMs: number, what: string): Promise<{ record: LogRecord; index: number }> {
    const deadline = Date.now() + timeoutMs;
    for (let i = from; ; ) {
      for (; i < this.records.length; i++) {
        const r = this.records[i]!;
        if (r.msg === 'nftables sync failed; will retry') throw new Error(`agent sync failed: ${JSON.stringify(r)}`);
        if (match(r)) return { record: r, index: i };
      }
      if (this.child.exitCode !== null) throw new Error(`agent exited (${this.child.exitCode}) waiting for ${what}: ${this.#stderr.slice(-2000)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; last records: ${this.records.slice(-5).map((r) => JSON.stringify(r)).join('\n')}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** VmRSS and VmHWM in MiB. */
  memory(): { rss: number; hwm: number } {
    const status = readFileSync(`/proc/${this.child.pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
  }

  /**
   * Where the RSS is, from /proc/PID/smaps (MiB): `[heap]` is glibc's main
   * malloc arena (the addon's batch buffers and libnftnl objects built on the
   * JS thread); anonymous maps are V8's heap pages, large malloc blocks and the
   * worker threads' malloc arenas; file maps are node, libraries and code.
   */
  smaps(): { brkHeap: number; anonymous: number; files: number } {
    const out = { brkHeap: 0, anonymous: 0, files: 0 };
    let into: keyof typeof out = 'anonymous';
    for (const line of readFileSync(`/proc/${this.child.pid}/smaps`, 'utf8').split('\n')) {
      const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
      if (header) {
        const name = header[1]!;
        into = name === '[heap]' ? 'brkHeap' : name === '' || name.startsWith('[anon') ? 'anonymous' : 'files';
        continue;
      }
      const rss = /^Rss:\s+(\d+) kB/.exec(line);
      if (rss) out[into] += Number(rss[1]) / 1024;
    }
    return out;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    const t = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await once(this.child, 'exit');
    clearTimeout(t);
  }
}

const isSync = (r: LogRecord) => r.msg === 'synced nftables rules';

interface ColdResult {
  coldMs: number;
  bootMs: number;
  listMs: number;
  syncMs: number;
  ops: number;
  servicePorts: number;
  rss: number;
  hwm: number;
  rssSettled: number;
  smaps: { brkHeap: number; anonymous: number; files: number };
  /** The agent's process.memoryUsage() as its cold sync logged it (MiB). */
  atSync?: { rss: number; heapUsed: number; heapTotal: number; external: number; arrayBuffers: number };
  /** Right after the change samples (at 10k; else 10 s after the cold sync). */
  rssAfterChanges?: number;
  /** Idle again: the agent's quiet period (IDLE_RELEASE_QUIET_MS) and 3 s more after the last change. */
  rssSteady?: number;
}

interface ChangeSample {
  kind: 'idle' | 'busy';
  latencyMs: number;
  /** Latency beyond what the runner was allowed to wait (the min period since the previous sync's start). */
  excessMs: number;
  syncMs: number;
  ops: number;
}

async function coldSync(agent: AgentChild, spawnedAt: number, n: number): Promise<ColdResult> {
  const timeout = 120_000 + n * 20;
  const start = await agent.waitFor(0, (r) => r.msg === 'starting kube-nft-proxy', timeout, 'agent start');
  const ready = await agent.waitFor(start.index, (r) => r.msg === 'cluster state synced; programming the initial ruleset', timeout, 'list');
  const synced = await agent.waitFor(ready.index, isSync, timeout, 'cold sync');
  const mem = agent.memory();
  await sleep(3000);
  const settled = agent.memory();
  const smaps = agent.smaps();
  const s = synced.record;
  if (s.servicePorts !== n) throw new Error(`cold sync programmed ${String(s.servicePorts)} service ports, want ${n}`);
  return {
    coldMs: s.time - spawnedAt,
    bootMs: start.record.time - spawnedAt,
    listMs: ready.record.time - start.record.time,
    syncMs: s.durationMs as number,
    ops: s.ops as number,
    servicePorts: s.servicePorts as number,
    rss: mem.rss,
    hwm: mem.hwm,
    rssSettled: settled.rss,
    smaps,
    atSync: s.memoryMiB as ColdResult['atSync'],
  };
}

/** Moves endpoint j of service i to a new pod address; returns the new address. */
function moveEndpoint(api: FakeApiServer, moved: Map<number, Map<number, number>>, i: number, j: number): string {
  const m = moved.get(i) ?? new Map<number, number>();
  const gen = ((m.get(j) ?? 0) + 1) % 4;
  m.set(j, gen);
  moved.set(i, m);
  api.update('endpointslices', sliceObject(i, m));
  return podIP(i, j, gen);
}

async function changeLatency(api: FakeApiServer, agent: AgentChild, ns: NetNs, n: number): Promise<ChangeSample[]> {
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
    last = { i, ip: moveEndpoint(api, moved, i, s % 10) };
    // The sync that carries it, matched on content: a moved endpoint is at least
    // four operations (its map element and its hairpin element, each deleted and
    // added; with per-endpoint chains, a chain rewrite of > 10). A stale-chain follow-up (1 or 2 chain deletions, per-endpoint
    // chains only) due at the same moment may carry it too.
    const { record, index } = await agent.waitFor(from, (r) => isSync(r) && (r.ops as number) > 2 && r.time >= writtenAt, 30_000, 'change sync');
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
    samples.push({ kind: busy ? 'busy' : 'idle', latencyMs: record.time - writtenAt, excessMs: record.time - allowedAt, syncMs: record.durationMs as number, ops: record.ops as number });
  }
  // The last change is in the kernel: its service chain sends traffic to the moved
  // pod, through an endpoint chain or through the service's endpoints map.
  const base = servicePortNameBase(servicePortName(last.i));
  const listing = ns.exec('nft', ['list', 'chain', 'ip', 'kube-nft-proxy', `service-${base}`], { timeoutMs: 120_000 });
  // Through a shared endpoints map: some slot of the chain's range holds the pod.
  const shared = /numgen random mod (\d+)(?: offset (\d+))? map @(service-endpoints-\d+)/.exec(listing);
  const inSharedMap = (): boolean => {
    const [mod, offset] = [Number(shared![1]), Number(shared![2] ?? 0)];
    const map = ns.exec('nft', ['list', 'map', 'ip', 'kube-nft-proxy', shared![3]!], { timeoutMs: 120_000 });
    const escaped = last.ip.replaceAll('.', '\\.');
    for (const m of map.matchAll(new RegExp(`(\\d+) : ${escaped} \\. 8080\\b`, 'g'))) if (Number(m[1]) >= offset && Number(m[1]) < offset + mod) return true;
    return false;
  };
  const routed = shared
    ? inSharedMap()
    : listing.includes(`map @endpoints-${base}`)
      ? ns.exec('nft', ['list', 'map', 'ip', 'kube-nft-proxy', `endpoints-${base}`], { timeoutMs: 120_000 }).includes(`${last.ip} . 8080`)
      : listing.includes(`__${last.ip}/8080`);
  if (!routed) throw new Error(`kernel does not route ${sliceKey(last.i)} to ${last.ip}:\n${listing}`);
  return samples;
}

function rawLoad(kubeconfig: string, textFile: string): Promise<RawLoadResult> {
  const ns = createNetns('knp-bench-raw');
  const child = fork(RAW, [kubeconfig, ns.path, textFile, `${MIN_SYNC_MS}ms`, ENDPOINT_SHAPE], { execArgv: ['--expose-gc'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
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

interface SizeResult {
  n: number;
  cold: ColdResult;
  changes?: ChangeSample[];
  raw: RawLoadResult;
  nft: { ms: number; peakMiB: number };
  load: number[];
}

async function runSize(n: number): Promise<SizeResult> {
  const api = await FakeApiServer.start({ maxHistory: 10_000 });
  const kubeconfig = join(dir, `kubeconfig-${n}.json`);
  const textFile = join(dir, `ruleset-${n}.nft`);
  try {
    populate(api, n);
    api.writeKubeconfig(kubeconfig);
    const load = loadavg();
    const ns = createNetns('knp-bench-agent');
    let cold: ColdResult;
    let changes: ChangeSample[] | undefined;
    try {
      const spawnedAt = Date.now();
      const agent = new AgentChild(kubeconfig, ns.path);
      try {
        cold = await coldSync(agent, spawnedAt, n);
        if (n === LATENCY_SIZE) changes = await changeLatency(api, agent, ns, n);
        else await sleep(10_000);
        cold.rssAfterChanges = agent.memory().rss;
        // What a node shows between bursts of churn: the agent gives back what small syncs left once quiet.
        await sleep(IDLE_RELEASE_QUIET_MS + 3000);
        cold.rssSteady = agent.memory().rss;
      } finally {
        await agent.stop();
      }
    } finally {
      ns.destroy();
    }
    const raw = await rawLoad(kubeconfig, textFile);
    if (raw.ops !== cold.ops) throw new Error(`raw load has ${raw.ops} operations, the agent's cold sync ${cold.ops}: not the same ruleset`);
    const nft = nftLoad(textFile);
    return { n, cold, ...(changes ? { changes } : {}), raw, nft, load };
  } finally {
    rmSync(textFile, { force: true });
    await api.close();
  }
}

function print(r: SizeResult): void {
  const { cold, raw, nft } = r;
  const f = (x: number) => (x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : x.toFixed(0));
  console.log(`${r.n} services x 10 endpoints (endpoint shape ${ENDPOINT_SHAPE}): ${raw.ops} ops, ${f(raw.textBytes / MiB)} MiB of nft text (load avg at start ${r.load.map((l) => l.toFixed(2)).join(' ')})`);
  console.log(`  agent cold sync   ${f(cold.coldMs)} ms = boot ${f(cold.bootMs)} + list/ready ${f(cold.listMs)} + sync ${f(cold.syncMs)} (+ ${f(cold.coldMs - cold.bootMs - cold.listMs - cold.syncMs)} rest)`);
  console.log(`  raw load (addon)  ${f(raw.commitMs)} ms (plan ${f(raw.planMs)} ms before it)`);
  console.log(`  nft -f            ${f(nft.ms)} ms, nft peak RSS ${f(nft.peakMiB)} MiB`);
  console.log(`  ratios            cold/raw ${f(cold.coldMs / raw.commitMs)}  sync/raw ${f(cold.syncMs / raw.commitMs)}  nft-f/cold ${f(nft.ms / cold.coldMs)}  nft-f/raw ${f(nft.ms / raw.commitMs)}`);
  console.log(`  agent memory      VmRSS ${f(cold.rss)} MiB after cold sync, ${f(cold.rssSettled)} MiB 3 s later, ${f(cold.rssAfterChanges ?? NaN)} MiB right after the changes, ${f(cold.rssSteady ?? NaN)} MiB quiet again, VmHWM ${f(cold.hwm)} MiB`);
  console.log(`  agent RSS by map   malloc main arena ${f(cold.smaps.brkHeap)}  anonymous (V8 heap, large/thread mallocs) ${f(cold.smaps.anonymous)}  files ${f(cold.smaps.files)} MiB (3 s after cold sync)`);
  const a = cold.atSync;
  if (a) console.log(`  agent at cold sync RSS ${a.rss}  V8 heap used ${a.heapUsed} of ${a.heapTotal}  external ${a.external} (array buffers ${a.arrayBuffers}) MiB`);
  const h = raw.heapMiB;
  console.log(
    `  heap kept (raw child, after GC): node+modules ${f(h.base)}  streams ${f(h.streams)}  model ${f(h.model)}  reconciler ${f(h.reconciler)} (+ ops ${f(h.reconcilerWithOps - h.reconciler)} while committing)  external after commit ${f(raw.externalAfterCommitMiB)}  child RSS ${f(raw.rssMiB)} MiB`,
  );
  const st = raw.settled;
  console.log(`  raw child after commit + GC: RSS ${f(st.rss)}  heap ${f(st.heapUsed)}/${f(st.heapTotal)}  external ${f(st.external)} (array buffers ${f(st.arrayBuffers)}) MiB`);
  if (r.changes) {
    for (const kind of ['idle', 'busy'] as const) {
      const xs = r.changes.filter((c) => c.kind === kind);
      if (xs.length === 0) continue;
      const lat = xs.map((c) => c.latencyMs);
      const exc = xs.map((c) => c.excessMs);
      const sync = xs.map((c) => c.syncMs);
      console.log(
        `  one change (${kind}, ${xs.length}): event→kernel median ${f(median(lat))} max ${f(Math.max(...lat))} ms; beyond the allowed wait median ${f(median(exc))} max ${f(Math.max(...exc))} ms; sync itself median ${f(median(sync))} max ${f(Math.max(...sync))} ms (${xs[0]!.ops} ops)`,
      );
    }
  }
}

const results: SizeResult[] = [];
try {
  if (process.getuid?.() !== 0) throw new Error('bench:sync needs root (network namespaces, nftables)');
  statSync('/usr/bin/time');
  for (const n of SIZES) {
    const r = await runSize(n);
    print(r);
    results.push(r);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const summary: Record<string, number | string> = { endpoint_shape: ENDPOINT_SHAPE };
for (const r of results) {
  const k = `${r.n / 1000}k`;
  summary[`cold_ms_${k}`] = Math.round(r.cold.coldMs);
  summary[`cold_sync_ms_${k}`] = Math.round(r.cold.syncMs);
  summary[`cold_list_ms_${k}`] = Math.round(r.cold.listMs);
  summary[`raw_load_ms_${k}`] = Math.round(r.raw.commitMs);
  summary[`nft_f_ms_${k}`] = Math.round(r.nft.ms);
  summary[`nft_peak_rss_mib_${k}`] = Math.round(r.nft.peakMiB);
  summary[`cold_${k}_over_raw_load`] = r1(r.cold.coldMs / r.raw.commitMs);
  summary[`cold_sync_${k}_over_raw_load`] = Math.round((r.cold.syncMs / r.raw.commitMs) * 100) / 100;
  summary[`nft_f_over_agent_cold_${k}`] = Math.round((r.nft.ms / r.cold.coldMs) * 100) / 100;
  // Idle RSS: the larger of after the cold sync and quiet again after the changes.
  summary[`rss_mib_${k}`] = Math.round(Math.max(r.cold.rssSettled, r.cold.rssSteady ?? NaN));
  summary[`hwm_mib_${k}`] = Math.round(r.cold.hwm);
  summary[`rss_after_changes_mib_${k}`] = Math.round(r.cold.rssAfterChanges ?? NaN);
  if (r.changes) {
    const idle = r.changes.filter((c) => c.kind === 'idle');
    const busy = r.changes.filter((c) => c.kind === 'busy');
    summary[`one_change_${k}_ms_over_min_sync`] = Math.round(median(idle.map((c) => c.latencyMs)) - MIN_SYNC_MS);
    summary[`one_change_${k}_event_to_kernel_ms_median`] = Math.round(median(idle.map((c) => c.latencyMs)));
    summary[`one_change_${k}_event_to_kernel_ms_max`] = Math.round(Math.max(...idle.map((c) => c.latencyMs)));
    summary[`one_change_${k}_busy_beyond_min_sync_ms_median`] = Math.round(median(busy.map((c) => c.excessMs)));
    summary[`one_change_${k}_busy_beyond_min_sync_ms_max`] = Math.round(Math.max(...busy.map((c) => c.excessMs)));
  }
}
summary.note = 'idle runner syncs at once (min period counts from the previous sync start): one_change_*_ms_over_min_sync is negative by design; busy_beyond_min_sync is what a change costs past the period';
summary.loadavg_1m_end = Math.round(loadavg()[0]! * 100) / 100;
console.log(JSON.stringify(summary));

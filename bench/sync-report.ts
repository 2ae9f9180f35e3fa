// bench:sync's results: what one size measured, its printed table and the
// keys of the last-line JSON. Keys of the sizes bench:sync had from the start
// (cold_ms_10k, hwm_mib_30k, ...) keep their names; a size's label (sizes.ts)
// is the key's suffix.

import { availableParallelism, loadavg } from 'node:os';
import type { CpuMs } from '../src/agent/sync-outcome.ts';
import type { RawLoadResult } from './sync-raw-load.ts';
import type { BenchSize } from './sizes.ts';
import type { ListFloor } from './sync-floor.ts';
import { STARTUP_PHASES, STARTUP_SERVICES, STARTUP_ENDPOINTS, type StartupResult } from './sync-startup.ts';

const MiB = 2 ** 20;

export interface ColdResult {
  coldMs: number;
  bootMs: number;
  listMs: number;
  syncMs: number;
  /** The kernel's own time for the cold sync's commits (the agent's synced line). */
  kernelMs: number;
  /** The transactions they sent (many where a first start is staged). */
  kernelTransactions: number;
  /**
   * CPU time from the agent's start to its synced line (its log's cpuMs): its JS thread's, which the cold sync
   * cannot be shorter than on any number of cores; the process's; the JS thread's wait for a core.
   */
  cpuMs: CpuMs;
  ops: number;
  servicePorts: number;
  rss: number;
  hwm: number;
  rssSettled: number;
  smaps: { brkHeap: number; anonymous: number; files: number };
  /** The agent's process.memoryUsage() as its cold sync logged it (MiB). */
  atSync?: { rss: number; heapUsed: number; heapTotal: number; external: number; arrayBuffers: number };
  /** Right after the change samples (where measured; else 10 s after the cold sync). */
  rssAfterChanges?: number;
  /** Idle again: the agent's quiet period (IDLE_RELEASE_QUIET_MS) and 3 s more after the last change. */
  rssSteady?: number;
}

export interface ChangeSample {
  kind: 'idle' | 'busy';
  latencyMs: number;
  /** Latency beyond what the runner was allowed to wait (the min period since the previous sync's start). */
  excessMs: number;
  syncMs: number;
  ops: number;
}

export interface SizeResult {
  size: BenchSize;
  cold: ColdResult;
  changes?: ChangeSample[];
  /** Spawn → the same lists read by a child that parses nothing (bench/sync-floor.ts). */
  floor?: ListFloor;
  /** The raw load and nft -f, where run (not at the largest sizes). */
  compare?: { raw: RawLoadResult; nft: { ms: number; peakMiB: number } };
  load: number[];
  /** A second agent started over the rules the first left: spawn -> synced, and how (adopt or replace). */
  /** hwmMiB: the restarted agent's VmHWM once synced: a DaemonSet's limit must cover an upgrade's peak too. */
  restart?: { restartMs: number; mode: string; ops: number; hwmMiB: number };
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const r1 = (n: number) => Math.round(n * 10) / 10;
const r2 = (n: number) => Math.round(n * 100) / 100;
const f = (x: number) => (x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : x.toFixed(0));

export function printStartup(s: StartupResult): void {
  const m = s.median;
  const phases = STARTUP_PHASES.map((p) => `${p} ${f(m.phasesMs[p])}`).join(' + ');
  console.log(
    `start-up, ${STARTUP_SERVICES} services x ${STARTUP_ENDPOINTS} endpoints over TLS (median of ${s.runs.length}; load ` +
      `avg at start ${s.load.map((l) => l.toFixed(2)).join(' ')})`,
  );
  console.log(
    `  spawn → all rules ${f(m.totalMs)} ms = ${phases} ms (kernel ${f(m.kernelMs)} ms of the commit); runs ` +
      `${s.runs.map((r) => f(r.totalMs)).join(', ')} ms`,
  );
}

function printCompare(r: SizeResult): void {
  if (!r.compare) return;
  const { cold } = r;
  const { raw, nft } = r.compare;
  console.log(`  raw load (addon)  ${f(raw.commitMs)} ms (plan ${f(raw.planMs)} ms before it); ${f(raw.textBytes / MiB)} MiB of nft text`);
  console.log(`  nft -f            ${f(nft.ms)} ms, nft peak RSS ${f(nft.peakMiB)} MiB`);
  console.log(
    `  ratios            cold/raw ${f(cold.coldMs / raw.commitMs)}  sync/raw ${f(cold.syncMs / raw.commitMs)}  ` +
      `nft-f/cold ${f(nft.ms / cold.coldMs)}  nft-f/raw ${f(nft.ms / raw.commitMs)}`,
  );
  const h = raw.heapMiB;
  console.log(
    `  heap kept (raw child, after GC): node+modules ${f(h.base)}  streams ${f(h.streams)}  model ${f(h.model)}  ` +
      `reconciler ${f(h.reconciler)} (+ ops ${f(h.reconcilerWithOps - h.reconciler)} while committing)  ` +
      `external after commit ${f(raw.externalAfterCommitMiB)}  child RSS ${f(raw.rssMiB)} MiB`,
  );
  const st = raw.settled;
  console.log(
    `  raw child after commit + GC: RSS ${f(st.rss)}  heap ${f(st.heapUsed)}/${f(st.heapTotal)}  external ` +
      `${f(st.external)} (array buffers ${f(st.arrayBuffers)}) MiB`,
  );
}

/** Spawn → lists read (nothing parsed) + the kernel's time, and that over the kernel's time: where cold_over_kernel cannot go below. */
function floorOf(r: SizeResult): { ms: number; overKernel: number } | undefined {
  if (!r.floor) return undefined;
  const ms = r.floor.listedMs + r.cold.kernelMs;
  return { ms, overKernel: ms / r.cold.kernelMs };
}

/**
 * Two bounds of this build's design on cold/kernel, from the same cold start: where it would be if nothing after
 * the lists but the kernel took time (nothing reaches the kernel before the lists are read and parsed), and where it
 * would be if every core of the machine did the agent's work (all of its threads' CPU, spawn → synced) and nothing
 * else, with no core ever idle or waited for.
 */
function designBoundsOf(cold: ColdResult): { listsThenKernel: number; cpuOverCores: number; cores: number } {
  const cores = availableParallelism();
  return {
    listsThenKernel: (cold.bootMs + cold.listMs + cold.kernelMs) / cold.kernelMs,
    cpuOverCores: cold.cpuMs.process / cores / cold.kernelMs,
    cores,
  };
}

export function printSize(r: SizeResult, shape: string): void {
  const { cold, size } = r;
  console.log(
    `${size.label}: ${size.services} services x ${size.endpoints} endpoints (endpoint shape ${shape}): ${cold.ops} ops ` +
      `(load avg at start ${r.load.map((l) => l.toFixed(2)).join(' ')})`,
  );
  console.log(
    `  agent cold sync   ${f(cold.coldMs)} ms = boot ${f(cold.bootMs)} + list/ready ${f(cold.listMs)} + sync ` +
      `${f(cold.syncMs)} (+ ${f(cold.coldMs - cold.bootMs - cold.listMs - cold.syncMs)} rest)`,
  );
  console.log(
    `  kernel's share    ${f(cold.kernelMs)} ms of the sync's commits (${cold.kernelTransactions} transactions): ` +
      `cold/kernel ${f(cold.coldMs / cold.kernelMs)}`,
  );
  const cpu = cold.cpuMs;
  console.log(
    `  CPU to synced     JS thread ${f(cpu.jsThread)} ms (${f((100 * cpu.jsThread) / cold.coldMs)}% of the cold sync; ` +
      `/kernel ${f(cpu.jsThread / cold.kernelMs)}, where this build's cold/kernel cannot go below), waited for a core ` +
      `${f(cpu.jsThreadWaited ?? NaN)} ms; the other threads ${f(cpu.process - cpu.jsThread)} ms (the addon's, with the ` +
      `kernel's commit work, and V8's)`,
  );
  const bounds = designBoundsOf(cold);
  console.log(
    `  design bounds     cold/kernel if the sync after the lists were the kernel alone ${f(bounds.listsThenKernel)}; ` +
      `if the agent's CPU (all threads) kept all ${bounds.cores} cores busy ${f(bounds.cpuOverCores)}`,
  );
  const floor = floorOf(r);
  if (floor) {
    const { bootMs, listedMs, bytes, runs, retried } = r.floor!;
    const again = retried > 0 ? `, ${retried} stalled and started again` : '';
    console.log(
      `  floor             ${f(floor.ms)} ms = spawn -> lists read ${f(listedMs)} (boot ${f(bootMs)}, ` +
        `${f(bytes / MiB)} MiB, nothing parsed; quickest of ${runs}${again}) + the kernel: floor/kernel ${f(floor.overKernel)}`,
    );
  }
  if (r.restart) {
    const { restartMs, mode, ops, hwmMiB } = r.restart;
    console.log(
      `  restart           ${f(restartMs)} ms spawn -> synced over the rules left behind (${mode}, ${ops} ops), VmHWM ${f(hwmMiB)} MiB`,
    );
  }
  printCompare(r);
  console.log(
    `  agent memory      VmRSS ${f(cold.rss)} MiB after cold sync, ${f(cold.rssSettled)} MiB 3 s later, ` +
      `${f(cold.rssAfterChanges ?? NaN)} MiB right after the changes, ${f(cold.rssSteady ?? NaN)} MiB ` +
      `quiet again, VmHWM ${f(cold.hwm)} MiB`,
  );
  console.log(
    `  agent RSS by map   malloc main arena ${f(cold.smaps.brkHeap)}  anonymous (V8 heap, large/thread mallocs) ` +
      `${f(cold.smaps.anonymous)}  files ${f(cold.smaps.files)} MiB (3 s after cold sync)`,
  );
  const a = cold.atSync;
  if (a)
    console.log(
      `  agent at cold sync RSS ${a.rss}  V8 heap used ${a.heapUsed} of ${a.heapTotal}  external ${a.external} (array ` +
        `buffers ${a.arrayBuffers}) MiB`,
    );
  for (const kind of ['idle', 'busy'] as const) {
    const xs = r.changes?.filter((c) => c.kind === kind) ?? [];
    if (xs.length === 0) continue;
    const lat = xs.map((c) => c.latencyMs);
    const exc = xs.map((c) => c.excessMs);
    const sync = xs.map((c) => c.syncMs);
    console.log(
      `  one change (${kind}, ${xs.length}): event→kernel median ${f(median(lat))} max ${f(Math.max(...lat))} ms; beyond ` +
        `the allowed wait median ${f(median(exc))} max ${f(Math.max(...exc))} ms; sync itself median ` +
        `${f(median(sync))} max ${f(Math.max(...sync))} ms (${xs[0]!.ops} ops)`,
    );
  }
}

function sizeKeys(summary: Record<string, number | string>, r: SizeResult, minSyncMs: number): void {
  const k = r.size.label;
  summary[`cold_ms_${k}`] = Math.round(r.cold.coldMs);
  summary[`cold_sync_ms_${k}`] = Math.round(r.cold.syncMs);
  summary[`cold_list_ms_${k}`] = Math.round(r.cold.listMs);
  summary[`kernel_ms_${k}`] = Math.round(r.cold.kernelMs);
  summary[`kernel_transactions_${k}`] = r.cold.kernelTransactions;
  summary[`cold_over_kernel_${k}`] = r2(r.cold.coldMs / r.cold.kernelMs);
  const cpu = r.cold.cpuMs;
  summary[`js_thread_cpu_ms_${k}`] = cpu.jsThread;
  summary[`js_thread_cpu_over_kernel_${k}`] = r2(cpu.jsThread / r.cold.kernelMs);
  if (cpu.jsThreadWaited !== undefined) summary[`js_thread_waited_ms_${k}`] = cpu.jsThreadWaited;
  summary[`other_threads_cpu_ms_${k}`] = cpu.process - cpu.jsThread;
  const bounds = designBoundsOf(r.cold);
  summary[`lists_then_kernel_over_kernel_${k}`] = r2(bounds.listsThenKernel);
  summary[`cpu_over_cores_over_kernel_${k}`] = r2(bounds.cpuOverCores);
  const floor = floorOf(r);
  if (floor) {
    summary[`floor_lists_ms_${k}`] = Math.round(r.floor!.listedMs);
    summary[`floor_over_kernel_${k}`] = r2(floor.overKernel);
  }
  if (r.compare) {
    const { raw, nft } = r.compare;
    summary[`raw_load_ms_${k}`] = Math.round(raw.commitMs);
    summary[`nft_f_ms_${k}`] = Math.round(nft.ms);
    summary[`nft_peak_rss_mib_${k}`] = Math.round(nft.peakMiB);
    summary[`cold_${k}_over_raw_load`] = r1(r.cold.coldMs / raw.commitMs);
    summary[`cold_sync_${k}_over_raw_load`] = r2(r.cold.syncMs / raw.commitMs);
    summary[`nft_f_over_agent_cold_${k}`] = r2(nft.ms / r.cold.coldMs);
  }
  // Idle RSS: the larger of after the cold sync and quiet again after the changes.
  summary[`rss_mib_${k}`] = Math.round(Math.max(r.cold.rssSettled, r.cold.rssSteady ?? NaN));
  summary[`hwm_mib_${k}`] = Math.round(r.cold.hwm);
  if (r.restart) {
    summary[`restart_ms_${k}`] = Math.round(r.restart.restartMs);
    summary[`restart_over_cold_${k}`] = r2(r.restart.restartMs / r.cold.coldMs);
    summary[`restart_mode_${k}`] = r.restart.mode;
    summary[`restart_ops_${k}`] = r.restart.ops;
    summary[`restart_hwm_mib_${k}`] = Math.round(r.restart.hwmMiB);
  }
  summary[`rss_after_changes_mib_${k}`] = Math.round(r.cold.rssAfterChanges ?? NaN);
  if (r.changes) {
    const idle = r.changes.filter((c) => c.kind === 'idle');
    const busy = r.changes.filter((c) => c.kind === 'busy');
    summary[`one_change_${k}_ms_over_min_sync`] = Math.round(median(idle.map((c) => c.latencyMs)) - minSyncMs);
    summary[`one_change_${k}_event_to_kernel_ms_median`] = Math.round(median(idle.map((c) => c.latencyMs)));
    summary[`one_change_${k}_event_to_kernel_ms_max`] = Math.round(Math.max(...idle.map((c) => c.latencyMs)));
    summary[`one_change_${k}_busy_beyond_min_sync_ms_median`] = Math.round(median(busy.map((c) => c.excessMs)));
    summary[`one_change_${k}_busy_beyond_min_sync_ms_max`] = Math.round(Math.max(...busy.map((c) => c.excessMs)));
  }
}

/** The last-line JSON. */
export function summarize(
  shape: string,
  startup: StartupResult | undefined,
  results: readonly SizeResult[],
  minSyncMs: number,
): Record<string, number | string> {
  const summary: Record<string, number | string> = { endpoint_shape: shape };
  if (startup) {
    const m = startup.median;
    summary.startup_ms_1k = Math.round(m.totalMs);
    for (const p of STARTUP_PHASES) summary[`startup_1k_${p}_ms`] = Math.round(m.phasesMs[p]);
    summary.startup_1k_kernel_ms = Math.round(m.kernelMs);
    summary.startup_1k_loadavg_1m = r2(startup.load[0]!);
  }
  for (const r of results) {
    sizeKeys(summary, r, minSyncMs);
    summary[`loadavg_1m_${r.size.label}`] = r2(r.load[0]!);
  }
  summary.note =
    'idle runner syncs at once (min period counts from the previous sync start): one_change_*_ms_over_min_sync is ' +
    'negative by design; busy_beyond_min_sync is what a change costs past the period';
  summary.loadavg_1m_end = r2(loadavg()[0]!);
  return summary;
}

// bench:netlink — a kube-proxy-shaped ruleset (1k / 10k / 30k services x 2
// endpoints) loaded through the addon and, in the same run, rendered to nft
// text and loaded with `nft -f`, each in a fresh network namespace; then one
// incremental change (one service's endpoints) both ways, the median of five
// changes to different services on each side. Prints times, RSS,
// ratios and where the addon's time went (JS validation and encoding, the
// hand-off to the addon, the worker's build and the kernel's send); with
// strace installed, also the kernel's share of nft -f (its one sendmsg), which
// bounds the ratio any user space can reach. Then 100k map elements cross the
// boundary a few times (encode + hand-off on the JS thread). The last line is
// one JSON object. Run as root: npm run bench:netlink

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNetns, type NetNs } from '../test/helpers/netns.ts';
import { NetlinkDataplane, type CommitStats } from '../src/nft/netlink/netlink-dataplane.ts';
import { renderOperations } from '../src/nft/render-text.ts';
import type { NftMap, Operation } from '../src/nft/objects.ts';
import { elementOps, endpointChange, fullRuleset, TABLE } from './kube-proxy-ruleset.ts';
import { type NftLoad, nftLoadFile } from './nft-load.ts';

const sizes = (process.env.BENCH_SIZES ?? '1000,10000,30000').split(',').map(Number);
const dir = mkdtempSync(join(tmpdir(), 'knp-bench-'));
const MiB = 1024 * 1024;
const INCREMENTAL_SAMPLES = 5;

/** `text` written to `name` and loaded with `nft -f` inside ns. */
function nftLoad(ns: NetNs, text: string, name: string): NftLoad {
  const file = join(dir, name);
  writeFileSync(file, text);
  return nftLoadFile(ns, file);
}

/** The kernel's time inside nft's one batch sendmsg (strace -T), or NaN without strace. */
function nftKernelMs(ns: NetNs, file: string): number {
  const r = spawnSync('ip', ['netns', 'exec', ns.name, 'strace', '-T', '-e', 'trace=sendmsg', 'nft', '-f', file], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  if (r.error || r.status !== 0) return NaN;
  const times = [...r.stderr.matchAll(/^sendmsg\(.*<([0-9.]+)>$/gm)].map((m) => Number(m[1]) * 1000);
  return times.length ? Math.max(...times) : NaN;
}

const hasStrace = spawnSync('strace', ['-V']).status === 0;

/** A commit's stats with the time its transaction took to build and check (the JS thread's, before commit). */
type TimedCommit = CommitStats & { validateMs: number };

async function commitTimed(dp: NetlinkDataplane, ops: readonly Operation[]): Promise<TimedCommit> {
  const t0 = performance.now();
  const tx = dp.begin().queueAll(ops);
  const validateMs = performance.now() - t0;
  await dp.commit(tx);
  return { ...dp.lastCommit!, validateMs };
}

function breakdown(s: TimedCommit | undefined): string {
  if (!s) return '';
  return (
    `validate ${fmt(s.validateMs)} + encode ${fmt(s.encodeMs)} + hand-off ${fmt(s.handoffMs)} ms on the JS thread; ` +
    `worker: check ${fmt(s.parseMs)}, open socket ${fmt(s.openMs)}, build ${fmt(s.buildMs)} (cpu ${fmt(s.buildCpuMs)}), ` +
    `kernel send ${fmt(s.sendMs)} (cpu ${fmt(s.sendCpuMs)}) ms; ` +
    `${fmt(s.batchBytes / MiB)} MiB, ${s.messages} messages`
  );
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function countServices(ns: NetNs): number {
  const out = execFileSync('ip', ['netns', 'exec', ns.name, 'sh', '-c', `nft list map ip ${TABLE} service-ips | grep -c 'goto service-'`], {
    encoding: 'utf8',
  });
  return Number(out.trim());
}

const results: Record<string, number> = {};
const fmt = (n: number) => n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0);
const load0 = loadavg()[0]!;
results.loadavg_1m_start = Number(load0.toFixed(2));
console.log(
  `load average at start: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);

try {
  for (const n of sizes) {
    const full = fullRuleset(n);
    // Different services, so that every sample is a real change on both sides.
    const changes = Array.from({ length: INCREMENTAL_SAMPLES }, (_, k) => endpointChange(Math.floor(n / 2) + 7 * k));
    const map = full.find((o) => o.object.kind === 'map')!.object as NftMap;

    // Through the addon.
    const nsA = createNetns('knp-bench');
    let addonFull: number;
    let addonIncr: number;
    let addonRss: number;
    let fullStats: TimedCommit | undefined;
    let incrStats: TimedCommit | undefined;
    let addonIncrRange: [number, number];
    try {
      const dp = new NetlinkDataplane({ netns: nsA.path });
      const rss0 = process.memoryUsage().rss;
      let t0 = performance.now();
      fullStats = await commitTimed(dp, full);
      addonFull = performance.now() - t0;
      addonRss = (process.memoryUsage().rss - rss0) / MiB;
      const samples: number[] = [];
      const stats: TimedCommit[] = [];
      for (const change of changes) {
        t0 = performance.now();
        stats.push(await commitTimed(dp, change));
        samples.push(performance.now() - t0);
      }
      addonIncr = median(samples);
      addonIncrRange = [Math.min(...samples), Math.max(...samples)];
      incrStats = stats[samples.indexOf(addonIncr)];
      if (countServices(nsA) !== n) throw new Error('addon: not every service landed');
    } finally {
      nsA.destroy();
    }

    // Through nft -f, from the same objects rendered to text.
    const nsN = createNetns('knp-bench');
    let nftFull: NftLoad;
    let nftIncr: NftLoad;
    let nftIncrRange: [number, number];
    let textMiB: number;
    const text = renderOperations(full);
    try {
      textMiB = Buffer.byteLength(text) / MiB;
      nftFull = nftLoad(nsN, text, `full-${n}.nft`);
      const runs = changes.map((change, k) => nftLoad(nsN, renderOperations(change, [map]), `incr-${n}-${k}.nft`));
      const ms = runs.map((r) => r.ms);
      nftIncr = { ms: median(ms), peakMiB: Math.max(...runs.map((r) => r.peakMiB)) };
      nftIncrRange = [Math.min(...ms), Math.max(...ms)];
      if (countServices(nsN) !== n) throw new Error('nft -f: not every service landed');
    } finally {
      nsN.destroy();
    }

    // The kernel's share of nft -f, in a separate run (strace slows nft itself).
    let nftKernel = NaN;
    if (hasStrace) {
      const nsK = createNetns('knp-bench');
      try {
        nftKernel = nftKernelMs(nsK, join(dir, `full-${n}.nft`));
      } finally {
        nsK.destroy();
      }
    }

    const k = `${n / 1000}k`;
    results[`addon_full_ms_${k}`] = Math.round(addonFull);
    results[`nft_f_full_ms_${k}`] = Math.round(nftFull.ms);
    results[`addon_incremental_ms_${k}`] = Number(addonIncr.toFixed(1));
    results[`nft_f_incremental_ms_${k}`] = Number(nftIncr.ms.toFixed(1));
    results[`nft_f_over_addon_full_${k}`] = Number((nftFull.ms / addonFull).toFixed(2));
    results[`nft_f_over_addon_incremental_${k}`] = Number((nftIncr.ms / addonIncr).toFixed(2));
    results[`nft_peak_rss_mib_${k}`] = Math.round(nftFull.peakMiB);
    results[`addon_rss_growth_mib_${k}`] = Math.round(addonRss);
    if (fullStats) {
      results[`addon_js_ms_${k}`] = Math.round(fullStats.validateMs + fullStats.encodeMs + fullStats.handoffMs);
      results[`addon_build_cpu_ms_${k}`] = Math.round(fullStats.buildCpuMs);
      results[`addon_kernel_send_ms_${k}`] = Math.round(fullStats.sendMs);
    }
    if (!Number.isNaN(nftKernel)) {
      results[`nft_f_kernel_sendmsg_ms_${k}`] = Math.round(nftKernel);
      // No user space can beat nft -f by more than this: the kernel's work is the same.
      results[`nft_f_over_its_kernel_share_${k}`] = Number((nftFull.ms / nftKernel).toFixed(2));
    }
    console.log(
      `${String(n).padStart(6)} services x 2 endpoints (${full.length} ops, ${fmt(textMiB)} MiB of nft text)\n` +
        `  full load:   addon ${fmt(addonFull)} ms   nft -f ${fmt(nftFull.ms)} ms   ratio ${fmt(nftFull.ms / addonFull)}x   ` +
        `(nft peak RSS ${fmt(nftFull.peakMiB)} MiB; this process grew ${fmt(addonRss)} MiB, peak ` +
        `${fmt(process.resourceUsage().maxRSS / 1024)} MiB)\n` +
        `  one service: addon ${fmt(addonIncr)} ms (${fmt(addonIncrRange[0])}-${fmt(addonIncrRange[1])})   ` +
        `nft -f ${fmt(nftIncr.ms)} ms (${fmt(nftIncrRange[0])}-${fmt(nftIncrRange[1])})   ratio ` +
        `${fmt(nftIncr.ms / addonIncr)}x (medians of ${INCREMENTAL_SAMPLES})\n` +
        `  addon full:  ${breakdown(fullStats)}\n` +
        `  addon one:   ${breakdown(incrStats)}` +
        (Number.isNaN(nftKernel)
          ? ''
          : `\n  nft -f full: the kernel's sendmsg took ${fmt(nftKernel)} ms of it (so at most ` +
            `${fmt(nftFull.ms / nftKernel)}x is reachable)`),
    );
  }

  // 100k map elements across the boundary: encode + hand-off on the JS thread,
  // the first time (cold) and the median of five more.
  const nsE = createNetns('knp-bench');
  try {
    const dp = new NetlinkDataplane({ netns: nsE.path });
    const elements = fullRuleset(0).concat(elementOps(100_000));
    const runs: TimedCommit[] = [];
    for (let r = 0; r < 6; r++) {
      runs.push(await commitTimed(dp, r === 0 ? elements : elements.slice(elements.length - 100_000)));
    }
    const warm = runs.slice(1);
    const boundary = (s: TimedCommit) => s.encodeMs + s.handoffMs;
    results.encode_100k_elements_ms = Number(median(warm.map((s) => s.encodeMs)).toFixed(1));
    results.boundary_100k_elements_ms = Number(median(warm.map(boundary)).toFixed(1));
    results.boundary_100k_elements_first_ms = Number(boundary(runs[0]!).toFixed(1));
    results.validate_100k_elements_ms = Number(median(warm.map((s) => s.validateMs)).toFixed(1));
    results.kernel_send_100k_elements_ms = Math.round(median(warm.map((s) => s.sendMs)));
    console.log(
      `100k elements: boundary (encode + hand-off) ${fmt(results.boundary_100k_elements_ms)} ms median of 5 ` +
        `(first ${fmt(results.boundary_100k_elements_first_ms)} ms); encode ${fmt(results.encode_100k_elements_ms)} ms, ` +
        `validate ${fmt(results.validate_100k_elements_ms)} ms; then ${breakdown(warm[warm.length - 1])}`,
    );
  } finally {
    nsE.destroy();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
results.loadavg_1m_end = Number(loadavg()[0]!.toFixed(2));
console.log(
  `load average at end: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
console.log(JSON.stringify(results));

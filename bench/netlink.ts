// bench:netlink — a kube-proxy-shaped ruleset (1k / 10k / 30k services x 2
// endpoints) loaded through the addon and, in the same run, rendered to nft
// text and loaded with `nft -f`, each in a fresh network namespace; then one
// incremental change (one service's endpoints) both ways. Prints times, RSS and
// ratios; the last line is one JSON object. Run as root: npm run bench:netlink

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNetns, type NetNs } from '../test/helpers/netns.ts';
import { NetlinkDataplane } from '../src/nft/netlink-dataplane.ts';
import { renderOperations } from '../src/nft/render-text.ts';
import type { NftMap, Operation } from '../src/nft/objects.ts';
import { endpointChange, fullRuleset, TABLE } from './kube-proxy-ruleset.ts';

const sizes = (process.env.BENCH_SIZES ?? '1000,10000,30000').split(',').map(Number);
const dir = mkdtempSync(join(tmpdir(), 'knp-bench-'));
const MiB = 1024 * 1024;

/** `nft -f file` inside ns: wall time and nft's peak RSS (from /usr/bin/time -v). */
function nftLoad(ns: NetNs, text: string, name: string): { ms: number; peakMiB: number } {
  const file = join(dir, name);
  writeFileSync(file, text);
  const t0 = performance.now();
  const r = spawnSync('ip', ['netns', 'exec', ns.name, '/usr/bin/time', '-v', 'nft', '-f', file], { encoding: 'utf8', maxBuffer: 1 << 26 });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`nft -f failed: ${r.stderr.slice(0, 2000)}`);
  const kb = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(r.stderr)?.[1] ?? NaN);
  return { ms, peakMiB: kb / 1024 };
}

function countServices(ns: NetNs): number {
  const out = execFileSync('ip', ['netns', 'exec', ns.name, 'sh', '-c', `nft list map ip ${TABLE} service-ips | grep -c 'goto service-'`], { encoding: 'utf8' });
  return Number(out.trim());
}

const results: Record<string, number> = {};
const fmt = (n: number) => n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0);

try {
  for (const n of sizes) {
    const full = fullRuleset(n);
    const change = endpointChange(Math.floor(n / 2));
    const map = full.find((o) => o.object.kind === 'map')!.object as NftMap;

    // Through the addon.
    const nsA = createNetns('knp-bench');
    let addonFull: number;
    let addonIncr: number;
    let addonRss: number;
    try {
      const dp = new NetlinkDataplane({ netns: nsA.path });
      const rss0 = process.memoryUsage().rss;
      let t0 = performance.now();
      await dp.commit(full);
      addonFull = performance.now() - t0;
      addonRss = (process.memoryUsage().rss - rss0) / MiB;
      t0 = performance.now();
      await dp.commit(change);
      addonIncr = performance.now() - t0;
      if (countServices(nsA) !== n) throw new Error('addon: not every service landed');
    } finally {
      nsA.destroy();
    }

    // Through nft -f, from the same objects rendered to text.
    const nsN = createNetns('knp-bench');
    let nftFull: { ms: number; peakMiB: number };
    let nftIncr: { ms: number; peakMiB: number };
    let textMiB: number;
    try {
      const text = renderOperations(full);
      textMiB = Buffer.byteLength(text) / MiB;
      nftFull = nftLoad(nsN, text, `full-${n}.nft`);
      nftIncr = nftLoad(nsN, renderOperations(change, [map]), `incr-${n}.nft`);
      if (countServices(nsN) !== n) throw new Error('nft -f: not every service landed');
    } finally {
      nsN.destroy();
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
    console.log(
      `${String(n).padStart(6)} services x 2 endpoints (${full.length} ops, ${fmt(textMiB)} MiB of nft text)\n` +
        `  full load:   addon ${fmt(addonFull)} ms   nft -f ${fmt(nftFull.ms)} ms   ratio ${fmt(nftFull.ms / addonFull)}x   ` +
        `(nft peak RSS ${fmt(nftFull.peakMiB)} MiB; this process grew ${fmt(addonRss)} MiB, peak ${fmt(process.resourceUsage().maxRSS / 1024)} MiB)\n` +
        `  one service: addon ${fmt(addonIncr)} ms   nft -f ${fmt(nftIncr.ms)} ms   ratio ${fmt(nftIncr.ms / addonIncr)}x`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(JSON.stringify(results));

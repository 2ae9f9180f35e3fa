// The benchmarks' baseline: a file of nft text loaded with `nft -f` inside a
// network namespace, timed from outside, with nft's peak RSS.

import { spawnSync } from 'node:child_process';
import type { NetNs } from '../test/helpers/netns.ts';

export interface NftLoad {
  ms: number;
  /** nft's maximum resident set size (from /usr/bin/time -v). */
  peakMiB: number;
}

export function nftLoadFile(ns: NetNs, file: string): NftLoad {
  const t0 = performance.now();
  const r = spawnSync('ip', ['netns', 'exec', ns.name, '/usr/bin/time', '-v', 'nft', '-f', file], { encoding: 'utf8', maxBuffer: 1 << 26 });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`nft -f failed: ${r.stderr.slice(0, 2000)}`);
  const kb = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(r.stderr)?.[1] ?? NaN);
  return { ms, peakMiB: kb / 1024 };
}

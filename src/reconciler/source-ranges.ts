// loadBalancerSourceRanges as one set lookup. kube-proxy's nftables mode
// writes them into the firewall chain's rule, `ip saddr != { r1, r2, ... }
// drop`; one `saddr != cidr` match per range in one rule (what this renderer
// did before) makes a rule that grows with the list: 60 ranges were refused
// by the kernel (EINVAL) and 400 passed the 64 KiB a rule's expressions may
// take. A named interval set per Service port keeps the rule one lookup
// whatever the list, and an update of the list touches only the set's
// elements (no new rule, so no re-validation of the whole table).
//
// An interval set refuses overlapping elements (EEXIST), so ranges inside
// another range of the list are left out: the allowed sources stay the same.
// Pure.

import type { DataType } from '../nft/objects.ts';
import { compareBytes, prefixRange } from '../nft/values.ts';

/**
 * The CIDRs (canonical, of one family's `type`) without those another one of
 * the list contains, sorted by start address. Prefixes either nest or do not
 * meet, so a sweep in start order (the shorter prefix first on a tie) keeps
 * exactly the outermost ones.
 */
export function outermostPrefixes(type: DataType, cidrs: readonly string[]): string[] {
  const ranges = cidrs.map((text) => ({ text, ...prefixRange(type, text) }));
  ranges.sort((a, b) => compareBytes(a.start, b.start) || compareEnds(b.endExclusive, a.endExclusive));
  const out: string[] = [];
  /** Exclusive end of the last kept range; null once one runs to the top of the space. */
  let end: Uint8Array | null | undefined;
  for (const r of ranges) {
    if (end === null || (end !== undefined && compareBytes(r.start, end) < 0)) continue;
    out.push(r.text);
    end = r.endExclusive;
  }
  return out;
}

/** Exclusive ends, null (the top of the space) last. */
function compareEnds(a: Uint8Array | null, b: Uint8Array | null): number {
  if (a === null) return b === null ? 0 : 1;
  if (b === null) return -1;
  return compareBytes(a, b);
}

// Which of the node's interfaces belong in the offload flowtable (KEP-4963).
//
// Link state does not matter: the kernel accepts any existing netdev in a
// flowtable, up or down, and a down device simply carries no flows. Keeping
// down links in the list means a flap (down/up) changes nothing and costs no
// commit, and a pod's veth is already attached by the time it comes up. What
// matters is existence: naming a device that is gone fails the whole commit
// with ENOENT, so the list is recomputed from the latest link state before
// every commit.
//
// Older kernels (6.1, the flowtable VM's) refuse a flowtable hook list of 256
// devices or more with EFBIG (NFT_NETDEVICE_MAX; a 2023 netfilter patch removes
// that cap). The caller decides what to do past it; this function only selects.
//
// Loopback is never a member: nothing is forwarded through it, which is the
// only traffic a flowtable accelerates.

import type { LinkMap } from './link-state.ts';

/** A regular expression tested against the name, or a list of exact names. */
export type InterfaceMatcher = RegExp | readonly string[];

export interface FlowtableDeviceFilter {
  /** Only interfaces that match (default: all but loopback). */
  include?: InterfaceMatcher;
  /** Minus the interfaces that match; applied after include. */
  exclude?: InterfaceMatcher;
}

/** Sorted (by code unit, so the order is stable everywhere), duplicate-free device names. */
export function flowtableDevices(links: LinkMap, opts: FlowtableDeviceFilter = {}): string[] {
  const include = opts.include === undefined ? undefined : matcher(opts.include);
  const exclude = opts.exclude === undefined ? undefined : matcher(opts.exclude);
  const names = new Set<string>();
  for (const link of links.values()) {
    if (link.loopback) continue;
    if (include !== undefined && !include(link.name)) continue;
    if (exclude?.(link.name)) continue;
    names.add(link.name);
  }
  return [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

function matcher(m: InterfaceMatcher): (name: string) => boolean {
  if (m instanceof RegExp) {
    // A /g or /y expression carries lastIndex from one test() to the next and
    // would skip every other match; each name is tested from the start.
    return (name) => {
      m.lastIndex = 0;
      return m.test(name);
    };
  }
  const set = new Set(m);
  return (name) => set.has(name);
}

// Helpers for tests that program nf_tables in a fresh network namespace.

import { afterEach } from 'vitest';
import { createNetns, type NetNs } from '../helpers/netns.ts';
import { NftCommitError } from '../../src/nft/dataplane.ts';
import { NetlinkDataplane } from '../../src/nft/netlink-dataplane.ts';

export interface Kernel {
  ns: NetNs;
  dp: NetlinkDataplane;
}

const open: NetNs[] = [];
afterEach(() => {
  for (const ns of open.splice(0)) ns.destroy();
});

/** A fresh namespace (deleted after the test) and a dataplane programming it. */
export function kernel(): Kernel {
  const ns = createNetns('knp-nl');
  open.push(ns);
  return { ns, dp: new NetlinkDataplane({ netns: ns.path }) };
}

/** Objects of one kind from `nft -j list ruleset`. */
export function nftList(ns: NetNs, kind: string): Array<Record<string, any>> {
  return ns.nftJson().nftables.filter((o) => kind in o).map((o) => o[kind]);
}

export function nftText(ns: NetNs): string {
  return ns.exec('nft', ['list', 'ruleset']);
}

/** Runs fn and returns the NftCommitError it threw (fails the test otherwise). */
export async function commitError(fn: () => Promise<unknown>): Promise<NftCommitError> {
  try {
    await fn();
  } catch (e) {
    if (e instanceof NftCommitError) return e;
    throw e;
  }
  throw new Error('expected the commit to fail');
}

// Helpers for tests that program nf_tables in a fresh network namespace.

import { afterEach } from 'vitest';
import { createNetns, type NetNs } from '../helpers/netns.ts';
import { NftCommitError } from '../../src/nft/dataplane.ts';
import { NetlinkDataplane } from '../../src/nft/netlink/netlink-dataplane.ts';
import type { NftMap, Operation } from '../../src/nft/objects.ts';

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
  return ns
    .nftJson()
    .nftables.filter((o) => kind in o)
    .map((o) => o[kind]);
}

/**
 * What the kernel holds of ip table `name` as our listing reads it, each kind
 * in an order of its own (handles aside); undefined without the table.
 */
export async function holding(dp: NetlinkDataplane, name: string) {
  const l = await dp.list('ip', name);
  if (!l) return undefined;
  const text = (x: unknown) => JSON.stringify(x);
  return {
    sets: l.sets.map(text).sort(),
    chains: l.chains.map(text).sort(),
    rules: l.rules.map((r) => text({ ...r, handle: undefined })).sort(),
    elements: l.elements.map(text).sort(),
  };
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

/**
 * Adds table `table` (ip) with chain c and verdict map `map` (ipv4_addr .
 * inet_proto . inet_service) of `n` elements: 10.0.0.0 + i . tcp . port, each
 * goto c: the large batch of the memory, handoff and 100k-element tests.
 */
export function verdictMapOps(table: string, n: number, port: string, map = 'm'): Operation[] {
  const m: NftMap = {
    kind: 'map',
    family: 'ip',
    table,
    name: map,
    keyType: ['ipv4_addr', 'inet_proto', 'inet_service'],
    dataType: 'verdict',
  };
  const ops: Operation[] = [
    { verb: 'add', object: { kind: 'table', family: 'ip', name: table } },
    { verb: 'add', object: { kind: 'chain', family: 'ip', table, name: 'c' } },
    { verb: 'add', object: m },
  ];
  for (let i = 0; i < n; i++) {
    const key = [`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, 'tcp', port];
    ops.push({ verb: 'add', object: { kind: 'element', family: 'ip', table, set: map, key, value: { verdict: 'goto', chain: 'c' } } });
  }
  return ops;
}

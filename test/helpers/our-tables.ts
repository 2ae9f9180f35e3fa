// Our tables as the kernel lists them (`nft -j`, the CLI as an oracle), with
// what depends on history rather than content taken out: handles, creation
// order, the order a hash set iterates its elements in. Rule order is kept.

import type { NetNs } from './netns.ts';

export interface ListedTable {
  table?: unknown;
  chains: Record<string, unknown[]>;
  sets: Record<string, { elem?: string[] } & Record<string, unknown>>;
}

export function ourTables(ns: NetNs, name = 'kube-nft-proxy'): Record<string, ListedTable> {
  const out: Record<string, ListedTable> = {};
  for (const o of ns.nftJson().nftables) {
    const [kind, v] = Object.entries(o)[0] as [string, any];
    if ((kind === 'table' ? v.name : v.table) !== name) continue;
    out[v.family] ??= { chains: {}, sets: {} };
    const t = out[v.family]!;
    const { handle, ...rest } = v;
    void handle;
    if (kind === 'table') t.table = rest;
    else if (kind === 'chain') t.chains[v.name] ??= [];
    else if (kind === 'rule') {
      t.chains[v.chain] ??= [];
      t.chains[v.chain]!.push(rest.expr);
    } else if (kind === 'set' || kind === 'map')
      t.sets[v.name] = { ...rest, elem: Array.isArray(rest.elem) ? rest.elem.map((e: unknown) => JSON.stringify(e)).sort() : rest.elem };
  }
  return out;
}

// Full syncs: the whole desired ruleset in one transaction, without trusting
// what we remember of the kernel.
//
// - replace (start-up, recovery): `add table; delete table; add table; ...everything`
//   for each family. Whatever a previous run (or anyone) left in our tables is
//   gone and the new ruleset is in place in the same atomic commit: packets see
//   either the old rules or the new ones, never an empty table. The add before
//   the delete makes the delete succeed whether or not the table existed. Tables
//   of families no longer configured are removed the same way. Dynamic affinity
//   entries are lost (clients may change endpoint once).
// - reassert (periodic): every object added (a no-op where it exists), every
//   chain and every non-dynamic set/map flushed and refilled. Repairs rules and
//   elements changed or removed behind our back and keeps affinity entries;
//   objects someone else added to our table stay (only `replace` removes them).
//
// Both leave the kernel holding exactly what an incremental sync to the same
// desired ruleset leaves (property-tested).

import type { IPFamily } from '../k8s/types.ts';
import type { Chain, Operation, Table } from '../nft/objects.ts';
import { objectKey } from '../nft/objects.ts';
import { emptyStats, type StaleChain, type SyncPlan, type SyncState } from './diff.ts';
import type { Fragment } from './fragment.ts';
import { forEachElement, type Ruleset } from './ruleset.ts';
import { tableFamily } from './statements.ts';

export type FullSyncMode = 'replace' | 'reassert';

function* fragments(r: Ruleset): Generator<Fragment> {
  yield* r.skeletons.values();
  for (const s of r.services.values()) yield s.fragment;
}

const ALL_FAMILIES: readonly IPFamily[] = ['IPv4', 'IPv6'];

export function planFullSync(desired: Ruleset, mode: FullSyncMode, state?: SyncState): SyncPlan {
  const stats = emptyStats();
  // One array, filled phase by phase (a pass over the fragments each): at 10k
  // services x 10 endpoints that is 440k operations, not worth copying twice.
  const ops: Operation[] = [];

  const wanted = new Set(desired.tables.map(objectKey));
  for (const f of ALL_FAMILIES) {
    const table: Table = { kind: 'table', family: tableFamily(f), name: desired.config.tableName };
    if (mode === 'replace' || !wanted.has(objectKey(table))) {
      ops.push({ verb: 'add', object: table }, { verb: 'delete', object: table });
    }
  }
  for (const t of desired.tables) ops.push({ verb: 'add', object: t });

  const frags = [...fragments(desired)];
  for (const frag of frags) {
    for (const s of frag.sets) {
      ops.push({ verb: 'add', object: s });
      if (mode === 'reassert' && !s.flags?.includes('dynamic')) ops.push({ verb: 'flush', object: s });
      stats.setsAdded++;
    }
  }
  for (const frag of frags) for (const f of frag.flowtables) ops.push({ verb: 'add', object: f });
  for (const frag of frags) {
    for (const c of frag.chains) {
      ops.push({ verb: 'add', object: c.chain });
      if (mode === 'reassert') ops.push({ verb: 'flush', object: c.chain });
      stats.chainsAdded++;
    }
  }
  for (const frag of frags) {
    for (const c of frag.chains) {
      for (const r of c.rules) ops.push({ verb: 'add', object: r });
      stats.rulesAdded += c.rules.length;
    }
  }
  forEachElement(desired, (e) => {
    ops.push({ verb: 'add', object: e });
    stats.elementsAdded++;
  });

  // A replace removed every stale chain with its table; a reassert keeps them
  // (flushed, unreferenced) until their delay has passed, unless wanted again.
  const stale = new Map<string, StaleChain>();
  if (mode === 'reassert' && state && state.staleChains.size > 0) {
    const wantedChains = new Set<string>();
    for (const frag of frags) for (const c of frag.chains) wantedChains.add(objectKey(c.chain));
    for (const [k, s] of state.staleChains) {
      if (wantedChains.has(k) || !wanted.has(objectKey(tableOf(s.chain)))) continue;
      stale.set(k, s);
    }
  }

  return { ops, next: { applied: desired, staleChains: stale }, stats };
}

function tableOf(c: Chain): Table {
  return { kind: 'table', family: c.family, name: c.table };
}

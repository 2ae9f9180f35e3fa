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
import type { Chain, Element, NftMap, NftSet, Operation, Table } from '../nft/objects.ts';
import { objectKey } from '../nft/objects.ts';
import { emptyStats, listedPlan, type StaleChain, type SyncPlan, type SyncState, type SyncStats } from './diff.ts';
import { hairpinElement } from './element-claims.ts';
import { elementCount, elementOf, type Fragment, type SlotRun } from './fragment.ts';
import { forEachFragmentItem, type Ruleset } from './ruleset.ts';
import { tableFamily } from './statements.ts';

export type FullSyncMode = 'replace' | 'reassert';

/** One set's elements, runs of its endpoint slots whole. */
export type ElementGroup = Array<Element | SlotRun>;

function* fragments(r: Ruleset): Generator<Fragment> {
  yield* r.skeletons.values();
  for (const s of r.services.values()) yield s.fragment;
}

const ALL_FAMILIES: readonly IPFamily[] = ['IPv4', 'IPv6'];

/** A full sync's plan, its operations listed. */
export function planFullSync(desired: Ruleset, mode: FullSyncMode, state?: SyncState): SyncPlan {
  return listedPlan(planGeneratedFullSync(desired, mode, state));
}

/**
 * A full sync's plan whose operations are made on demand (SyncPlan.generated):
 * at 100k Services x 10 endpoints a listed plan is 2.5M operation objects and
 * a million hairpin elements, ~250 MB at the sync's peak, for a list that is
 * only ever walked in order. Made once to be checked and encoded together
 * and, after a failure, again to be blamed.
 */
export function planGeneratedFullSync(desired: Ruleset, mode: FullSyncMode, state?: SyncState): SyncPlan {
  // Grouped once for the makings of this sync, and held weakly as the
  // renderings are: a blame after the kernel's answer, a later turn, may
  // group them again, while the elements are not kept for the kernel's wait.
  const grouped = elementsBySet(desired);
  let held = new WeakRef(grouped);
  const groups = (): ElementGroup[] => {
    let g = held.deref();
    if (!g) {
      g = elementsBySet(desired);
      held = new WeakRef(g);
    }
    return g;
  };
  const source = () => fullSyncOperations(desired, mode, groups());
  const { length, stats } = countFullSync(desired, mode, grouped);
  return { ops: [], generated: { source, length }, next: nextState(desired, mode, state), stats };
}

/**
 * A full sync's operations, in the order they are committed: tables, sets,
 * flowtables, chains, rules, then the elements grouped by set
 * (elementsBySet: the kernel pays per message, and a streamed encoder cannot
 * group them itself), the hairpin ones last, made from their counts.
 */
function* fullSyncOperations(desired: Ruleset, mode: FullSyncMode, elementGroups: readonly ElementGroup[]): Generator<Operation> {
  for (const table of replacedTables(desired, mode)) {
    yield { verb: 'add', object: table };
    yield { verb: 'delete', object: table };
  }
  for (const t of desired.tables) yield { verb: 'add', object: t };

  const frags = [...fragments(desired)];
  for (const frag of frags) {
    for (const s of frag.sets) {
      yield { verb: 'add', object: s };
      if (flushesSet(s, mode)) yield { verb: 'flush', object: s };
    }
  }
  for (const frag of frags) for (const f of frag.flowtables) yield { verb: 'add', object: f };
  for (const frag of frags) {
    for (const c of frag.chains) {
      yield { verb: 'add', object: c.chain };
      if (mode === 'reassert') yield { verb: 'flush', object: c.chain };
    }
  }
  for (const frag of frags) for (const c of frag.chains) for (const r of c.rules) yield { verb: 'add', object: r };
  frags.length = 0;

  for (const group of elementGroups) {
    for (const item of group) for (let i = 0, n = elementCount(item); i < n; i++) yield { verb: 'add', object: elementOf(item, i) };
  }
  for (const [family, counts] of desired.hairpin)
    for (const ip of counts.keys()) yield { verb: 'add', object: hairpinElement(family, desired.config.tableName, ip) };
}

/**
 * The fragments' elements (those `keep` wants, when given) by set, sets in
 * order of first appearance, runs of endpoint slots kept whole (SlotRun: made
 * into elements as they are walked). They come in same-set runs: the index is
 * asked only where one ends.
 */
export function elementsBySet(desired: Ruleset, keep?: (item: Element | SlotRun) => boolean): ElementGroup[] {
  const groups: ElementGroup[] = [];
  const bySet = new Map<string, ElementGroup>();
  let last: Element | SlotRun | undefined;
  let group: ElementGroup = [];
  forEachFragmentItem(desired, (item) => {
    if (keep !== undefined && !keep(item)) return;
    if (last === undefined || item.set !== last.set || item.table !== last.table || item.family !== last.family) {
      const key = `${item.family} ${item.table} ${item.set}`;
      let g = bySet.get(key);
      if (!g) {
        g = [];
        bySet.set(key, g);
        groups.push(g);
      }
      group = g;
    }
    last = item;
    group.push(item);
  });
  return groups;
}

/**
 * Tables emptied by an add and a delete (which succeeds whether or not the
 * table existed): every family's for a replace, the unwanted ones' for a reassert.
 */
function replacedTables(desired: Ruleset, mode: FullSyncMode): Table[] {
  const wanted = new Set(desired.tables.map(objectKey));
  return ALL_FAMILIES.map((f): Table => ({ kind: 'table', family: tableFamily(f), name: desired.config.tableName })).filter(
    (t) => mode === 'replace' || !wanted.has(objectKey(t)),
  );
}

/** A reassert refills every set but the dynamic ones (affinity entries stay). */
function flushesSet(s: NftSet | NftMap, mode: FullSyncMode): boolean {
  return mode === 'reassert' && !s.flags?.includes('dynamic');
}

/**
 * How many operations fullSyncOperations makes, and what they add, counted
 * from the ruleset without making them (a full sync's are made only to be
 * checked and encoded).
 */
function countFullSync(desired: Ruleset, mode: FullSyncMode, elementGroups: readonly ElementGroup[]): { length: number; stats: SyncStats } {
  const stats = emptyStats();
  let length = 2 * replacedTables(desired, mode).length + desired.tables.length;
  for (const frag of fragments(desired)) {
    for (const s of frag.sets) length += flushesSet(s, mode) ? 2 : 1;
    stats.setsAdded += frag.sets.length;
    length += frag.flowtables.length;
    stats.chainsAdded += frag.chains.length;
    for (const c of frag.chains) stats.rulesAdded += c.rules.length;
  }
  for (const group of elementGroups) for (const item of group) stats.elementsAdded += elementCount(item);
  for (const counts of desired.hairpin.values()) stats.elementsAdded += counts.size;
  length += stats.chainsAdded * (mode === 'reassert' ? 2 : 1) + stats.rulesAdded + stats.elementsAdded;
  return { length, stats };
}

/**
 * What the state is once the sync landed. A replace removed every stale chain
 * with its table; a reassert keeps them (flushed, unreferenced) until their
 * delay has passed, unless wanted again.
 */
function nextState(desired: Ruleset, mode: FullSyncMode, state: SyncState | undefined): SyncState {
  const stale = new Map<string, StaleChain>();
  if (mode === 'reassert' && state && state.staleChains.size > 0) {
    const wanted = new Set(desired.tables.map(objectKey));
    const wantedChains = new Set<string>();
    for (const frag of fragments(desired)) for (const c of frag.chains) wantedChains.add(objectKey(c.chain));
    for (const [k, s] of state.staleChains) {
      if (wantedChains.has(k) || !wanted.has(objectKey(tableOf(s.chain)))) continue;
      stale.set(k, s);
    }
  }
  return { applied: desired, staleChains: stale };
}

function tableOf(c: Chain): Table {
  return { kind: 'table', family: c.family, name: c.table };
}

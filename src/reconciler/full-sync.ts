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
//
// The base chains and their rules come last: everything before them hooks
// nothing, so that where the kernel holds no table of ours the operations
// before them can be committed in transactions of their own while the rest
// are encoded (Transaction.stageable), none of them seen by a packet until
// the last transaction hooks them. (A flowtable among them is on its devices'
// ingress at once, but holds no flow until a base chain's rule adds one.)

import type { IPFamily } from '../k8s/types.ts';
import type { Chain, Element, NftMap, NftSet, Operation, Table } from '../nft/objects.ts';
import { objectKey } from '../nft/objects.ts';
import { emptyStats, listedPlan, type StaleChain, type SyncPlan, type SyncState, type SyncStats } from './diff.ts';
import { HairpinElements, skeletonOwner } from './element-claims.ts';
import { type ChainSpec, emptyTally, type Fragment, isDynamicSet, type SlotRun, SlotElements, tallyFragment } from './fragment.ts';
import type { GeneratedItem } from '../nft/element-run.ts';
import { forEachFragmentItem, forEachItemOf, type Ruleset } from './ruleset.ts';
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
 * and, after a failure, again to be blamed. Of a ruleset rendered without
 * keeping its renderings (Ruleset.unkept), each fragment is rendered again as
 * the operations reach it and dropped once they have passed it.
 */
export function planGeneratedFullSync(desired: Ruleset, mode: FullSyncMode, state?: SyncState): SyncPlan {
  const items = () => fullSyncItems(desired, mode);
  const { length, stats } = countFullSync(desired, mode);
  const hookedFrom = length - hookOperationCount(desired, mode);
  return { ops: [], generated: { items, length, hookedFrom }, next: nextState(desired, mode, state), stats };
}

/**
 * A full sync's operations, in the order they are committed: tables, then
 * fragment by fragment (the skeletons' first: the ports' rules use their
 * chains and maps, a port's rules only its own objects and the skeleton's)
 * its sets, flowtables, chains, rules and elements, so that none has to be
 * held past its turn. Runs of endpoint slots are the exception: a shared
 * endpoint map's come from every port, and are gathered by set (the kernel
 * pays per message, and a streamed encoder cannot group them itself); they
 * follow, and the hairpin elements last, made from their counts; both as
 * runs (ElementRun), which a streamed encoder writes without making each operation.
 */
function* fullSyncItems(desired: Ruleset, mode: FullSyncMode): Generator<GeneratedItem> {
  for (const table of replacedTables(desired, mode)) {
    yield { verb: 'add', object: table };
    yield { verb: 'delete', object: table };
  }
  for (const t of desired.tables) yield { verb: 'add', object: t };

  const slots = new ElementGrouper();
  // A fragment's other elements, with those of any fragments after it that add no object (a port that only rejects, say).
  const elements: Array<Element | undefined> = [];
  const take = (item: Element | SlotRun): void => {
    if (item.kind === 'slots') slots.add(item);
    else elements.push(item);
  };
  for (const [owner, f] of ownedFragments(desired)) {
    if (f.sets.length + f.flowtables.length + f.chains.length > 0) yield* eachSetTogether(elements);
    yield* fragmentOperations(f, mode);
    forEachItemOf(desired, owner, f, take);
  }
  yield* eachSetTogether(elements);
  yield* additionsOf(slots.drain());
  yield* hairpinAdditions(desired);
  for (const s of desired.skeletons.values()) yield* chainOperations(s.chains.filter(isHook), mode);
}

function isHook(c: ChainSpec): boolean {
  return c.chain.base !== undefined;
}

/** The operations on base chains, fullSyncItems' last: only skeletons have them. */
function hookOperationCount(desired: Ruleset, mode: FullSyncMode): number {
  let n = 0;
  for (const s of desired.skeletons.values()) for (const c of s.chains) if (isHook(c)) n += (mode === 'reassert' ? 2 : 1) + c.rules.length;
  return n;
}

/** Elements grouped by set (elementsBySet's groups) as a generated transaction adds them: a run of endpoint slots as a run. */
export function* additionsOf(groups: readonly ElementGroup[]): Generator<GeneratedItem> {
  for (const group of groups)
    for (const item of group) yield item.kind === 'slots' ? new SlotElements(item) : { verb: 'add', object: item };
}

/** The hairpin elements of the families `wanted` (every one by default), a run per family, from their counts. */
export function* hairpinAdditions(desired: Ruleset, wanted: (family: IPFamily) => boolean = () => true): Generator<GeneratedItem> {
  for (const [family, counts] of desired.hairpin)
    if (counts.size > 0 && wanted(family)) yield new HairpinElements(family, desired.config.tableName, counts.keyList());
}

/**
 * Adds the elements, each set's together, sets in order of first appearance,
 * and empties the list: a run of element operations as the batch encoder
 * writes it (one record per set), so that a streamed encoding is the listed
 * one's. A run holds a few sets (the skeleton's maps a port's elements go to).
 */
function* eachSetTogether(elements: Array<Element | undefined>): Generator<Operation> {
  for (let i = 0; i < elements.length; i++) {
    const head = elements[i];
    if (head === undefined) continue;
    for (let j = i; j < elements.length; j++) {
      const e = elements[j];
      if (e === undefined || e.set !== head.set || e.table !== head.table || e.family !== head.family) continue;
      elements[j] = undefined;
      yield { verb: 'add', object: e };
    }
  }
  elements.length = 0;
}

/** Each fragment with its owner's name in the claims: the ports' rendered again, and not kept, when none is held. */
function* ownedFragments(r: Ruleset): Generator<[owner: string, fragment: Fragment]> {
  for (const [family, s] of r.skeletons) yield [skeletonOwner(family), s];
  for (const [id, s] of r.services) yield [id, s.unkeptFragment()];
}

/** One fragment's sets, flowtables, chains and rules, in that order (its rules may use any of them); not its base chains. */
function* fragmentOperations(frag: Fragment, mode: FullSyncMode): Generator<Operation> {
  for (const s of frag.sets) {
    yield { verb: 'add', object: s };
    if (flushesSet(s, mode)) yield { verb: 'flush', object: s };
  }
  for (const f of frag.flowtables) yield { verb: 'add', object: f };
  yield* chainOperations(frag.chains.some(isHook) ? frag.chains.filter((c) => !isHook(c)) : frag.chains, mode);
}

/** The chains (flushed by a reassert), then their rules. */
function* chainOperations(chains: readonly ChainSpec[], mode: FullSyncMode): Generator<Operation> {
  for (const c of chains) {
    yield { verb: 'add', object: c.chain };
    if (mode === 'reassert') yield { verb: 'flush', object: c.chain };
  }
  for (const c of chains) for (const r of c.rules) yield { verb: 'add', object: r };
}

/** The fragments' elements (those `keep` wants, when given) by set, as ElementGrouper groups them. */
export function elementsBySet(desired: Ruleset, keep?: (item: Element | SlotRun) => boolean): ElementGroup[] {
  const groups = new ElementGrouper();
  forEachFragmentItem(desired, keep === undefined ? groups.add : (item) => keep(item) && groups.add(item));
  return groups.drain();
}

/**
 * Elements (or runs of endpoint slots) by set, sets in order of first
 * appearance. They come in same-set runs: the index is asked only where one
 * ends, which for endpoint slots (a port's go to one of 512 shared maps) is
 * at nearly every item, so it is keyed by the set's name alone, without
 * making a text per item (a name is in one table of each family at most).
 */
class ElementGrouper {
  readonly #groups: ElementGroup[] = [];
  /** Each set name's groups, one per table holding a set of that name; a group is never empty. */
  readonly #bySetName = new Map<string, ElementGroup[]>();
  #last: Element | SlotRun | undefined;
  #group: ElementGroup = [];

  readonly add = (item: Element | SlotRun): void => {
    const last = this.#last;
    if (last === undefined || item.set !== last.set || item.table !== last.table || item.family !== last.family) {
      this.#group = this.#groupOf(item);
    }
    this.#last = item;
    this.#group.push(item);
  };

  #groupOf(item: Element | SlotRun): ElementGroup {
    let named = this.#bySetName.get(item.set);
    if (named === undefined) {
      named = [];
      this.#bySetName.set(item.set, named);
    }
    for (const g of named) if (g[0]!.table === item.table && g[0]!.family === item.family) return g;
    const g: ElementGroup = [];
    named.push(g);
    this.#groups.push(g);
    return g;
  }

  /** The groups so far; the grouper starts again empty. */
  drain(): ElementGroup[] {
    const groups = this.#groups.splice(0);
    this.#bySetName.clear();
    this.#last = undefined;
    return groups;
  }
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
  return mode === 'reassert' && !isDynamicSet(s);
}

/**
 * How many operations fullSyncOperations makes, and what they add, counted
 * from the ruleset without making them (a full sync's are made only to be
 * checked and encoded); the ServicePorts' fragments from their tally when
 * they were not kept (Ruleset.unkept).
 */
function countFullSync(desired: Ruleset, mode: FullSyncMode): { length: number; stats: SyncStats } {
  const tally = desired.unkept ? { ...desired.unkept } : emptyTally();
  for (const s of desired.skeletons.values()) tallyFragment(tally, s, 1);
  if (!desired.unkept) for (const s of desired.services.values()) tallyFragment(tally, s.fragment, 1);
  let hairpin = 0;
  for (const counts of desired.hairpin.values()) hairpin += counts.size;
  const stats: SyncStats = {
    ...emptyStats(),
    setsAdded: tally.sets,
    chainsAdded: tally.chains,
    rulesAdded: tally.rules,
    // Each claim key's element once, from the fragment that won it.
    elementsAdded: desired.claims.size + tally.ownElements + hairpin,
  };
  const reasserts = mode === 'reassert';
  const length =
    2 * replacedTables(desired, mode).length +
    desired.tables.length +
    tally.sets +
    (reasserts ? tally.sets - tally.dynamicSets : 0) +
    tally.flowtables +
    tally.chains * (reasserts ? 2 : 1) +
    tally.rules +
    stats.elementsAdded;
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

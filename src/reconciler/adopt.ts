// Adoption: at start-up, when the kernel already holds our tables (in our
// current format), commit only the difference between what they hold and the
// desired ruleset, instead of replacing them. What is equal stays untouched:
// a chain whose rules are all as wanted keeps its rules and their counters,
// and the elements of dynamic sets (session-affinity entries, which only the
// kernel writes) are never looked at, so clients stay with their endpoints.
//
// - a missing set, map, flowtable or chain is added; a chain whose rules
//   differ in any way (one deleted, changed, added, reordered) is flushed and
//   refilled; missing or different elements are (re)added, unwanted ones deleted;
// - objects that should not be there are removed: sets and flowtables at once,
//   chains flushed now and deleted by a later sync (diff.ts says why);
// - a set, map, base chain or flowtable whose definition differs cannot be
//   changed in place: the listing is then not adopted (the answer says why),
//   and the caller replaces the tables atomically, as it would without one;
// - the hairpin set is not read but derived from the endpoint maps (see
//   DERIVED_ON_ADOPTION), so a change made to it by hand waits for the next
//   periodic full sync, which rewrites every set.
//
// The kernel ends up holding exactly what a fresh replace leaves, dynamic
// elements and such a hairpin set aside (tested against both the fake and the
// real kernel).

import type { TableListing } from '../nft/dataplane.ts';
import type { Chain, Element, Family, Flowtable, NftMap, NftSet, Operation, Rule, Table } from '../nft/objects.ts';
import { objectKey } from '../nft/objects.ts';
import { flowtableDelete, flowtableDeviceChanges } from './departed-devices.ts';
import { emptyStats, listedPlan, type StaleChain, type SyncPlan, type SyncStats } from './diff.ts';
import { hairpinElement } from './element-claims.ts';
import { elementCount, forEachElementOf, type Fragment, isDynamicSet, SlotElements, type SlotRun } from './fragment.ts';
import type { GeneratedItem } from '../nft/element-run.ts';
import { additionsOf, elementsBySet, hairpinAdditions } from './full-sync.ts';
import { derivedHairpinChanges } from './adoption-listing.ts';
import { SET } from './names.ts';
import { forEachFragmentItem, type Ruleset } from './ruleset.ts';
import { tableFamily } from './statements.ts';

/**
 * Equal content: undefined members count as absent and key order does not
 * matter (the kernel's listing and our rendering build objects in their own
 * orders), without building a text of either. Adoption compares
 * every rule this way (20k at 10k services x 10 endpoints, 200k at 100k).
 */
export function sameContent(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameContent(a[i], b[i])) return false;
    return true;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let members = 0;
  for (const k in x) {
    if (x[k] === undefined) continue;
    members++;
    if (!sameContent(x[k], y[k])) return false;
  }
  for (const k in y) if (y[k] !== undefined) members--;
  return members === 0;
}

function chainDef(c: Chain): object {
  // A base chain's policy defaults to accept; the kernel always reports one.
  const base = c.base ? { ...c.base, policy: c.base.policy ?? 'accept' } : undefined;
  return { name: c.name, base, comment: c.comment };
}

function containerDef(s: NftSet | NftMap): object {
  // The kernel lists flags in its own order.
  return { ...s, handle: undefined, flags: s.flags ? [...s.flags].sort() : undefined };
}

/** An element's key within its set: most keys have one part, which is then used as it is (no string is built). */
function keyInSet(e: Element): string {
  return e.key.length === 1 ? e.key[0]! : e.key.join('\0');
}

function sameValue(a: Element['value'], b: Element['value']): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || typeof a === 'string' || typeof b === 'string') return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => x === b[i]);
  }
  return a.verdict === b.verdict && ('chain' in a ? a.chain : '') === ('chain' in b ? b.chain : '');
}

function sameElement(a: Element, b: Element): boolean {
  return sameValue(a.value, b.value) && (a.timeout ?? '') === (b.timeout ?? '') && (a.comment ?? '') === (b.comment ?? '');
}

/** Why a listing cannot be adopted. */
export interface AdoptionRefused {
  refused: string;
}

class AdoptionPhases {
  readonly addTables: Operation[] = [];
  readonly addSets: Operation[] = [];
  readonly addFlowtables: Operation[] = [];
  readonly addChains: Operation[] = [];
  readonly flushChains: Operation[] = [];
  readonly flushSets: Operation[] = [];
  readonly deleteElements: Operation[] = [];
  readonly addRules: Operation[] = [];
  readonly addElements: Operation[] = [];
  readonly deleteSets: Operation[] = [];
  readonly deleteFlowtables: Operation[] = [];
  readonly deleteTables: Operation[] = [];

  /** How many operations the phases list (the refilled sets' elements are not). */
  length(): number {
    let n = 0;
    for (const phase of Object.values(this) as Operation[][]) n += phase.length;
    return n;
  }

  /**
   * The operations in commit order. The elements of refilled sets come with
   * the other added ones, made as they are walked (`refilled`): a million
   * hairpin elements at 100k Services x 10 endpoints are never listed.
   */
  *operations(refilled: () => Iterable<GeneratedItem>): Generator<GeneratedItem> {
    yield* this.addTables;
    yield* this.addSets;
    yield* this.addFlowtables;
    yield* this.addChains;
    yield* this.flushChains;
    yield* this.flushSets;
    // Grouped by set: the encoder writes a record per run of one set's elements.
    for (const group of Map.groupBy(this.deleteElements, setOf).values()) yield* group;
    yield* this.addRules;
    for (const group of Map.groupBy(this.addElements, setOf).values()) yield* group;
    yield* refilled();
    yield* this.deleteSets;
    yield* this.deleteFlowtables;
    yield* this.deleteTables;
  }
}

function setOf(op: Operation): string {
  const e = op.object as Element;
  return `${e.family} ${e.table} ${e.set}`;
}

/** What the element step needs to know of one adopted table. */
interface TableElements {
  have: TableListing;
  /** Sets whose elements only the kernel writes: never compared. */
  dynamic: Set<string>;
  /** Sets whose wanted elements are all added, none compared: new, or flushed (their elements were not read). */
  refilled: Set<string>;
  /** The hairpin set's elements were not read but follow from the endpoint maps' (DERIVED_ON_ADOPTION). */
  hairpinDerived: boolean;
  /** Sets deleted: their elements go with them. */
  deleted: Set<string>;
}

function sameRuleList(a: readonly Rule[], b: readonly Rule[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.comment !== y.comment) return false;
    if (!sameContent(x.exprs, y.exprs)) return false;
  }
  return true;
}

/**
 * The desired ruleset's objects by table family, but the elements (adoptElements
 * walks them), unsorted (rulesetListings sorts, which adoption does not need).
 */
function wantedTables(r: Ruleset): Map<Family, TableListing> {
  const out = new Map<Family, TableListing>();
  for (const table of r.tables) out.set(table.family, { table, chains: [], rules: [], sets: [], elements: [], flowtables: [] });
  const frags: Fragment[] = [...r.skeletons.values()];
  for (const s of r.services.values()) frags.push(s.fragment);
  for (const f of frags) {
    for (const c of f.chains) {
      const t = out.get(c.chain.family);
      if (!t) continue;
      t.chains.push(c.chain);
      for (const rule of c.rules) t.rules.push(rule);
    }
    for (const s of f.sets) out.get(s.family)?.sets.push(s);
    for (const ft of f.flowtables) out.get(ft.family)?.flowtables.push(ft);
  }
  return out;
}

/** Adds, to `p`, what turns `have` into `want` (one table); why not, when that cannot be done in place. */
function adoptTable(
  want: TableListing,
  have: TableListing,
  p: AdoptionPhases,
  stale: Map<string, StaleChain>,
  now: number,
  stats: SyncStats,
): TableElements | string {
  const containers = new Map<string, NftSet | NftMap>(have.sets.map((s) => [s.name, s]));
  const elements: TableElements = { have, dynamic: new Set(), refilled: new Set(), hairpinDerived: false, deleted: new Set() };
  const haveChains = new Map<string, Chain>(have.chains.map((c) => [c.name, c]));
  // A first start hooks its base chains in its last transaction: tables with every wanted one hold each commit
  // in full, so the unread hairpin set holds what the endpoint maps say. Else it is rewritten whole.
  const whole = want.chains.every((c) => c.base === undefined || haveChains.has(c.name));
  const notRead = new Set(have.elementsNotRead);
  for (const s of want.sets) {
    const old = containers.get(s.name);
    containers.delete(s.name);
    if (isDynamicSet(s)) elements.dynamic.add(s.name);
    else if (old && notRead.has(s.name) && whole && s.name === SET.hairpinEndpoints) elements.hairpinDerived = true;
    else if (!old || notRead.has(s.name)) {
      elements.refilled.add(s.name);
      // Listed, its elements not read: flushed, and every wanted one added.
      if (old) p.flushSets.push({ verb: 'flush', object: s });
    }
    if (!old) {
      p.addSets.push({ verb: 'add', object: s });
      stats.setsAdded++;
    } else if (!sameContent(containerDef(old), containerDef(s))) {
      return `${s.kind} ${s.family} ${s.name} is defined differently`;
    }
  }
  for (const old of containers.values()) {
    p.deleteSets.push({ verb: 'delete', object: old });
    elements.deleted.add(old.name);
    stats.setsDeleted++;
  }

  const flowtables = new Map<string, Flowtable>(have.flowtables.map((f) => [f.name, f]));
  for (const f of want.flowtables) {
    const old = flowtables.get(f.name);
    flowtables.delete(f.name);
    if (!old) {
      p.addFlowtables.push({ verb: 'add', object: f });
      continue;
    }
    if (!sameContent({ ...old, devices: [] }, { ...f, devices: [] })) return `flowtable ${f.family} ${f.name} is defined differently`;
    // Pods came and went while no agent ran: their devices join and leave in place, and the
    // connections offloaded through the others stay on the fast path.
    const { leave, join } = flowtableDeviceChanges(old.devices, f);
    if (leave) p.deleteFlowtables.push(leave);
    if (join) p.addFlowtables.push(join);
  }
  for (const old of flowtables.values()) p.deleteFlowtables.push(flowtableDelete(old));

  // A listing read with rulesOnDemand decodes a chain's rules here, once, and they are dropped after the comparison.
  const listed = have.rulesOf ? undefined : Map.groupBy(have.rules, (r) => r.chain);
  const haveRulesOf = have.rulesOf ?? ((chain: string) => listed!.get(chain) ?? []);
  const wantRules = Map.groupBy(want.rules, (r) => r.chain);
  for (const c of want.chains) {
    const old = haveChains.get(c.name);
    haveChains.delete(c.name);
    const rules = wantRules.get(c.name) ?? [];
    if (old && !sameContent(chainDef(old), chainDef(c))) return `chain ${c.family} ${c.name} is defined differently`;
    // Compared as the kernel holds them first: decoding 200k rules into statements (at 100k Services) is most of a restart's garbage.
    if (old && (have.holdsEncoded?.(c.name, rules) || sameRuleList(haveRulesOf(c.name), rules))) continue;
    if (!old) {
      p.addChains.push({ verb: 'add', object: c });
      stats.chainsAdded++;
    } else {
      p.flushChains.push({ verb: 'flush', object: c });
      stats.chainsRewritten++;
    }
    for (const r of rules) p.addRules.push({ verb: 'add', object: r });
    stats.rulesAdded += rules.length;
  }
  for (const old of haveChains.values()) {
    if (old.base) return `base chain ${old.family} ${old.name} is not one of ours`;
    p.flushChains.push({ verb: 'flush', object: old });
    stats.chainsFlushedStale++;
    stale.set(objectKey(old), { chain: old, since: now });
  }

  return elements;
}

/**
 * Adds, to `p`, the elements that differ between the listed tables and
 * `desired`, walking the desired ones as the fragments keep them (a run of
 * endpoint slots is made into elements one at a time and dropped); the
 * refilled sets' elements are only counted (the plan makes them when walked):
 * how many there are.
 */
function adoptElements(desired: Ruleset, tables: ReadonlyMap<Family, TableElements>, p: AdoptionPhases, stats: SyncStats): number {
  let refilled = 0;
  // By family and set, then key: a set's name is not repeated in a key built per element.
  const have = new Map<Family, Map<string, Map<string, Element>>>();
  for (const [family, t] of tables) {
    const bySet = new Map<string, Map<string, Element>>();
    for (const e of t.have.elements) {
      if (t.dynamic.has(e.set)) continue;
      const inSet = bySet.get(e.set);
      if (inSet === undefined) bySet.set(e.set, new Map([[keyInSet(e), e]]));
      else inSet.set(keyInSet(e), e);
    }
    have.set(family, bySet);
  }
  const compare = (e: Element): void => {
    const inSet = have.get(e.family)?.get(e.set);
    const k = keyInSet(e);
    const old = inSet?.get(k);
    if (old) inSet!.delete(k);
    if (old && sameElement(old, e)) return;
    if (old) {
      p.deleteElements.push({ verb: 'delete', object: old });
      stats.elementsDeleted++;
    }
    p.addElements.push({ verb: 'add', object: e });
    stats.elementsAdded++;
  };
  const heldSlots: SlotRun[] = [];
  forEachFragmentItem(desired, (item) => {
    const t = tables.get(item.family);
    if (t === undefined) return;
    if (t.refilled.has(item.set)) refilled += elementCount(item);
    else if (item.kind === 'slots' && t.have.encodedElements?.holds(item.set)) heldSlots.push(item);
    else forEachElementOf(item, compare);
  });
  // A set's slots together: its listed bytes and index stay in the cache (a third of this step at 100k).
  for (const group of Map.groupBy(heldSlots, (r) => `${r.family} ${r.set}`).values()) {
    const held = tables.get(group[0]!.family)!.have.encodedElements!;
    for (const item of group) {
      const run = new SlotElements(item);
      for (let i = 0; i < run.length; i++) {
        if (held.keep(run, i)) continue;
        p.addElements.push({ verb: 'add', object: run.element(i) });
        stats.elementsAdded++;
      }
    }
  }
  heldSlots.length = 0;
  for (const family of ['IPv4', 'IPv6'] as const) {
    const t = tables.get(tableFamily(family));
    if (t === undefined) continue;
    const counts = desired.hairpin.get(family);
    if (t.hairpinDerived) {
      const { add, remove } = derivedHairpinChanges(t.have, family, counts?.keyList() ?? []);
      for (const ip of add) p.addElements.push({ verb: 'add', object: hairpinElement(family, desired.config.tableName, ip) });
      for (const ip of remove) p.deleteElements.push({ verb: 'delete', object: hairpinElement(family, desired.config.tableName, ip) });
      stats.elementsAdded += add.length;
      stats.elementsDeleted += remove.length;
    } else if (counts === undefined) continue;
    else if (t.refilled.has(SET.hairpinEndpoints)) refilled += counts.size;
    else for (const ip of counts.keys()) compare(hairpinElement(family, desired.config.tableName, ip));
  }
  // What is left was not wanted; the elements of sets deleted anyway go with them.
  const unwanted = (old: Element): void => {
    p.deleteElements.push({ verb: 'delete', object: old });
    stats.elementsDeleted++;
  };
  for (const [family, bySet] of have) {
    const deleted = tables.get(family)!.deleted;
    for (const [set, inSet] of bySet) if (!deleted.has(set)) inSet.forEach(unwanted);
  }
  for (const t of tables.values()) {
    const held = t.have.encodedElements;
    if (held) for (const s of t.have.sets) if (held.holds(s.name) && !t.deleted.has(s.name)) held.notKept(s.name).forEach(unwanted);
  }
  stats.elementsAdded += refilled;
  return refilled;
}

/**
 * The refilled sets' additions, grouped by set, the hairpin ones last (from
 * their counts); runs of endpoint slots and the hairpin elements as runs (ElementRun).
 */
function* refilledItems(desired: Ruleset, refilled: ReadonlyMap<Family, ReadonlySet<string>>): Generator<GeneratedItem> {
  const groups = elementsBySet(desired, (item) => refilled.get(item.family)?.has(item.set) ?? false);
  yield* additionsOf(groups);
  groups.length = 0;
  yield* hairpinAdditions(desired, (family) => refilled.get(tableFamily(family))?.has(SET.hairpinEndpoints) ?? false);
}

/**
 * The transaction that turns the listed tables (`kernel`, by family; each one
 * ours and of the current format, which the caller checked) into `desired`,
 * its operations made on demand (SyncPlan.generated); or why not when some
 * object cannot be changed in place (replace instead).
 */
export function planGeneratedAdoption(
  desired: Ruleset,
  kernel: ReadonlyMap<Family, TableListing>,
  now: number,
): SyncPlan | AdoptionRefused {
  const p = new AdoptionPhases();
  const stats = emptyStats();
  const stale = new Map<string, StaleChain>();
  const tables = new Map<Family, TableElements>();
  for (const want of wantedTables(desired).values()) {
    const have = kernel.get(want.table.family);
    if (!have) {
      p.addTables.push({ verb: 'add', object: want.table });
    }
    const empty: TableListing = { table: want.table, chains: [], rules: [], sets: [], elements: [], flowtables: [] };
    const adopted = adoptTable(want, have ?? empty, p, stale, now, stats);
    if (typeof adopted === 'string') return { refused: adopted };
    tables.set(want.table.family, adopted);
  }
  for (const [family, have] of kernel) {
    if (tables.has(family)) continue;
    const table: Table = { kind: 'table', family, name: have.table.name };
    p.deleteTables.push({ verb: 'delete', object: table });
  }
  const refilledCount = adoptElements(desired, tables, p, stats);
  // Only the sets each table refills are needed to make the operations again, not the listings.
  const refilled = new Map([...tables].map(([family, t]) => [family, t.refilled]));
  const items = () => p.operations(() => refilledItems(desired, refilled));
  return {
    ops: [],
    generated: { items, length: p.length() + refilledCount },
    next: { applied: desired, staleChains: stale },
    stats,
  };
}

/** planGeneratedAdoption with its operations listed (dry runs, tests). */
export function planAdoption(desired: Ruleset, kernel: ReadonlyMap<Family, TableListing>, now: number): SyncPlan | AdoptionRefused {
  const plan = planGeneratedAdoption(desired, kernel, now);
  return 'refused' in plan ? plan : listedPlan(plan);
}

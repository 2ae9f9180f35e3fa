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
//   and the caller replaces the tables atomically, as it would without one.
//
// The kernel ends up holding exactly what a fresh replace leaves, dynamic
// elements aside (tested against both the fake and the real kernel).

import type { TableListing } from '../nft/dataplane.ts';
import type { Chain, Element, Family, Flowtable, NftMap, NftSet, Operation, Rule, Table } from '../nft/objects.ts';
import { objectKey } from '../nft/objects.ts';
import { emptyStats, type StaleChain, type SyncPlan } from './diff.ts';
import type { Fragment } from './fragment.ts';
import { SET } from './names.ts';
import { forEachElement, type Ruleset } from './ruleset.ts';

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

/**
 * Sets whose elements adoption does not read back but rewrites whole (flushed
 * and refilled in the same transaction). The hairpin set holds an element per
 * endpoint address, a million at 100k Services x 10 endpoints, and the kernel
 * dumps a set's elements by walking the set again for every 32 KiB message it
 * fills: quadratic, ~16 s for that one set, where adding every element again
 * is linear. Nothing in it is worth keeping (no timeouts, no counters).
 */
export const REWRITTEN_ON_ADOPTION: readonly string[] = [SET.hairpinEndpoints];

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

  all(): Operation[] {
    return [
      ...this.addTables,
      ...this.addSets,
      ...this.addFlowtables,
      ...this.addChains,
      ...this.flushChains,
      ...this.flushSets,
      ...this.deleteElements,
      ...this.addRules,
      ...this.addElements,
      ...this.deleteSets,
      ...this.deleteFlowtables,
      ...this.deleteTables,
    ];
  }
}

function rulesByChain(rules: readonly Rule[]): Map<string, Rule[]> {
  const out = new Map<string, Rule[]>();
  for (const r of rules) {
    let list = out.get(r.chain);
    if (!list) {
      list = [];
      out.set(r.chain, list);
    }
    list.push(r);
  }
  return out;
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

/** The desired ruleset's objects by table family, unsorted (rulesetListings sorts, which adoption does not need). */
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
  forEachElement(r, (e) => out.get(e.family)?.elements.push(e));
  return out;
}

/** Adds, to `p`, what turns `have` into `want` (one table); why not, when that cannot be done in place. */
function adoptTable(
  want: TableListing,
  have: TableListing,
  p: AdoptionPhases,
  stale: Map<string, StaleChain>,
  now: number,
  stats: ReturnType<typeof emptyStats>,
): string | undefined {
  const containers = new Map<string, NftSet | NftMap>(have.sets.map((s) => [s.name, s]));
  const dynamic = new Set<string>();
  // Sets whose elements were not read are rewritten whole: flushed, and every wanted element added.
  const notRead = new Set(have.elementsNotRead);
  for (const s of want.sets) {
    const old = containers.get(s.name);
    containers.delete(s.name);
    if (s.flags?.includes('dynamic')) dynamic.add(s.name);
    if (old && notRead.has(s.name) && !dynamic.has(s.name)) {
      p.flushSets.push({ verb: 'flush', object: s });
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
    stats.setsDeleted++;
  }

  const flowtables = new Map<string, Flowtable>(have.flowtables.map((f) => [f.name, f]));
  for (const f of want.flowtables) {
    const old = flowtables.get(f.name);
    flowtables.delete(f.name);
    if (!old) p.addFlowtables.push({ verb: 'add', object: f });
    else if (!sameContent({ ...old, devices: [...old.devices].sort() }, { ...f, devices: [...f.devices].sort() }))
      return `flowtable ${f.family} ${f.name} is defined differently`;
  }
  for (const old of flowtables.values()) p.deleteFlowtables.push({ verb: 'delete', object: old });

  const haveChains = new Map<string, Chain>(have.chains.map((c) => [c.name, c]));
  const haveRules = rulesByChain(have.rules);
  const wantRules = rulesByChain(want.rules);
  for (const c of want.chains) {
    const old = haveChains.get(c.name);
    haveChains.delete(c.name);
    const rules = wantRules.get(c.name) ?? [];
    if (old && !sameContent(chainDef(old), chainDef(c))) return `chain ${c.family} ${c.name} is defined differently`;
    if (old && sameRuleList(haveRules.get(c.name) ?? [], rules)) continue;
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

  // By set, then key: a set's name is not repeated in a key built per element.
  const haveElements = new Map<string, Map<string, Element>>();
  for (const e of have.elements) {
    if (dynamic.has(e.set)) continue;
    const inSet = haveElements.get(e.set);
    if (inSet === undefined) haveElements.set(e.set, new Map([[keyInSet(e), e]]));
    else inSet.set(keyInSet(e), e);
  }
  for (const e of want.elements) {
    const inSet = haveElements.get(e.set);
    const k = keyInSet(e);
    const old = inSet?.get(k);
    if (old) inSet!.delete(k);
    if (old && sameElement(old, e)) continue;
    if (old) {
      p.deleteElements.push({ verb: 'delete', object: old });
      stats.elementsDeleted++;
    }
    p.addElements.push({ verb: 'add', object: e });
    stats.elementsAdded++;
  }
  // Elements of sets deleted anyway go with them.
  const deletedSets = new Set(p.deleteSets.map((o) => (o.object as NftSet).name));
  for (const [set, inSet] of haveElements) {
    if (deletedSets.has(set)) continue;
    for (const old of inSet.values()) {
      p.deleteElements.push({ verb: 'delete', object: old });
      stats.elementsDeleted++;
    }
  }
  return undefined;
}

/**
 * The transaction that turns the listed tables (`kernel`, by family; each one
 * ours and of the current format, which the caller checked) into `desired`;
 * or why not when some object cannot be changed in place (replace instead).
 */
export function planAdoption(desired: Ruleset, kernel: ReadonlyMap<Family, TableListing>, now: number): SyncPlan | AdoptionRefused {
  const p = new AdoptionPhases();
  const stats = emptyStats();
  const stale = new Map<string, StaleChain>();
  const wanted = new Set<Family>();
  for (const want of wantedTables(desired).values()) {
    wanted.add(want.table.family);
    const have = kernel.get(want.table.family);
    if (!have) {
      p.addTables.push({ verb: 'add', object: want.table });
    }
    const empty: TableListing = { table: want.table, chains: [], rules: [], sets: [], elements: [], flowtables: [] };
    const refused = adoptTable(want, have ?? empty, p, stale, now, stats);
    if (refused !== undefined) return { refused };
  }
  for (const [family, have] of kernel) {
    if (wanted.has(family)) continue;
    const table: Table = { kind: 'table', family, name: have.table.name };
    p.deleteTables.push({ verb: 'delete', object: table });
  }
  return { ops: p.all(), next: { applied: desired, staleChains: stale }, stats };
}

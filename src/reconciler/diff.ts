// From the last applied ruleset to the desired one: the operations of one
// incremental transaction. Pure: `now` comes from the caller.
//
// Only ServicePorts whose entry is not the very same object as before are
// looked at: the renderer reuses the entries of the ports the change tracker
// did not name, and lists the ids it rendered again (Ruleset.changes), so a
// change to one service yields operations on that service's chains and
// elements only, found without a pass over every port.
// A changed chain is flushed and its rules re-added in the same transaction;
// elements are added and deleted one by one.
//
// A chain that is no longer wanted is flushed now and deleted by a later sync,
// at least `staleChainDelayMs` after: kernels before 6.2 notice only a little
// after a transaction that a chain lost its last map-element reference, and
// refuse to delete it in the same one. The caller keeps the stale list with the
// applied ruleset and passes both back.

import type { IPFamily } from '../k8s/types.ts';
import { type Chain, type Element, type NftMap, type NftSet, objectKey, type Operation } from '../nft/objects.ts';
import { runOperations, type GeneratedItem } from '../nft/element-run.ts';
import { type DeviceDepartures, flowtableDelete, flowtableDeviceChanges, NO_DEPARTURES } from './departed-devices.ts';
import { hairpinElement } from './element-claims.ts';
import { type ChainSpec, claimKeysOf, forEachOwnElement, type Fragment } from './fragment.ts';
import { claimedElement, forEachElement, type Ruleset, sameElementValue } from './ruleset.ts';

export interface StaleChain {
  chain: Chain;
  /** When the transaction that flushed it was planned (the caller's clock, ms). */
  since: number;
}

/** What the kernel holds, as far as we know: advanced only after a successful commit. */
export interface SyncState {
  applied: Ruleset | undefined;
  /** By objectKey of the chain. */
  staleChains: ReadonlyMap<string, StaleChain>;
}

export const EMPTY_SYNC_STATE: SyncState = { applied: undefined, staleChains: new Map() };

export interface DiffOptions {
  now: number;
  /** kube-proxy waits one second. */
  staleChainDelayMs?: number;
  /** Flowtable devices of the applied ruleset that left under their names since it was committed. */
  departedDevices?: DeviceDepartures;
}

export interface SyncStats {
  chainsAdded: number;
  chainsRewritten: number;
  chainsFlushedStale: number;
  chainsDeleted: number;
  rulesAdded: number;
  elementsAdded: number;
  elementsDeleted: number;
  setsAdded: number;
  setsDeleted: number;
}

export interface SyncPlan {
  /** Empty when `generated` makes them. */
  ops: Operation[];
  /**
   * A full sync's operations made on demand rather than listed (see
   * Transaction.queueGenerated): `items` makes the same `length` operations
   * every time, as a pure function of what the plan was made from, runs of
   * element additions as runs (see ElementRun); generatedOperations gives
   * them all as operations. A full sync's `hookedFrom` is where its
   * operations on base chains start: those before it hook nothing (see
   * Transaction.stageable).
   */
  generated?: { items: () => Iterable<GeneratedItem>; length: number; hookedFrom?: number };
  /** The state to keep once `ops` committed; the old one stays if the commit fails. */
  next: SyncState;
  stats: SyncStats;
}

/** A generated plan's operations, made anew, its runs of elements as the additions they stand for. */
export function generatedOperations(generated: NonNullable<SyncPlan['generated']>): Iterable<Operation> {
  return runOperations(generated.items());
}

/** How many operations a plan commits, listed or generated. */
export function planLength(plan: SyncPlan): number {
  return plan.generated?.length ?? plan.ops.length;
}

/** The plan with its operations listed (dry runs, tests): a generated one's made once. */
export function listedPlan(plan: SyncPlan): SyncPlan {
  const { generated, ...rest } = plan;
  return generated ? { ...rest, ops: Array.from(generatedOperations(generated)) } : plan;
}

/** When a sync should run to delete the earliest stale chain (undefined: none left). */
export function staleDeletionDueAt(state: SyncState, staleChainDelayMs = DEFAULT_STALE_CHAIN_DELAY_MS): number | undefined {
  let due: number | undefined;
  for (const s of state.staleChains.values())
    due = due === undefined ? s.since + staleChainDelayMs : Math.min(due, s.since + staleChainDelayMs);
  return due;
}

export const DEFAULT_STALE_CHAIN_DELAY_MS = 1000;

export function emptyStats(): SyncStats {
  return {
    chainsAdded: 0,
    chainsRewritten: 0,
    chainsFlushedStale: 0,
    chainsDeleted: 0,
    rulesAdded: 0,
    elementsAdded: 0,
    elementsDeleted: 0,
    setsAdded: 0,
    setsDeleted: 0,
  };
}

/** Operations grouped by phase; concatenated in this order they are valid in one transaction. */
class Phases {
  readonly addTables: Operation[] = [];
  readonly addFlowtables: Operation[] = [];
  readonly flushChains: Operation[] = [];
  readonly deleteElements = new Map<string, Operation>();
  readonly deleteChains: Operation[] = [];
  readonly deleteSets: Operation[] = [];
  readonly deleteFlowtables: Operation[] = [];
  readonly recreateFlowtables: Operation[] = [];
  readonly addSets: Operation[] = [];
  readonly addChains: Operation[] = [];
  readonly addRules: Operation[] = [];
  readonly addElements = new Map<string, Operation>();
  readonly deleteStale: Operation[] = [];

  all(): Operation[] {
    return [
      ...this.addTables,
      ...this.addFlowtables,
      ...this.flushChains,
      ...this.deleteElements.values(),
      ...this.deleteChains,
      ...this.deleteSets,
      ...this.deleteFlowtables,
      ...this.recreateFlowtables,
      ...this.addSets,
      ...this.addChains,
      ...this.addRules,
      ...this.addElements.values(),
      ...this.deleteStale,
    ];
  }
}

function sameJSON(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function sameChainDef(a: Chain, b: Chain): boolean {
  return a.comment === b.comment && sameJSON(a.base, b.base);
}

function sameRules(a: ChainSpec, b: ChainSpec): boolean {
  if (a.rules.length !== b.rules.length) return false;
  for (let i = 0; i < a.rules.length; i++) {
    const x = a.rules[i]!;
    const y = b.rules[i]!;
    if (x.comment !== y.comment || !sameJSON(x.exprs, y.exprs)) return false;
  }
  return true;
}

const EMPTY: Fragment = { chains: [], sets: [], elements: [], flowtables: [] };
const NONE: readonly never[] = [];

/**
 * The differences of fragments, one pair at a time, gathered for one plan:
 * sets, flowtables and chains straight into the phases; element keys, own
 * elements and hairpin addresses noted to be settled once every fragment is seen.
 */
class FragmentDiffer {
  readonly p: Phases;
  readonly stats: SyncStats;
  readonly stale: Map<string, StaleChain>;
  readonly now: number;
  readonly touchedKeys = new Set<string>();
  readonly recreatedSets = new Set<string>();
  readonly ownDeletes: Element[] = [];
  readonly ownAdds: Element[] = [];
  readonly touchedHairpin = new Map<IPFamily, Set<string>>();
  readonly departed: DeviceDepartures;
  skeletonSetRecreated = false;

  constructor(p: Phases, stats: SyncStats, stale: Map<string, StaleChain>, now: number, departed: DeviceDepartures) {
    this.p = p;
    this.stats = stats;
    this.stale = stale;
    this.now = now;
    this.departed = departed;
  }

  /** `family`: the ServicePort's (undefined for a skeleton: no hairpin addresses, and its sets are everyone's). */
  diff(before: Fragment, after: Fragment, family?: IPFamily): void {
    const setRecreated = this.#sets(before, after, family);
    const flowtableRecreated = this.#flowtables(before, after);
    this.#chains(before, after, setRecreated || flowtableRecreated);
    for (const k of claimKeysOf(before)) this.touchedKeys.add(k);
    for (const k of claimKeysOf(after)) this.touchedKeys.add(k);

    // Own elements: no other fragment wants their keys, so the two renderings say it all.
    const oldOwn = new Map<string, Element>();
    forEachOwnElement(before, (e) => oldOwn.set(objectKey(e), e));
    forEachOwnElement(after, (e) => {
      const k = objectKey(e);
      const old = oldOwn.get(k);
      oldOwn.delete(k);
      if (old && sameElementValue(old, e) && !this.recreatedSets.has(setKey(e))) return;
      if (old) this.ownDeletes.push(old);
      this.ownAdds.push(e);
    });
    for (const old of oldOwn.values()) this.ownDeletes.push(old);

    if (family !== undefined && (before.hairpin || after.hairpin)) {
      let touched = this.touchedHairpin.get(family);
      if (!touched) {
        touched = new Set();
        this.touchedHairpin.set(family, touched);
      }
      for (const ip of before.hairpin ?? NONE) touched.add(ip);
      for (const ip of after.hairpin ?? NONE) touched.add(ip);
    }
  }

  /**
   * Sets and maps first: a changed definition means delete and re-create,
   * which needs every rule referencing it (in this fragment) flushed first.
   * Returns whether one was re-created.
   */
  #sets(before: Fragment, after: Fragment, family: IPFamily | undefined): boolean {
    const oldSets = new Map(before.sets.map((s) => [objectKey(s), s]));
    let setRecreated = false;
    for (const s of after.sets) {
      const k = objectKey(s);
      const old = oldSets.get(k);
      oldSets.delete(k);
      if (old && sameJSON(old, s)) continue;
      if (old) {
        this.p.deleteSets.push({ verb: 'delete', object: old });
        this.stats.setsDeleted++;
        setRecreated = true;
        this.recreatedSets.add(setKey(s));
        // Not a re-created flowtable: it holds no elements (see the refill below).
        if (family === undefined) this.skeletonSetRecreated = true;
      }
      this.p.addSets.push({ verb: 'add', object: s });
      this.stats.setsAdded++;
    }
    for (const old of oldSets.values()) {
      this.p.deleteSets.push({ verb: 'delete', object: old });
      this.stats.setsDeleted++;
    }

    return setRecreated;
  }

  /**
   * Returns whether a flowtable was re-created (its rule is then flushed too).
   * Devices come and go in place: their flows stay offloaded. A renamed device
   * may be in the kernel's flowtable under a name we never committed (even once
   * a reassert has dropped the old name), and a hook or priority cannot change:
   * re-created then, with the rule that uses it flushed first (offloaded flows
   * fall back to the slow path and are offloaded again).
   */
  #flowtables(before: Fragment, after: Fragment): boolean {
    const { gone, renamed } = this.departed;
    let recreated = false;
    const oldFlowtables = new Map(before.flowtables.map((f) => [objectKey(f), f]));
    for (const f of after.flowtables) {
      const k = objectKey(f);
      const old = oldFlowtables.get(k);
      oldFlowtables.delete(k);
      if (!old) {
        this.p.addFlowtables.push({ verb: 'add', object: f });
        continue;
      }
      if (old.hook !== f.hook || old.priority !== f.priority || renamed.length > 0) {
        this.p.deleteFlowtables.push(flowtableDelete(old));
        this.p.recreateFlowtables.push({ verb: 'add', object: f });
        recreated = true;
        continue;
      }
      const { leave, join } = flowtableDeviceChanges(
        old.devices.filter((d) => !gone.includes(d)),
        f,
      );
      if (leave) this.p.deleteFlowtables.push(leave);
      if (join) this.p.addFlowtables.push(join);
    }
    for (const old of oldFlowtables.values()) this.p.deleteFlowtables.push(flowtableDelete(old));

    return recreated;
  }

  /** `rewrite`: a set or flowtable was re-created, so every chain of the fragment is flushed and refilled. */
  #chains(before: Fragment, after: Fragment, rewrite: boolean): void {
    const oldChains = new Map(before.chains.map((c) => [objectKey(c.chain), c]));
    for (const spec of after.chains) {
      const k = objectKey(spec.chain);
      const old = oldChains.get(k);
      oldChains.delete(k);
      if (!old) {
        this.p.addChains.push({ verb: 'add', object: spec.chain });
        // Flushed when it went stale, so it is empty: wanting it again is only a matter of forgetting it was stale.
        this.stale.delete(k);
        this.stats.chainsAdded++;
      } else if (!sameChainDef(old.chain, spec.chain)) {
        this.p.flushChains.push({ verb: 'flush', object: old.chain });
        this.p.deleteChains.push({ verb: 'delete', object: old.chain });
        this.p.addChains.push({ verb: 'add', object: spec.chain });
        this.stats.chainsRewritten++;
      } else if (rewrite || !sameRules(old, spec)) {
        this.p.flushChains.push({ verb: 'flush', object: spec.chain });
        this.stats.chainsRewritten++;
      } else {
        continue;
      }
      for (const r of spec.rules) this.p.addRules.push({ verb: 'add', object: r });
      this.stats.rulesAdded += spec.rules.length;
    }
    for (const [k, old] of oldChains) {
      this.p.flushChains.push({ verb: 'flush', object: old.chain });
      this.stale.set(k, { chain: old.chain, since: this.now });
      this.stats.chainsFlushedStale++;
    }
  }
}

export function diffRulesets(
  applied: Ruleset | undefined,
  desired: Ruleset,
  options: DiffOptions,
  staleChains: ReadonlyMap<string, StaleChain> = new Map(),
): SyncPlan {
  const { now } = options;
  const delay = options.staleChainDelayMs ?? DEFAULT_STALE_CHAIN_DELAY_MS;
  const p = new Phases();
  const stats = emptyStats();
  const stale = new Map(staleChains);

  const appliedTables = new Set((applied?.tables ?? []).map(objectKey));
  const desiredTables = new Set(desired.tables.map(objectKey));
  for (const t of desired.tables) if (!appliedTables.has(objectKey(t))) p.addTables.push({ verb: 'add', object: t });
  const removedTables = (applied?.tables ?? []).filter((t) => !desiredTables.has(objectKey(t)));

  const departed = options.departedDevices ?? NO_DEPARTURES;
  const differ = new FragmentDiffer(p, stats, stale, now, departed);
  const diffFragment = (before: Fragment, after: Fragment, family?: IPFamily): void => differ.diff(before, after, family);
  const { touchedKeys, recreatedSets, ownDeletes, ownAdds, touchedHairpin } = differ;

  const families = new Set([...(applied?.skeletons.keys() ?? []), ...desired.skeletons.keys()]);
  for (const f of families) {
    const a = applied?.skeletons.get(f);
    const d = desired.skeletons.get(f);
    // A device that left and a newcomer under its name render the same skeleton; the kernel lacks the newcomer.
    if (a !== d || departed.gone.length + departed.renamed.length > 0) diffFragment(a ?? EMPTY, d ?? EMPTY);
  }
  if (applied && desired.changes?.since === applied.generation) {
    // Rendered from this very ruleset: only the ports it says may differ can.
    for (const id of desired.changes.ids) {
      const a = applied.services.get(id);
      const d = desired.services.get(id);
      if (a !== d) diffFragment(a?.fragment ?? EMPTY, d?.fragment ?? EMPTY, (d ?? a)!.family);
    }
  } else {
    for (const [id, d] of desired.services) {
      const a = applied?.services.get(id);
      if (a !== d) diffFragment(a?.fragment ?? EMPTY, d.fragment, d.family);
    }
    if (applied) {
      for (const [id, a] of applied.services) if (!desired.services.has(id)) diffFragment(a.fragment, EMPTY, a.family);
    }
  }

  const addElement = (e: Element): void => {
    p.addElements.set(objectKey(e), { verb: 'add', object: e });
  };
  const deleteElement = (e: Element): void => {
    if (!recreatedSets.has(setKey(e))) p.deleteElements.set(objectKey(e), { verb: 'delete', object: e });
  };
  for (const k of touchedKeys) {
    const a = applied && claimedElement(applied, k);
    const d = claimedElement(desired, k);
    if (a && d && sameElementValue(a, d)) continue;
    if (a) deleteElement(a);
    if (d) addElement(d);
  }
  // Deletes before adds in the transaction: a slot one port left and another took in this sync ends up the taker's.
  for (const e of ownDeletes) deleteElement(e);
  for (const e of ownAdds) addElement(e);
  for (const [family, ips] of touchedHairpin) {
    const before = applied?.hairpin.get(family);
    const after = desired.hairpin.get(family);
    for (const ip of ips) {
      const a = (before?.get(ip) ?? 0) > 0;
      const d = (after?.get(ip) ?? 0) > 0;
      if (a && !d) deleteElement(hairpinElement(family, desired.config.tableName, ip));
      else if (d && !a) addElement(hairpinElement(family, desired.config.tableName, ip));
    }
  }
  // A re-created set or map starts empty, whoever's elements it held. A port's
  // own maps were refilled with its fragment above; a skeleton's set (rare: its
  // definition changed) may hold anyone's.
  if (differ.skeletonSetRecreated) {
    forEachElement(desired, (e) => {
      if (recreatedSets.has(setKey(e))) addElement(e);
    });
  }
  stats.elementsAdded = p.addElements.size;
  stats.elementsDeleted = p.deleteElements.size;

  for (const [k, s] of stale) {
    // Never in the transaction that flushed it, whatever the delay.
    if (s.since !== now && s.since + delay <= now) {
      p.deleteStale.push({ verb: 'delete', object: s.chain });
      stale.delete(k);
      stats.chainsDeleted++;
    }
  }

  let ops = p.all();
  if (removedTables.length > 0) {
    // Deleting a table takes everything in it; operations on its contents would only fail.
    const gone = new Set(removedTables.map((t) => `${t.family} ${t.name}`));
    ops = ops.filter((op) => op.object.kind === 'table' || !gone.has(`${op.object.family} ${op.object.table}`));
    for (const t of removedTables) ops.push({ verb: 'delete', object: t });
    for (const [k, s] of stale) if (gone.has(`${s.chain.family} ${s.chain.table}`)) stale.delete(k);
  }

  return { ops, next: { applied: desired, staleChains: stale }, stats };
}

function setKey(o: NftSet | NftMap | Element): string {
  return o.kind === 'element' ? `${o.family} ${o.table} ${o.set}` : `${o.family} ${o.table} ${o.name}`;
}

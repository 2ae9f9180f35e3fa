// A fragment is the unit the renderer produces and the diff compares: the
// chains (each with its full rule list), sets/maps, elements and flowtables that
// belong together — one family's static skeleton, or one ServicePort.

import type { Endpoint } from '../model/service-port.ts';
import type { Chain, DataType, Element, Family, Flowtable, NftMap, NftSet, Rule, Statement } from '../nft/objects.ts';
import type { ElementRun } from '../nft/element-run.ts';
import { endpointMapTypes, type EndpointRegion } from './endpoint-slots.ts';

export interface ChainSpec {
  chain: Chain;
  /** In order; no handles. */
  rules: Rule[];
}

export interface Fragment {
  chains: ChainSpec[];
  sets: Array<NftSet | NftMap>;
  /** Elements other fragments may want too (a ClusterIP, an externalIP:port): claimed, see element-claims.ts. */
  elements: Element[];
  /** claimKey() of each of `elements`, made with them (see claimKeysOf). */
  claimKeys?: string[];
  /**
   * Elements no other fragment can want: its slots in a shared endpoint map
   * (unique by placement, see endpoint-slots.ts) and its own maps' elements.
   * Diffed with the fragment, never claimed. Walk them with forEachOwnElement:
   * endpoint slots are kept as runs.
   */
  ownElements?: Array<Element | SlotRun>;
  /** Endpoint addresses it puts in `hairpin-endpoints` as `ip . ip` (counted per address, not claimed). */
  hairpin?: string[];
  flowtables: Flowtable[];
  /** Slot ranges its policy chains want in the shared endpoint map (endpoint shape 'map'), whether placed there or not. */
  regions?: EndpointRegion[];
}

/**
 * A port's consecutive slots in an endpoint map, `offset + i : ip . port` for
 * endpoint i, kept as the run rather than as elements: at 100k Services x 10
 * endpoints those are a million objects with their key and value arrays
 * (~230 bytes each, most of a rendering), which only a sync walks, and then
 * once. slotElement makes each one when it is walked.
 */
export interface SlotRun {
  kind: 'slots';
  family: Element['family'];
  table: string;
  set: string;
  offset: number;
  /** Distinct and sorted, as the policy chain spreads over them; ports already checked. */
  endpoints: readonly Endpoint[];
}

/** Element i of a run of endpoint slots. */
function slotElement(run: SlotRun, i: number): Element {
  const ep = run.endpoints[i]!;
  return {
    kind: 'element',
    family: run.family,
    table: run.table,
    set: run.set,
    key: [String(run.offset + i)],
    value: [ep.ip, String(ep.port)],
  };
}

/** The endpoint maps' types by table family, made once: every run of slots names them. */
const SLOT_TYPES: Readonly<Record<'ip' | 'ip6', { keyType: readonly DataType[]; dataType: readonly DataType[] }>> = {
  ip: endpointMapTypes('IPv4'),
  ip6: endpointMapTypes('IPv6'),
};

/** A run of endpoint slots as the element additions it stands for, for a full sync's encoding (see ElementRun). */
export class SlotElements implements ElementRun {
  readonly kind = 'element-run';
  readonly keyType: readonly DataType[];
  readonly dataType: readonly DataType[];
  readonly #run: SlotRun;

  constructor(run: SlotRun) {
    if (run.family === 'inet') throw new Error('endpoint slots are in an ip or ip6 table');
    this.#run = run;
    ({ keyType: this.keyType, dataType: this.dataType } = SLOT_TYPES[run.family]);
  }

  get family(): Family {
    return this.#run.family;
  }
  get table(): string {
    return this.#run.table;
  }
  get set(): string {
    return this.#run.set;
  }
  get length(): number {
    return this.#run.endpoints.length;
  }

  // The render checked every address of a run (canonicalAddress) and every port (checkPort).
  value(i: number, part: number): string | number {
    if (part === 0) return this.#run.offset + i;
    const ep = this.#run.endpoints[i]!;
    return part === 1 ? ep.ip : ep.port;
  }

  element(i: number): Element {
    return slotElement(this.#run, i);
  }
}

/** How many elements an element or a run of slots stands for. */
export function elementCount(item: Element | SlotRun): number {
  return item.kind === 'slots' ? item.endpoints.length : 1;
}

/** Element i (< elementCount) of an element or a run of slots. */
function elementOf(item: Element | SlotRun, i: number): Element {
  return item.kind === 'slots' ? slotElement(item, i) : item;
}

/** The element, or each element of a run of slots, made as it is walked. */
export function forEachElementOf(item: Element | SlotRun, fn: (e: Element) => void): void {
  for (let i = 0, n = elementCount(item); i < n; i++) fn(elementOf(item, i));
}

/** Each of a fragment's own elements, in order, runs of slots made into their elements. */
export function forEachOwnElement(f: Fragment, fn: (e: Element) => void): void {
  for (const item of f.ownElements ?? NO_OWN) forEachElementOf(item, fn);
}

const NO_OWN: ReadonlyArray<Element | SlotRun> = [];

/** Where a claimed element is told apart: its table, set and key (objectKey's, shorter). */
export function claimKey(e: Element): string {
  // join() makes one flat string: claims keep ~20k of these, where a template's tree of pieces weighed twice as much.
  return [e.family, e.table, e.set, e.key.join(' . ')].join(' ');
}

/** The claim keys of a fragment's elements: made once, with them, by FragmentBuilder. */
export function claimKeysOf(f: Fragment): readonly string[] {
  return f.claimKeys?.length === f.elements.length ? f.claimKeys : f.elements.map(claimKey);
}

/** A set whose elements the datapath adds (session affinity): a reassert and an adoption leave its elements alone. */
export function isDynamicSet(s: NftSet | NftMap): boolean {
  return s.flags?.includes('dynamic') === true;
}

/** How many objects of each kind fragments hold, for a full sync's plan (elements: their own; claimed ones are counted by their claims). */
export interface FragmentTally {
  sets: number;
  /** Of `sets`, the dynamic ones (a reassert does not flush them). */
  dynamicSets: number;
  flowtables: number;
  chains: number;
  rules: number;
  ownElements: number;
}

export function emptyTally(): FragmentTally {
  return { sets: 0, dynamicSets: 0, flowtables: 0, chains: 0, rules: 0, ownElements: 0 };
}

/** Adds a fragment's objects to a tally (`sign` -1: takes them out). */
export function tallyFragment(t: FragmentTally, f: Fragment, sign: 1 | -1): void {
  t.sets += sign * f.sets.length;
  for (const s of f.sets) if (isDynamicSet(s)) t.dynamicSets += sign;
  t.flowtables += sign * f.flowtables.length;
  t.chains += sign * f.chains.length;
  for (const c of f.chains) t.rules += sign * c.rules.length;
  for (const item of f.ownElements ?? NO_OWN) t.ownElements += sign * elementCount(item);
}

/** A copy of a list to its length; none for an empty one (the fragment's optional lists). */
function copyOrNone<T>(list: readonly T[]): T[] | undefined {
  return list.length > 0 ? list.slice() : undefined;
}

/** Collects a fragment for one table, in the order objects are declared. */
export class FragmentBuilder {
  readonly #chains: ChainSpec[] = [];
  readonly #sets: Array<NftSet | NftMap> = [];
  readonly #elements: Element[] = [];
  /** claimKey() of each of #elements. */
  readonly #claimKeys: string[] = [];
  readonly #ownElements: Array<Element | SlotRun> = [];
  readonly #flowtables: Flowtable[] = [];
  private readonly family: Chain['family'];
  private readonly table: string;
  private readonly byName = new Map<string, ChainSpec>();

  constructor(family: Chain['family'], table: string) {
    this.family = family;
    this.table = table;
  }

  chain(name: string, extra: Pick<Chain, 'base' | 'comment'> = {}): ChainSpec {
    let spec = this.byName.get(name);
    if (!spec) {
      const chain: Chain = { kind: 'chain', family: this.family, table: this.table, name };
      if (extra.base) chain.base = extra.base;
      if (extra.comment) chain.comment = extra.comment;
      spec = { chain, rules: [] };
      this.byName.set(name, spec);
      this.#chains.push(spec);
    }
    return spec;
  }

  rule(chain: string, exprs: Statement[], comment?: string): void {
    const spec = this.chain(chain);
    const rule: Rule = { kind: 'rule', family: this.family, table: this.table, chain, exprs };
    if (comment) rule.comment = comment;
    spec.rules.push(rule);
  }

  set(s: Omit<NftSet, 'kind' | 'family' | 'table'>): void {
    this.#sets.push({ kind: 'set', family: this.family, table: this.table, ...s });
  }

  map(m: Omit<NftMap, 'kind' | 'family' | 'table'>): void {
    this.#sets.push({ kind: 'map', family: this.family, table: this.table, ...m });
  }

  element(set: string, key: string[], value?: Element['value'], comment?: string): void {
    const e = this.#element(set, key, value);
    if (comment) e.comment = comment;
    this.#elements.push(e);
    this.#claimKeys.push(claimKey(e));
  }

  /** An element only this fragment can want (see Fragment.ownElements). */
  ownElement(set: string, key: string[], value?: Element['value']): void {
    this.#ownElements.push(this.#element(set, key, value));
  }

  /**
   * A value written into the literal, not added afterwards: an added property
   * lives in an out-of-object array (~40 bytes more per element).
   */
  #element(set: string, key: string[], value: Element['value'] | undefined): Element {
    const { family, table } = this;
    return value === undefined ? { kind: 'element', family, table, set, key } : { kind: 'element', family, table, set, key, value };
  }

  /** Slots `offset + i` of `set` for each of `endpoints` (see SlotRun): elements only this fragment can want. */
  slots(set: string, offset: number, endpoints: readonly Endpoint[]): void {
    if (endpoints.length === 0) return;
    this.#ownElements.push({ kind: 'slots', family: this.family, table: this.table, set, offset, endpoints });
  }

  flowtable(f: Omit<Flowtable, 'kind' | 'family' | 'table'>): void {
    this.#flowtables.push({ kind: 'flowtable', family: this.family, table: this.table, ...f });
  }

  /**
   * The fragment, every list copied to its length. A list grown by push from
   * empty has room for 17 (152 bytes) for its one or two entries: a fragment
   * has up to eight such lists, which at 10k Services were ~10 MB of a full
   * sync's peak, where every rendering is alive at once. Every field is in
   * the literal, the optional ones too: added later, they would go to an
   * out-of-object array in each of 100k fragments.
   */
  finish(extra: Pick<Fragment, 'hairpin' | 'regions'> = {}): Fragment {
    for (const c of this.#chains) c.rules = c.rules.slice();
    return {
      chains: this.#chains.slice(),
      sets: this.#sets.slice(),
      elements: this.#elements.slice(),
      claimKeys: copyOrNone(this.#claimKeys),
      ownElements: copyOrNone(this.#ownElements),
      hairpin: extra.hairpin,
      flowtables: this.#flowtables.slice(),
      regions: extra.regions && copyOrNone(extra.regions),
    };
  }
}

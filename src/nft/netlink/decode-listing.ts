// Decoding the addon's listing buffer (layout in native/libnftnl-glue/list.h)
// into our own objects: tables, chains, rules raised from kernel expressions,
// sets and maps, elements from their key and data bytes, flowtables.

import type { TableListing } from '../dataplane.ts';
import {
  type Chain,
  type ChainHook,
  type ChainType,
  type DataType,
  type Element,
  type Family,
  type Flowtable,
  heldEncoded,
  type ListOptions,
  type NftMap,
  type NftSet,
  type Rule,
  type SetFlag,
} from '../objects.ts';
import {
  CHAIN_ATTR,
  DATA_VERDICT,
  FLOWTABLE_ATTR,
  HOOK_NUMBER,
  KIND,
  RULE_ATTR,
  SET_ATTR,
  SET_FLAG,
  TABLE_ATTR,
  TYPE_BITS,
  TYPE_BY_ID,
  UDATA_COMMENT,
} from './kernel-constants.ts';
import { ExprSink, exprFromAttrs, sameEncodedExprs, type KernelExpr } from './kernel-exprs.ts';
import { lowerInto } from './lower.ts';
import { ByteWriter } from './wire.ts';
import { NftRaiseError, raise } from './raise.ts';
import { ByteReader, type RawAttrs, udataComment } from './listing-reader.ts';
import { decodeElements } from './decode-elements.ts';
import { ListedEncodedElements } from './encoded-elements.ts';

const MAGIC = 0x4c504e4b;

export interface DecodedListing {
  generation: number;
  listing: TableListing;
  /** Rules whose kernel expressions are not ones we write; listed with `exprs: []`. */
  unreadable: Array<{ rule: Rule; reason: string; kernel: KernelExpr[] }>;
}

function keyTypes(id: number): DataType[] | undefined {
  const parts: DataType[] = [];
  let rest = id;
  while (rest > 0) {
    const t = TYPE_BY_ID[rest % (1 << TYPE_BITS)];
    if (!t) return undefined;
    parts.unshift(t);
    rest = Math.floor(rest / (1 << TYPE_BITS));
  }
  return parts.length ? parts : undefined;
}

/** A map's data type: one type, or a concatenation (several parts). */
function dataTypeOf(id: number): DataType | DataType[] {
  const parts = keyTypes(id);
  if (!parts) return TYPE_BY_ID[id] ?? 'mark';
  return parts.length === 1 ? parts[0]! : parts;
}

const HOOK_BY_NUMBER = new Map(Object.entries(HOOK_NUMBER).map(([k, v]) => [v, k as ChainHook]));
function decodeChain(a: RawAttrs, family: Family): Chain {
  const chain: Chain = { kind: 'chain', family, table: a.str(CHAIN_ATTR.TABLE)!, name: a.str(CHAIN_ATTR.NAME)! };
  const hook = a.u32(CHAIN_ATTR.HOOKNUM);
  if (hook !== undefined) {
    chain.base = {
      type: (a.str(CHAIN_ATTR.TYPE) ?? 'filter') as ChainType,
      hook: HOOK_BY_NUMBER.get(hook) ?? ('prerouting' as ChainHook),
      priority: a.u32(CHAIN_ATTR.PRIO)! | 0,
    };
    const policy = a.u32(CHAIN_ATTR.POLICY);
    if (policy !== undefined) chain.base.policy = policy === 0 ? 'drop' : 'accept';
  }
  const c = udataComment(a.get(CHAIN_ATTR.USERDATA), UDATA_COMMENT.chain);
  if (c !== undefined) chain.comment = c;
  return chain;
}

/** A rule and its expressions (read from `r`); one the raiser cannot read goes to `unreadable` with no expressions. */
function decodeRule(r: ByteReader, a: RawAttrs, family: Family, unreadable: DecodedListing['unreadable']): Rule {
  const n = r.u16();
  const kernel: KernelExpr[] = [];
  for (let i = 0; i < n; i++) {
    const name = r.text(r.u8());
    kernel.push(exprFromAttrs(name, r.attrs()));
  }
  const rule: Rule = {
    kind: 'rule',
    family,
    table: a.str(RULE_ATTR.TABLE)!,
    chain: a.str(RULE_ATTR.CHAIN)!,
    exprs: [],
  };
  const handle = a.u64(RULE_ATTR.HANDLE);
  if (handle !== undefined) rule.handle = Number(handle);
  const c = udataComment(a.get(RULE_ATTR.USERDATA), UDATA_COMMENT.rule);
  if (c !== undefined) rule.comment = c;
  try {
    rule.exprs = raise(kernel, family);
  } catch (e) {
    if (!(e instanceof NftRaiseError)) throw e;
    unreadable.push({ rule, reason: e.message, kernel });
  }
  return rule;
}

const NO_STARTS: readonly number[] = [];

/**
 * A listing's rules read when asked (ListOptions.rulesOnDemand), from where
 * each chain's rule records start: decoded (rulesOf), or compared in place
 * with wanted ones, each lowered into one scratch buffer (holdsEncoded).
 */
function rulesOnDemand(
  bytes: Uint8Array,
  r: ByteReader,
  ruleStarts: ReadonlyMap<string, number[]>,
  family: Family,
  unreadable: DecodedListing['unreadable'],
): Required<Pick<TableListing, 'rulesOf' | 'holdsEncoded'>> {
  const rulesOf = (chain: string): Rule[] => {
    const rules: Rule[] = [];
    for (const start of ruleStarts.get(chain) ?? NO_STARTS) {
      const at = r.seek(start);
      rules.push(decodeRule(at, at.attrs(), family, unreadable));
    }
    return rules;
  };
  const scratch = new ExprSink(new ByteWriter(1024));
  const holdsEncoded = (chain: string, rules: readonly Rule[]): boolean => {
    const starts = ruleStarts.get(chain) ?? NO_STARTS;
    if (starts.length !== rules.length) return false;
    for (let i = 0; i < starts.length; i++) {
      const want = rules[i]!;
      const at = r.seek(starts[i]!);
      const a = at.attrs();
      if (udataComment(a.get(RULE_ATTR.USERDATA), UDATA_COMMENT.rule) !== want.comment) return false;
      // The expressions follow their two-byte count.
      const exprsAt = at.position + 2;
      const count = at.skipExprs();
      scratch.w.reset();
      scratch.count = 0;
      try {
        lowerInto(scratch, want.exprs, family);
      } catch {
        // Not recognised, not refused here: a commit that writes the rule says what is wrong with it, and blames its owner.
        return false;
      }
      if (count !== scratch.count) return false;
      if (!sameEncodedExprs(bytes, exprsAt, at.position, scratch.w.raw, 0, scratch.w.position, count)) return false;
    }
    return true;
  };
  return { rulesOf, holdsEncoded };
}

function decodeFlowtable(a: RawAttrs, family: Family): Flowtable {
  const devices = a.get(FLOWTABLE_ATTR.DEVICES);
  const f: Flowtable = {
    kind: 'flowtable',
    family,
    table: a.str(FLOWTABLE_ATTR.TABLE)!,
    name: a.str(FLOWTABLE_ATTR.NAME)!,
    hook: 'ingress',
    priority: (a.u32(FLOWTABLE_ATTR.PRIO) ?? 0) | 0,
    devices: Array.isArray(devices) ? devices : [],
  };
  return f;
}

/** The lists of `byName` concatenated in the order of `owners` (those of no owner first, as a stable sort by owner would put them). */
function inOrderOf<T>(owners: readonly { name: string }[], byName: Map<string, T[]>): T[] {
  const known = new Set(owners.map((o) => o.name));
  const out: T[] = [];
  for (const [name, list] of byName) if (!known.has(name)) for (const x of list) out.push(x);
  for (const o of owners) {
    const list = byName.get(o.name);
    if (list !== undefined) for (const x of list) out.push(x);
  }
  return out;
}

/** A named set or map; undefined for an anonymous one (a rule's own, listed with it). */
function decodeSet(a: RawAttrs, family: Family): NftSet | NftMap | undefined {
  const flags = a.u32(SET_ATTR.FLAGS) ?? 0;
  if (flags & SET_FLAG.anonymous) return undefined;
  const name = a.str(SET_ATTR.NAME)!;
  const keyType = keyTypes(a.u32(SET_ATTR.KEY_TYPE) ?? 0) ?? [];
  const setFlags: SetFlag[] = (['constant', 'interval', 'timeout', 'dynamic'] as const).filter((f) => flags & SET_FLAG[f]);
  const comment = udataComment(a.get(SET_ATTR.USERDATA), UDATA_COMMENT.set);
  const table = a.str(SET_ATTR.TABLE)!;
  let c: NftSet | NftMap;
  if (flags & SET_FLAG.map) {
    const dt = a.u32(SET_ATTR.DATA_TYPE);
    c = { kind: 'map', family, table, name, keyType, dataType: dt === DATA_VERDICT ? 'verdict' : dataTypeOf(dt ?? 0) };
  } else {
    c = { kind: 'set', family, table, name, keyType };
    const t = a.u64(SET_ATTR.TIMEOUT);
    if (t !== undefined && t > 0n) c.timeout = Number(t / 1000n);
  }
  if (setFlags.length) c.flags = setFlags;
  if (comment !== undefined) c.comment = comment;
  return c;
}

export function decodeListing(
  bytes: Uint8Array,
  family: Family,
  options: Pick<ListOptions, 'rulesOnDemand' | 'elementsEncodedOf'> = {},
): DecodedListing {
  const onDemand = options.rulesOnDemand ?? false;
  // A set of names: an elements record per set, 512 of them the shared endpoint maps.
  const encodedOf = new Set(options.elementsEncodedOf);
  const r = new ByteReader(bytes);
  const encoded = encodedOf.size === 0 ? undefined : new ListedEncodedElements(bytes, r);
  if (r.u32() !== MAGIC) throw new RangeError('not a listing buffer');
  const generation = r.u32();
  const listing: TableListing = {
    table: { kind: 'table', family, name: '' },
    chains: [],
    rules: [],
    sets: [],
    elements: [],
    flowtables: [],
  };
  const unreadable: DecodedListing['unreadable'] = [];
  const containers = new Map<string, NftSet | NftMap>();
  const anonymous = new Set<string>();
  // By container and by chain, in dump order: ordered by name at the end without a sort of every element and rule.
  const elementsBySet = new Map<string, Element[]>();
  const rulesByChain = new Map<string, Rule[]>();
  // Where each chain's rule records start, to decode them when asked (rulesOnDemand).
  const ruleStarts = new Map<string, number[]>();
  for (let kind = r.u8(); kind !== 0; kind = r.u8()) {
    const recordStart = r.position;
    const a = r.attrs();
    switch (kind) {
      case KIND.table: {
        listing.table.name = a.str(TABLE_ATTR.NAME) ?? '';
        const c = udataComment(a.get(TABLE_ATTR.USERDATA), UDATA_COMMENT.table);
        if (c !== undefined) listing.table.comment = c;
        break;
      }
      case KIND.chain:
        listing.chains.push(decodeChain(a, family));
        break;
      case KIND.rule: {
        if (onDemand) {
          const chain = a.str(RULE_ATTR.CHAIN)!;
          const starts = ruleStarts.get(chain);
          if (starts === undefined) ruleStarts.set(chain, [recordStart]);
          else starts.push(recordStart);
          r.skipExprs();
          break;
        }
        const rule = decodeRule(r, a, family, unreadable);
        const list = rulesByChain.get(rule.chain);
        if (list === undefined) rulesByChain.set(rule.chain, [rule]);
        else list.push(rule);
        break;
      }
      case KIND.set: {
        const c = decodeSet(a, family);
        if (c === undefined) {
          anonymous.add(a.str(SET_ATTR.NAME)!);
          break;
        }
        containers.set(c.name, c);
        listing.sets.push(c);
        break;
      }
      case KIND.elements: {
        const set = a.str(SET_ATTR.NAME)!;
        const count = r.u32();
        const c = containers.get(set);
        if (encoded && c && encodedOf.has(set) && heldEncoded(c)) {
          encoded.read(c, r, count);
          break;
        }
        const raw: RawAttrs[] = [];
        for (let i = 0; i < count; i++) raw.push(r.attrs());
        if (c && !anonymous.has(set)) {
          const list = elementsBySet.get(set);
          if (list === undefined) elementsBySet.set(set, decodeElements(c, raw));
          else for (const e of decodeElements(c, raw)) list.push(e);
        }
        break;
      }
      case KIND.flowtable:
        listing.flowtables.push(decodeFlowtable(a, family));
        break;
      default:
        throw new RangeError(`unknown record kind ${kind} in listing`);
    }
  }
  const byName = <T extends { name: string }>(x: T, y: T) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0);
  listing.chains.sort(byName);
  listing.sets.sort(byName);
  listing.elements = inOrderOf(listing.sets, elementsBySet);
  listing.flowtables.sort(byName);
  // Rules stay in chain order (the dump's order); chains by name.
  listing.rules = inOrderOf(listing.chains, rulesByChain);
  if (onDemand) Object.assign(listing, rulesOnDemand(bytes, r, ruleStarts, family, unreadable));
  if (encoded) listing.encodedElements = encoded;
  return { generation, listing, unreadable };
}

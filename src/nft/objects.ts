import { assertNever } from '../assert-never.ts';
// The one representation of nftables objects in kube-nft-proxy.
//
// These plain records are what the reconciler renders and diffs, what the
// transaction validates, what the text renderer prints as `nft` syntax and what
// the encoder lowers into the addon's compact binary form. Nothing else in the
// code base describes nftables objects, so the three consumers cannot drift.
//
// Rules are structured statement lists at the level of `nft` syntax (a match,
// a lookup, a verdict...). Lowering to kernel expressions (payload, cmp,
// registers...) happens in one place, just before encoding.

export type Family = 'ip' | 'ip6' | 'inet';

export type ChainType = 'filter' | 'nat' | 'route';
export type ChainHook = 'prerouting' | 'input' | 'forward' | 'output' | 'postrouting' | 'ingress';

/** Data types of set keys, map data and match operands, by their `nft` names. */
export type DataType =
  | 'ipv4_addr'
  | 'ipv6_addr'
  | 'inet_proto'
  | 'inet_service'
  | 'ifname'
  | 'mark'
  /** A 32-bit number in host byte order, as `numgen random mod N` yields (nft: `typeof numgen ...`). */
  | 'integer'
  | 'verdict';

export interface Table {
  kind: 'table';
  family: Family;
  name: string;
  comment?: string;
}

export interface Chain {
  kind: 'chain';
  family: Family;
  table: string;
  name: string;
  /** Present only on base chains; all three go together. */
  base?: { type: ChainType; hook: ChainHook; priority: number; policy?: 'accept' | 'drop' };
  comment?: string;
}

export interface Rule {
  kind: 'rule';
  family: Family;
  table: string;
  chain: string;
  exprs: Statement[];
  comment?: string;
  /** Kernel handle, known only for rules read back from the kernel. */
  handle?: number;
}

export type SetFlag = 'interval' | 'timeout' | 'dynamic' | 'constant';

export interface NftSet {
  kind: 'set';
  family: Family;
  table: string;
  name: string;
  /** One type, or several for a concatenation (`ipv4_addr . inet_proto . inet_service`). */
  keyType: DataType[];
  flags?: SetFlag[];
  /** Default element timeout in seconds. */
  timeout?: number;
  comment?: string;
}

export interface NftMap {
  kind: 'map';
  family: Family;
  table: string;
  name: string;
  keyType: DataType[];
  /**
   * `verdict` for verdict maps (`vmap`); several types for concatenated data
   * (`ipv4_addr . inet_service`, what `dnat ... map` reads), whose element
   * values are then string arrays.
   */
  dataType: DataType | DataType[];
  flags?: SetFlag[];
  comment?: string;
}

/** A verdict as data: map values, rule verdicts. */
export type Verdict = { verdict: 'accept' | 'drop' | 'return' | 'continue' } | { verdict: 'jump' | 'goto'; chain: string };

/**
 * One element of a set or map. Each key part is the text form of a value of the
 * container's key type at the same position: '10.96.0.1', 'fd00::1',
 * '10.0.0.0/8' (interval sets only), 'tcp' (inet_proto), '80' (inet_service),
 * 'eth0' (ifname), '0x4000' (mark).
 */
export interface Element {
  kind: 'element';
  family: Family;
  table: string;
  /** Name of the set or map holding it. */
  set: string;
  key: string[];
  /**
   * Maps only: a verdict for verdict maps, a value text for a map of one data
   * type, one text per part for concatenated data (['10.1.0.5', '8080']).
   */
  value?: Verdict | string | string[];
  /** Seconds, for sets with the timeout flag. */
  timeout?: number;
  comment?: string;
}

/** Whether an element value is a verdict (rather than data text(s)). */
export function isVerdictValue(v: Element['value']): v is Verdict {
  return typeof v === 'object' && !Array.isArray(v);
}

/**
 * As in nft, `delete` of a flowtable that lists devices takes only those devices
 * out of it (the kernel's in-place hook removal: its flows stay offloaded); with
 * no devices it deletes the flowtable.
 */
export interface Flowtable {
  kind: 'flowtable';
  family: Family;
  table: string;
  name: string;
  hook: 'ingress';
  priority: number;
  devices: string[];
}

export type NftObject = Table | Chain | Rule | NftSet | NftMap | Element | Flowtable;
export type NftObjectKind = NftObject['kind'];

// ---------------------------------------------------------------------------
// Rule statements

/** What a match or key reads from the packet or its connection. */
export type Selector =
  | { kind: 'payload'; field: PayloadField }
  | { kind: 'meta'; key: 'l4proto' | 'nfproto' | 'mark' | 'iifname' | 'oifname' | 'iif' | 'oif' }
  | { kind: 'ct'; key: 'state' | 'status' | 'mark' | 'packets' | 'bytes' }
  /** `ct original ip daddr` and friends: the address of one direction of the connection. */
  | { kind: 'ct-addr'; dir: 'original' | 'reply'; field: 'ip saddr' | 'ip daddr' | 'ip6 saddr' | 'ip6 daddr' }
  /** `fib daddr type` / `fib saddr type`: the route type (local, unicast...) of an address. */
  | { kind: 'fib-type'; addr: 'daddr' | 'saddr' }
  /**
   * `numgen random mod N [offset K]`: a fresh random number in [K, K+N) on each
   * evaluation. The offset lets many services share one map of endpoints, each
   * in its own slot range.
   */
  | { kind: 'numgen'; mod: number; offset?: number };

export type PayloadField =
  | 'ip saddr'
  | 'ip daddr'
  | 'ip protocol'
  | 'ip6 saddr'
  | 'ip6 daddr'
  | 'ip6 nexthdr'
  | 'th sport'
  | 'th dport'
  | 'tcp dport'
  | 'udp dport'
  | 'sctp dport';

export type CmpOp = '==' | '!=' | '<' | '>' | '<=' | '>=';

/**
 * The statements kube-nft-proxy writes. Values are texts as in `Element.key`;
 * in addition `ct state` takes a comma list ('established,related'), `fib ... type`
 * takes a route type name ('local'), and an address match may be a prefix
 * ('10.0.0.0/8'), lowered to a mask and a compare.
 */
export type Statement =
  /** `<selector> [& mask] <op> <value>` */
  | { kind: 'match'; left: Selector; op: CmpOp; right: string; mask?: string }
  /** `<key> [. <key>...] [!=] @set` */
  | { kind: 'lookup'; keys: Selector[]; set: string; negate?: boolean }
  /** `<key> [. <key>...] vmap @map` */
  | { kind: 'vmap'; keys: Selector[]; map: string }
  | { kind: 'counter' }
  | ({ kind: 'verdict' } & Verdict)
  /** `dnat ip to 10.1.0.5:8080` (the address family is the one of addr). */
  | { kind: 'dnat'; addr: string; port?: number }
  | { kind: 'snat'; addr: string; port?: number }
  /**
   * `dnat ip addr . port to <keys> map @map`: address and port looked up in a
   * map whose data is `ipv4_addr . inet_service` (`ipv6_addr . inet_service`
   * for ip6). Changing the map's elements changes where packets go without
   * touching the rule (no table re-validation at commit).
   */
  | { kind: 'dnat-map'; family: 'ip' | 'ip6'; keys: Selector[]; map: string }
  | { kind: 'masquerade'; fullyRandom?: boolean }
  | { kind: 'reject'; with: 'icmp port-unreachable' | 'icmpv6 port-unreachable' | 'icmpx port-unreachable' | 'tcp reset' }
  /** `meta mark set meta mark | value` when `or`, else `meta mark set value`. */
  | { kind: 'mark-set'; value: string; or?: boolean }
  /** `meta mark set meta mark ^ value` clears bits known to be set (kube-proxy's masquerade chain). */
  | { kind: 'mark-xor'; value: string }
  /** `update @set { <keys> [timeout Ns] }` / `add @set { ... }` (session affinity). */
  | { kind: 'set-update'; op: 'add' | 'update'; set: string; keys: Selector[]; timeout?: number }
  /** `flow add @flowtable` (KEP-4963). */
  | { kind: 'flow-offload'; flowtable: string }
  | { kind: 'notrack' };

// ---------------------------------------------------------------------------
// Transactions

export type Verb = 'add' | 'create' | 'insert' | 'replace' | 'delete' | 'destroy' | 'flush';

export interface Operation {
  verb: Verb;
  object: NftObject;
}

/** Identity of an object within its family and table, as the kernel keys it. */
export function objectKey(o: NftObject): string {
  switch (o.kind) {
    case 'table':
      return `table ${o.family} ${o.name}`;
    case 'chain':
      return `chain ${o.family} ${o.table} ${o.name}`;
    case 'set':
    case 'map':
      // Sets and maps share one namespace in the kernel.
      return `set ${o.family} ${o.table} ${o.name}`;
    case 'flowtable':
      return `flowtable ${o.family} ${o.table} ${o.name}`;
    case 'element':
      return `element ${o.family} ${o.table} ${o.set} ${o.key.join(' . ')}`;
    case 'rule':
      return `rule ${o.family} ${o.table} ${o.chain} ${o.handle ?? '?'}`;
    default:
      assertNever(o);
  }
}

/** Everything one table holds, in a deterministic order (by name; rules in chain order). */
export interface TableListing {
  table: Table;
  chains: Chain[];
  rules: Rule[];
  sets: Array<NftSet | NftMap>;
  elements: Element[];
  flowtables: Flowtable[];
  /** Sets (and maps) of `sets` whose elements were not read (ListOptions.skipElementsOf): `elements` has none of theirs. */
  elementsNotRead?: string[];
  /**
   * One chain's rules, in the chain's order, decoded when asked for
   * (ListOptions.rulesOnDemand); `rules` is then empty.
   */
  rulesOf?: (chain: string) => Rule[];
  /**
   * True when the chain holds exactly these rules: each one's encoding equal
   * to the listed one as the kernel holds it (registers in one numbering, the
   * attributes the kernel fills in; see sameEncodedExprs), read in place and
   * nothing decoded. False only says they are not recognised: rulesOf then
   * tells whether the rules still mean the same. With rulesOf only.
   */
  holdsEncoded?: (chain: string, rules: readonly Rule[]) => boolean;
  /** The elements of the sets named in ListOptions.elementsEncodedOf, held as the kernel encoded them; `elements` has none of theirs. */
  encodedElements?: EncodedElements;
}

/** Wanted elements of one set by index, each part's value (its key's parts, then its data's): an ElementRun. */
export interface WantedElements {
  readonly set: string;
  value(i: number, part: number): string | number;
}

/** Whether two concatenations of data types are the same, part by part. */
export function sameTypes(a: readonly DataType[], b: readonly DataType[]): boolean {
  return a.length === b.length && a.every((t, i) => t === b[i]);
}

/**
 * Whether a container's elements can be held encoded (ListOptions.elementsEncodedOf): a key of fixed
 * length, no intervals, data (if any) a concatenation, as runs' are.
 */
export function heldEncoded(c: NftSet | NftMap): boolean {
  if (c.flags?.includes('interval')) return false;
  return c.kind === 'set' || Array.isArray(c.dataType);
}

/** Listed elements compared by their bytes with wanted ones, never all decoded (ListOptions.elementsEncodedOf). */
export interface EncodedElements {
  /** Whether the elements of `set` are held here. */
  holds(set: string): boolean;
  /**
   * Keeps the listed element that is wanted element i of `run` as a commit
   * would write it, key and data; false when none is (the wanted one is to be
   * added, and a listed one of its key, which nothing then keeps, deleted).
   */
  keep(run: WantedElements, i: number): boolean;
  /** The listed elements of `set` that nothing kept, decoded: those to delete. */
  notKept(set: string): Element[];
  /**
   * Each listed element of the map `set`, its data as a commit writes it: the
   * first part's bytes at `at` of `bytes` (valid while `fn` runs), in no order.
   */
  forEachData(set: string, fn: (bytes: Uint8Array, at: number) => void): void;
}

/** What a listing leaves out. */
export interface ListOptions {
  /**
   * Sets and maps whose elements are not read, only their definitions: the
   * kernel's dump of a set's elements walks the set again for every message
   * it fills, so reading one of a million elements takes seconds.
   */
  skipElementsOf?: readonly string[];
  /**
   * Rules are decoded a chain at a time, when TableListing.rulesOf asks,
   * instead of all at once: a caller that compares each chain's rules once
   * (adoption) never holds 200k decoded rules at 100k Services.
   */
  rulesOnDemand?: boolean;
  /**
   * Sets and maps whose elements are held as the kernel encoded them
   * (TableListing.encodedElements), not decoded: the shared endpoint maps
   * hold a million at 100k Services. Where a set's elements cannot be held so
   * (intervals, verdicts), or a dataplane does not, they are in `elements`.
   */
  elementsEncodedOf?: readonly string[];
}

// What a well-formed rule statement is: the types selectors read, the operands
// they accept, and which statements make sense in which table family. Shared by
// the transaction (which refuses bad rules before they reach the kernel) and the
// lowering to kernel expressions (which needs each selector's type and width).

import type { DataType, Family, NftMap, NftSet, Selector, Statement } from './objects.ts';
import { renderSelector } from './render-text.ts';
import { canonicalValue, NftValueError } from './values.ts';
import { assertNever } from '../assert-never.ts';

/**
 * The type of value a selector yields. Besides the set-key types:
 * 'ct_state' / 'ct_status' take comma lists of flag names, 'fib_type' a route
 * type name, 'nf_proto' 'ipv4' or 'ipv6', 'integer' a decimal number.
 */
export type SelectorType = DataType | 'ct_state' | 'ct_status' | 'fib_type' | 'nf_proto' | 'integer';

export function selectorType(s: Selector): SelectorType {
  switch (s.kind) {
    case 'payload':
      switch (s.field) {
        case 'ip saddr':
        case 'ip daddr':
          return 'ipv4_addr';
        case 'ip6 saddr':
        case 'ip6 daddr':
          return 'ipv6_addr';
        case 'ip protocol':
        case 'ip6 nexthdr':
          return 'inet_proto';
        case 'th sport':
        case 'th dport':
        case 'tcp dport':
        case 'udp dport':
        case 'sctp dport':
          return 'inet_service';
        default:
          return assertNever(s);
      }
    case 'meta':
      switch (s.key) {
        case 'l4proto':
          return 'inet_proto';
        case 'nfproto':
          return 'nf_proto';
        case 'mark':
          return 'mark';
        case 'iifname':
        case 'oifname':
          return 'ifname';
        case 'iif':
        case 'oif':
          return 'integer';
        default:
          return assertNever(s);
      }
    case 'ct':
      switch (s.key) {
        case 'state':
          return 'ct_state';
        case 'status':
          return 'ct_status';
        case 'mark':
          return 'mark';
        case 'packets':
        case 'bytes':
          return 'integer';
        default:
          return assertNever(s);
      }
    case 'ct-addr':
      return s.field.startsWith('ip6') ? 'ipv6_addr' : 'ipv4_addr';
    case 'fib-type':
      return 'fib_type';
    case 'numgen':
      return 'integer';
    default:
      assertNever(s);
  }
}

/** The largest value an 'integer' selector holds (its kernel register width). */
export function integerMax(s: Selector): number {
  if (s.kind === 'ct' && (s.key === 'packets' || s.key === 'bytes')) return Number.MAX_SAFE_INTEGER;
  // The kernel adds the offset in 32 bits: a range past 2^32 wraps, which no caller means.
  if (s.kind === 'numgen') return (s.offset ?? 0) + s.mod - 1;
  return 0xffffffff;
}

export const CT_STATES = ['invalid', 'established', 'related', 'new', 'untracked'] as const;
export const CT_STATUSES = ['expected', 'seen-reply', 'assured', 'confirmed', 'snat', 'dnat', 'dying'] as const;
export const FIB_TYPES = [
  'unspec',
  'unicast',
  'local',
  'broadcast',
  'anycast',
  'multicast',
  'blackhole',
  'unreachable',
  'prohibit',
] as const;

/** Thrown by the checks below; the transaction adds the operation index. */
export class RuleCheckFailure extends Error {}

function fail(reason: string): never {
  throw new RuleCheckFailure(reason);
}

/** Where a selector can only appear: 'ip' for IPv4-only fields, 'ip6' for IPv6-only. */
function selectorFamily(s: Selector): 'ip' | 'ip6' | undefined {
  const field = s.kind === 'payload' || s.kind === 'ct-addr' ? s.field : '';
  if (field.startsWith('ip6 ')) return 'ip6';
  if (field.startsWith('ip ')) return 'ip';
  return undefined;
}

function checkFamily(family: Family, want: 'ip' | 'ip6' | undefined, what: string): void {
  if (want && family !== 'inet' && family !== want) fail(`${what} cannot be used in a ${family} table`);
}

function checkSelector(s: Selector, family: Family): void {
  if (s.kind === 'numgen' && !(Number.isInteger(s.mod) && s.mod >= 1 && s.mod <= 0xffffffff)) {
    fail(`numgen mod must be an integer from 1, got ${s.mod}`);
  }
  if (
    s.kind === 'numgen' &&
    s.offset !== undefined &&
    !(Number.isInteger(s.offset) && s.offset >= 0 && s.offset + s.mod - 1 <= 0xffffffff)
  ) {
    fail(`numgen offset must be an integer from 0 with offset + mod - 1 below 2^32, got offset ${s.offset} mod ${s.mod}`);
  }
  // The description is only built for the message.
  const want = selectorFamily(s);
  if (want && family !== 'inet' && family !== want) checkFamily(family, want, renderSelector(s));
}

/** A value text valid for a selector's type; prefixes allowed where `prefix` is. */
function checkOperand(s: Selector, text: string, prefix: boolean): void {
  if (typeof text !== 'string') fail(`${renderSelector(s)}: the value must be a string`);
  const type = selectorType(s);
  // Common operands first, without building the selector's description.
  if (type === 'ipv4_addr' || type === 'inet_service' || type === 'inet_proto') {
    if (!prefix && text.includes('/')) fail(`${renderSelector(s)}: a prefix is not allowed here: ${JSON.stringify(text)}`);
    if (isCanonical(type, text)) return;
  }
  const what = renderSelector(s);
  switch (type) {
    case 'ct_state':
    case 'ct_status':
    case 'fib_type': {
      const names: readonly string[] = type === 'ct_state' ? CT_STATES : type === 'ct_status' ? CT_STATUSES : FIB_TYPES;
      const parts = type === 'fib_type' ? [text] : text.split(',');
      for (const p of parts) if (!names.includes(p)) fail(`${what}: ${JSON.stringify(p)} is not one of ${names.join(', ')}`);
      return;
    }
    case 'nf_proto':
      if (text !== 'ipv4' && text !== 'ipv6') fail(`${what}: expected ipv4 or ipv6, got ${JSON.stringify(text)}`);
      return;
    case 'integer': {
      const max = integerMax(s);
      if (!/^(0|[1-9][0-9]{0,15})$/.test(text) || Number(text) > max)
        fail(`${what}: expected an integer 0-${max}, got ${JSON.stringify(text)}`);
      return;
    }
    case 'ipv4_addr':
    case 'ipv6_addr':
    case 'inet_proto':
    case 'inet_service':
    case 'ifname':
    case 'mark':
    case 'verdict':
      if (!prefix && text.includes('/')) fail(`${what}: a prefix is not allowed here: ${JSON.stringify(text)}`);
      checkCanonical(type, text, what);
      return;
    default:
      assertNever(type);
  }
}

/** Whether a value text is valid and canonical (false for anything else: the caller explains). */
export function isCanonical(type: DataType, text: string): boolean {
  try {
    return canonicalValue(type, text) === text;
  } catch (e) {
    if (e instanceof NftValueError) return false;
    throw e;
  }
}

/** The text must be valid and already canonical, so that desired and listed objects compare equal. */
export function checkCanonical(type: DataType, text: string, what: string): void {
  let c: string;
  try {
    c = canonicalValue(type, text);
  } catch (e) {
    if (e instanceof NftValueError) fail(`${what}: ${e.message}`);
    throw e;
  }
  if (c !== text) fail(`${what}: ${JSON.stringify(text)} is not canonical, write ${JSON.stringify(c)}`);
}

const NAME_MAX = 255;

export function checkName(name: unknown, what: string): void {
  if (typeof name !== 'string' || name.length === 0) fail(`${what} name must be a non-empty string`);
  // One pass over the char codes: NUL, double quote and the UTF-8 length.
  let bytes = 0;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c === 0) fail(`${what} name contains NUL`);
    // nft's syntax has no escape inside quoted strings; such a name could not be printed.
    if (c === 34) fail(`${what} name contains a double quote`);
    // Each half of a surrogate pair counts 2: a pair is 4 bytes, a lone half 3 (U+FFFD), at most.
    bytes += c < 0x80 ? 1 : c < 0x800 ? 2 : 3;
  }
  if (bytes > NAME_MAX && Buffer.byteLength(name) > NAME_MAX) fail(`${what} name is longer than ${NAME_MAX} bytes`);
}

/** Sets and maps the checks can look up by name (those known to the transaction). */
export type TableContainerLookup = (name: string) => NftSet | NftMap | undefined;

export function checkStatements(exprs: readonly Statement[], family: Family, lookup: TableContainerLookup): void {
  if (!Array.isArray(exprs) || exprs.length === 0) fail('a rule needs at least one statement');
  let l4Known = false;
  for (let i = 0; i < exprs.length; i++) {
    const st = exprs[i];
    if (!st || typeof st !== 'object') fail(`statement ${i} is not an object`);
    // A port mapping rewrites a transport header, so the rule must first make
    // sure there is one (nft insists, and the kernel would mangle ICMP otherwise).
    if ((((st.kind === 'dnat' || st.kind === 'snat') && st.port !== undefined) || st.kind === 'dnat-map') && !l4Known) {
      fail(`statement ${i} (${st.kind}): a port mapping needs an earlier match on the transport protocol (meta l4proto tcp, ...)`);
    }
    if (st.kind === 'match' && st.op === '==' && fixesTransport(st.left, st.right)) l4Known = true;
    try {
      checkStatement(st, family, lookup);
    } catch (e) {
      if (e instanceof RuleCheckFailure) fail(`statement ${i} (${st.kind}): ${e.message}`);
      throw e;
    }
    if ((st.kind === 'verdict' || st.kind === 'vmap') && i !== exprs.length - 1) {
      fail(`statement ${i} (${st.kind}) ends the rule but more statements follow`);
    }
  }
}

const CMP_OPS = new Set(['==', '!=', '<', '>', '<=', '>=']);
const PORT_PROTOS = new Set(['tcp', 'udp', 'sctp', '136']); // 136: udplite

function fixesTransport(s: Selector, right: string): boolean {
  if (s.kind === 'payload' && (s.field === 'tcp dport' || s.field === 'udp dport' || s.field === 'sctp dport')) return true;
  const proto =
    (s.kind === 'meta' && s.key === 'l4proto') || (s.kind === 'payload' && (s.field === 'ip protocol' || s.field === 'ip6 nexthdr'));
  return proto && PORT_PROTOS.has(right);
}

function checkKeys(keys: readonly Selector[], family: Family, container: NftSet | NftMap | undefined): void {
  if (!Array.isArray(keys) || keys.length === 0) fail('at least one key selector is needed');
  for (const k of keys) {
    checkSelector(k, family);
    const t = selectorType(k);
    // 4-byte integers (numgen, interface indexes) key maps of nft's 32-bit integer type.
    if (t === 'ct_state' || t === 'ct_status' || t === 'fib_type' || t === 'nf_proto' || (t === 'integer' && integerMax(k) > 0xffffffff)) {
      fail(`${renderSelector(k)} cannot key a named set or map`);
    }
  }
  if (container) {
    const got = keys.map(selectorType).join(' . ');
    const want = container.keyType.join(' . ');
    if (got !== want) fail(`keys ${got} do not match ${container.kind} ${container.name} of type ${want}`);
  }
}

/** A comparison: the operator suits the selector's type, the operand (and mask) parse as that type. */
function checkMatch(st: Extract<Statement, { kind: 'match' }>, family: Family): void {
  checkSelector(st.left, family);
  if (!CMP_OPS.has(st.op)) fail(`unknown operator ${JSON.stringify(st.op)}`);
  const t = selectorType(st.left);
  const ordered = t === 'integer' || t === 'inet_service' || t === 'mark';
  if (!ordered && st.op !== '==' && st.op !== '!=') fail(`${renderSelector(st.left)} only compares with == or !=`);
  if (typeof st.right !== 'string') fail('the right-hand value must be a string');
  checkOperand(st.left, st.right, (t === 'ipv4_addr' || t === 'ipv6_addr') && st.mask === undefined);
  if (st.mask !== undefined) {
    if (t !== 'mark' && t !== 'integer') fail(`${renderSelector(st.left)} cannot be masked`);
    checkOperand(st.left, st.mask, false);
  }
}

/** dnat/snat to one canonical address of the table's family, and a port if any. */
function checkNat(st: Extract<Statement, { kind: 'dnat' | 'snat' }>, family: Family): void {
  if (typeof st.addr !== 'string') fail(`${st.kind} address must be a string`);
  const v6 = st.addr.includes(':');
  const type = v6 ? 'ipv6_addr' : 'ipv4_addr';
  if (!isCanonical(type, st.addr)) checkCanonical(type, st.addr, `${st.kind} address`);
  if (st.addr.includes('/')) fail(`${st.kind} takes an address, not a prefix`);
  if (family !== 'inet' && family !== (v6 ? 'ip6' : 'ip'))
    checkFamily(family, v6 ? 'ip6' : 'ip', `an ${v6 ? 'IPv6' : 'IPv4'} ${st.kind} address`);
  if (st.port !== undefined && !(Number.isInteger(st.port) && st.port >= 0 && st.port <= 65535)) {
    fail(`${st.kind} port must be 0-65535, got ${st.port}`);
  }
}

function checkStatement(st: Statement, family: Family, lookup: TableContainerLookup): void {
  switch (st.kind) {
    case 'match':
      checkMatch(st, family);
      return;
    case 'lookup': {
      checkName(st.set, 'set');
      const c = lookup(st.set);
      if (c && c.kind !== 'set') fail(`${st.set} is a map; look it up with vmap`);
      checkKeys(st.keys, family, c);
      return;
    }
    case 'vmap': {
      checkName(st.map, 'map');
      const c = lookup(st.map);
      if (c && (c.kind !== 'map' || c.dataType !== 'verdict')) fail(`${st.map} is not a verdict map`);
      checkKeys(st.keys, family, c);
      return;
    }
    case 'dnat-map': {
      if (st.family !== 'ip' && st.family !== 'ip6') fail(`unknown address family ${JSON.stringify(st.family)}`);
      checkFamily(family, st.family, `dnat ${st.family}`);
      checkName(st.map, 'map');
      const c = lookup(st.map);
      const want = natMapDataType(st.family).join(' . ');
      if (c && (c.kind !== 'map' || !Array.isArray(c.dataType) || c.dataType.join(' . ') !== want))
        fail(`${st.map} is not a map to ${want}`);
      checkKeys(st.keys, family, c);
      return;
    }
    case 'verdict':
      checkVerdict(st);
      return;
    case 'dnat':
    case 'snat':
      checkNat(st, family);
      return;
    case 'masquerade':
    case 'counter':
    case 'notrack':
      return;
    case 'reject': {
      const fam = st.with === 'icmp port-unreachable' ? 'ip' : st.with === 'icmpv6 port-unreachable' ? 'ip6' : undefined;
      if (!['icmp port-unreachable', 'icmpv6 port-unreachable', 'icmpx port-unreachable', 'tcp reset'].includes(st.with)) {
        fail(`unknown reject type ${JSON.stringify(st.with)}`);
      }
      checkFamily(family, fam, `reject with ${st.with}`);
      if (st.with === 'icmpx port-unreachable' && family !== 'inet') fail('reject with icmpx is for inet tables');
      return;
    }
    case 'mark-set':
    case 'mark-xor':
      checkCanonical('mark', st.value, 'mark');
      return;
    case 'set-update': {
      if (st.op !== 'add' && st.op !== 'update') fail(`unknown set operation ${JSON.stringify(st.op)}`);
      checkName(st.set, 'set');
      const c = lookup(st.set);
      if (c && c.kind !== 'set') fail(`${st.set} is a map; set-update needs a set`);
      checkKeys(st.keys, family, c);
      if (st.timeout !== undefined && !(Number.isInteger(st.timeout) && st.timeout >= 1)) {
        fail(`timeout must be a whole number of seconds from 1, got ${st.timeout}`);
      }
      if (c && st.timeout !== undefined && !c.flags?.includes('timeout')) fail(`set ${c.name} has no timeout flag`);
      if (c?.flags?.includes('interval')) fail(`set ${c.name} is an interval set; rules cannot add to it`);
      return;
    }
    case 'flow-offload':
      checkName(st.flowtable, 'flowtable');
      return;
    default:
      // Rules arrive from embedders too: a kind outside the type is their mistake, reported like any other.
      assertNever(st, (x) => fail(`unknown statement kind ${JSON.stringify((x as { kind: unknown }).kind)}`));
  }
}

/** The data a `dnat ... map` reads: an address of the family and a port. */
function natMapDataType(family: 'ip' | 'ip6'): DataType[] {
  return [family === 'ip6' ? 'ipv6_addr' : 'ipv4_addr', 'inet_service'];
}

export function checkVerdict(v: { verdict: string; chain?: string }): void {
  switch (v.verdict) {
    case 'accept':
    case 'drop':
    case 'return':
    case 'continue':
      if (v.chain !== undefined) fail(`${v.verdict} takes no chain`);
      return;
    case 'jump':
    case 'goto':
      checkName(v.chain, v.verdict === 'jump' ? 'jump target chain' : 'goto target chain');
      return;
    default:
      fail(`unknown verdict ${JSON.stringify(v.verdict)}`);
  }
}

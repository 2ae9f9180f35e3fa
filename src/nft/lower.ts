// Lowering: rule Statements (nft-level) into kernel expressions with registers.
//
// Conventions raise.ts relies on (it inverts exactly these shapes):
// - A scalar load goes to NFT_REG_1; concatenated keys go to consecutive 32-bit
//   registers from NFT_REG32_00, each part padded to 4 bytes.
// - Protocol dependencies (`meta nfproto` for ip/ip6 fields in inet tables,
//   `meta l4proto` for tcp/udp/sctp ports and tcp reset) are emitted right before
//   the statement that needs them, for all its keys at once. The dependency of
//   key k loads into NFT_REG32_(15-k), a register nothing else starts at, so a
//   listed rule tells it apart from an explicit `meta l4proto tcp` (NFT_REG_1)
//   and says which key it belongs to: `tcp dport 80` and `meta l4proto tcp
//   th dport 80` mean the same to the kernel, and this keeps
//   raise(lower(x)) === x for both (and for `th dport . tcp dport` keys).
// - Host-endian values (marks, integers) are compared after `byteorder hton`
//   when the comparison orders them; equality compares host bytes directly.

import type { Family, Selector, Statement } from './objects.ts';
import {
  BYTEORDER_HTON, CMP_OP, CT_DIR, CT_KEY, CT_STATE_BIT, CT_STATUS_BIT, DYNSET_OP, FIB_F, FIB_RESULT_ADDRTYPE,
  LOOKUP_F_INV, META_KEY, NAT_RANGE_PROTO_RANDOM_FULLY, NAT_TYPE, NFPROTO, NUMGEN_RANDOM, PAYLOAD_BASE, REG,
  REJECT_TYPE, VERDICT_CODE,
} from './kernel-constants.ts';
import type { KernelExpr } from './kernel-exprs.ts';
import { FIB_TYPES, selectorType } from './rule-checks.ts';
import { prefixRange, valueBytes } from './values.ts';
import type { DataType } from './objects.ts';

export class NftLowerError extends Error {
  readonly code = 'ERR_NFT_LOWER';
  constructor(message: string) {
    super(message);
    this.name = 'NftLowerError';
  }
}

interface PayloadSpec {
  base: number;
  offset: number;
  len: number;
  nfproto?: 'ipv4' | 'ipv6';
  l4proto?: 'tcp' | 'udp' | 'sctp';
}

export const PAYLOAD_FIELDS: Readonly<Record<string, PayloadSpec>> = {
  'ip saddr': { base: PAYLOAD_BASE.network, offset: 12, len: 4, nfproto: 'ipv4' },
  'ip daddr': { base: PAYLOAD_BASE.network, offset: 16, len: 4, nfproto: 'ipv4' },
  'ip protocol': { base: PAYLOAD_BASE.network, offset: 9, len: 1, nfproto: 'ipv4' },
  'ip6 saddr': { base: PAYLOAD_BASE.network, offset: 8, len: 16, nfproto: 'ipv6' },
  'ip6 daddr': { base: PAYLOAD_BASE.network, offset: 24, len: 16, nfproto: 'ipv6' },
  'ip6 nexthdr': { base: PAYLOAD_BASE.network, offset: 6, len: 1, nfproto: 'ipv6' },
  'th sport': { base: PAYLOAD_BASE.transport, offset: 0, len: 2 },
  'th dport': { base: PAYLOAD_BASE.transport, offset: 2, len: 2 },
  'tcp dport': { base: PAYLOAD_BASE.transport, offset: 2, len: 2, l4proto: 'tcp' },
  'udp dport': { base: PAYLOAD_BASE.transport, offset: 2, len: 2, l4proto: 'udp' },
  'sctp dport': { base: PAYLOAD_BASE.transport, offset: 2, len: 2, l4proto: 'sctp' },
};

const L4_NUMBER = { tcp: 6, udp: 17, sctp: 132 } as const;
const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** A dependency of key `index`: `meta nfproto|l4proto == value`, as an explicit statement would be. */
export type Dependency = { key: 'nfproto' | 'l4proto'; value: number; index: number };

export function selectorDependencies(s: Selector, family: Family, index = 0): Dependency[] {
  if (s.kind === 'payload') {
    const spec = PAYLOAD_FIELDS[s.field]!;
    if (spec.l4proto) return [{ key: 'l4proto', value: L4_NUMBER[spec.l4proto], index }];
    if (spec.nfproto && family === 'inet') return [{ key: 'nfproto', value: NFPROTO[spec.nfproto], index }];
  }
  if (s.kind === 'ct-addr' && family === 'inet') {
    return [{ key: 'nfproto', value: s.field.startsWith('ip6') ? NFPROTO.ipv6 : NFPROTO.ipv4, index }];
  }
  return [];
}

export function statementDependencies(st: Statement, family: Family): Dependency[] {
  switch (st.kind) {
    case 'match':
      return selectorDependencies(st.left, family);
    case 'lookup':
    case 'vmap':
    case 'set-update':
      return st.keys.flatMap((k, i) => selectorDependencies(k, family, i));
    case 'reject':
      return st.with === 'tcp reset' ? [{ key: 'l4proto', value: L4_NUMBER.tcp, index: 0 }] : [];
    default:
      return [];
  }
}

/** The register the dependency of key 0 loads into (NFT_REG32_15); key k uses 15-k. */
export const DEPENDENCY_REG = 23;
/** Keys past this one cannot carry a dependency (their register would be NFT_REG_1's). */
export const MAX_DEPENDENCY_INDEX = 14;

export function dependencyExprs(d: Dependency): KernelExpr[] {
  if (d.index > MAX_DEPENDENCY_INDEX) throw new NftLowerError(`key ${d.index} of a concatenation cannot carry a protocol dependency`);
  const reg = DEPENDENCY_REG - d.index;
  return [
    { name: 'meta', key: META_KEY[d.key], dreg: reg },
    { name: 'cmp', sreg: reg, op: CMP_OP['=='], data: Uint8Array.of(d.value) },
  ];
}

/** Bytes a selector loads into its register(s). */
export function selectorWidth(s: Selector): number {
  switch (s.kind) {
    case 'payload':
      return PAYLOAD_FIELDS[s.field]!.len;
    case 'meta':
      return s.key === 'l4proto' || s.key === 'nfproto' ? 1 : s.key === 'iifname' || s.key === 'oifname' ? 16 : 4;
    case 'ct':
      return s.key === 'packets' || s.key === 'bytes' ? 8 : 4;
    case 'ct-addr':
      return s.field.startsWith('ip6') ? 16 : 4;
    case 'fib-type':
    case 'numgen':
      return 4;
  }
}

export function loadExpr(s: Selector, dreg: number): KernelExpr {
  switch (s.kind) {
    case 'payload': {
      const spec = PAYLOAD_FIELDS[s.field];
      if (!spec) throw new NftLowerError(`unknown payload field ${JSON.stringify(s.field)}`);
      return { name: 'payload', dreg, base: spec.base, offset: spec.offset, len: spec.len };
    }
    case 'meta':
      return { name: 'meta', key: META_KEY[s.key], dreg };
    case 'ct':
      return { name: 'ct', dreg, key: CT_KEY[s.key] };
    case 'ct-addr': {
      const v6 = s.field.startsWith('ip6');
      const dst = s.field.endsWith('daddr');
      const key = v6 ? (dst ? CT_KEY.dst_ip6 : CT_KEY.src_ip6) : dst ? CT_KEY.dst_ip : CT_KEY.src_ip;
      return { name: 'ct', dreg, key, dir: CT_DIR[s.dir] };
    }
    case 'fib-type':
      return { name: 'fib', dreg, result: FIB_RESULT_ADDRTYPE, flags: s.addr === 'daddr' ? FIB_F.daddr : FIB_F.saddr };
    case 'numgen':
      return { name: 'numgen', dreg, modulus: s.mod, type: NUMGEN_RANDOM, offset: 0 };
  }
}

/** Host-order bytes of an unsigned integer of width 4 or 8. */
export function hostBytes(value: bigint, width: number): Uint8Array {
  const out = new Uint8Array(width);
  const view = new DataView(out.buffer);
  if (width === 8) view.setBigUint64(0, value, LITTLE);
  else view.setUint32(0, Number(value), LITTLE);
  return out;
}

export function networkBytes(value: bigint, width: number): Uint8Array {
  const out = new Uint8Array(width);
  const view = new DataView(out.buffer);
  if (width === 8) view.setBigUint64(0, value, false);
  else view.setUint32(0, Number(value), false);
  return out;
}

/** Whether the kernel holds a selector's value in host byte order. */
export function isHostOrder(s: Selector): boolean {
  const t = selectorType(s);
  return t === 'mark' || t === 'integer' || t === 'fib_type' || t === 'ct_state' || t === 'ct_status';
}

function flagBits(names: string, bits: Readonly<Record<string, number>>): number {
  let v = 0;
  for (const n of names.split(',')) {
    const b = bits[n];
    if (b === undefined) throw new NftLowerError(`unknown flag ${JSON.stringify(n)}`);
    v |= b;
  }
  return v >>> 0;
}

/** The numeric value of an operand of a host-order selector. */
export function hostValue(s: Selector, text: string): bigint {
  switch (selectorType(s)) {
    case 'mark':
      return BigInt(Number.parseInt(text.slice(2), 16) >>> 0);
    case 'fib_type': {
      const i = (FIB_TYPES as readonly string[]).indexOf(text);
      if (i < 0) throw new NftLowerError(`unknown route type ${JSON.stringify(text)}`);
      return BigInt(i);
    }
    case 'ct_state':
      return BigInt(flagBits(text, CT_STATE_BIT));
    case 'ct_status':
      return BigInt(flagBits(text, CT_STATUS_BIT));
    default:
      if (!/^(0|[1-9][0-9]*)$/.test(text)) throw new NftLowerError(`expected an integer, got ${JSON.stringify(text)}`);
      return BigInt(text);
  }
}

/** Bytes of an operand as the kernel compares it with a loaded selector. */
export function operandBytes(s: Selector, text: string): Uint8Array {
  const t = selectorType(s);
  if (t === 'nf_proto') {
    if (text !== 'ipv4' && text !== 'ipv6') throw new NftLowerError(`expected ipv4 or ipv6, got ${JSON.stringify(text)}`);
    return Uint8Array.of(NFPROTO[text]);
  }
  if (isHostOrder(s)) return hostBytes(hostValue(s, text), selectorWidth(s));
  return valueBytes(t as DataType, text);
}

/** A key value as stored in a set: marks in host order (nft's mark type is host-endian). */
export function keyBytes(type: DataType, text: string): Uint8Array {
  const b = valueBytes(type, text);
  return type === 'mark' && LITTLE ? b.reverse() : b;
}

function padTo4(n: number): number {
  return (n + 3) & ~3;
}

/** Loads for the keys of a lookup, vmap or set update; returns the source register. */
function keyLoads(keys: readonly Selector[]): { exprs: KernelExpr[]; sreg: number } {
  if (keys.length === 1) return { exprs: [loadExpr(keys[0]!, REG.R1)], sreg: REG.R1 };
  const exprs: KernelExpr[] = [];
  let reg: number = REG.R32_00;
  for (const k of keys) {
    exprs.push(loadExpr(k, reg));
    reg += padTo4(selectorWidth(k)) / 4;
  }
  if (reg - REG.R32_00 > 16) throw new NftLowerError('a concatenated key is longer than 64 bytes');
  return { exprs, sreg: REG.R32_00 };
}

function lowerMatch(st: Extract<Statement, { kind: 'match' }>): KernelExpr[] {
  const s = st.left;
  const t = selectorType(s);
  const width = selectorWidth(s);
  const out: KernelExpr[] = [loadExpr(s, REG.R1)];
  const op = CMP_OP[st.op];
  if (op === undefined) throw new NftLowerError(`unknown operator ${JSON.stringify(st.op)}`);
  if (t === 'ct_state' || t === 'ct_status') {
    if (st.op !== '==' && st.op !== '!=') throw new NftLowerError(`${t} only compares with == or !=`);
    out.push({ name: 'bitwise', sreg: REG.R1, dreg: REG.R1, len: 4, mask: operandBytes(s, st.right), xor: new Uint8Array(4) });
    out.push({ name: 'cmp', sreg: REG.R1, op: st.op === '==' ? CMP_OP['!='] : CMP_OP['=='], data: new Uint8Array(4) });
    return out;
  }
  if ((t === 'ipv4_addr' || t === 'ipv6_addr') && st.right.includes('/')) {
    if (st.op !== '==' && st.op !== '!=') throw new NftLowerError('a prefix only compares with == or !=');
    const { start } = prefixRange(t, st.right);
    const len = Number(st.right.slice(st.right.indexOf('/') + 1));
    const mask = new Uint8Array(width);
    for (let i = 0; i < len; i++) mask[i >> 3]! |= 0x80 >> (i & 7);
    out.push({ name: 'bitwise', sreg: REG.R1, dreg: REG.R1, len: width, mask, xor: new Uint8Array(width) });
    out.push({ name: 'cmp', sreg: REG.R1, op, data: start });
    return out;
  }
  if (st.mask !== undefined) {
    out.push({ name: 'bitwise', sreg: REG.R1, dreg: REG.R1, len: width, mask: operandBytes(s, st.mask), xor: new Uint8Array(width) });
  }
  const ordered = st.op !== '==' && st.op !== '!=';
  if (ordered && isHostOrder(s)) {
    out.push({ name: 'byteorder', sreg: REG.R1, dreg: REG.R1, op: BYTEORDER_HTON, len: width, size: width });
    out.push({ name: 'cmp', sreg: REG.R1, op, data: networkBytes(hostValue(s, st.right), width) });
    return out;
  }
  out.push({ name: 'cmp', sreg: REG.R1, op, data: operandBytes(s, st.right) });
  return out;
}

function verdictExpr(v: { verdict: string; chain?: string }): KernelExpr {
  const code = VERDICT_CODE[v.verdict as keyof typeof VERDICT_CODE];
  if (code === undefined) throw new NftLowerError(`unknown verdict ${JSON.stringify(v.verdict)}`);
  const e: KernelExpr = { name: 'immediate', dreg: REG.VERDICT, verdict: code >>> 0 };
  if (v.verdict === 'jump' || v.verdict === 'goto') e.chain = v.chain!;
  return e;
}

function markBytes(text: string): Uint8Array {
  return keyBytes('mark', text);
}

function lowerCore(st: Statement): KernelExpr[] {
  switch (st.kind) {
    case 'match':
      return lowerMatch(st);
    case 'lookup': {
      const { exprs, sreg } = keyLoads(st.keys);
      const e: KernelExpr = { name: 'lookup', sreg, set: st.set };
      if (st.negate) e.flags = LOOKUP_F_INV;
      return [...exprs, e];
    }
    case 'vmap': {
      const { exprs, sreg } = keyLoads(st.keys);
      return [...exprs, { name: 'lookup', sreg, dreg: REG.VERDICT, set: st.map }];
    }
    case 'set-update': {
      const { exprs, sreg } = keyLoads(st.keys);
      const e: KernelExpr = { name: 'dynset', sreg_key: sreg, op: DYNSET_OP[st.op], set: st.set };
      if (st.timeout !== undefined) e.timeout = BigInt(st.timeout) * 1000n;
      return [...exprs, e];
    }
    case 'counter':
      return [{ name: 'counter' }];
    case 'verdict':
      return [verdictExpr(st)];
    case 'dnat':
    case 'snat': {
      const v6 = st.addr.includes(':');
      const out: KernelExpr[] = [{ name: 'immediate', dreg: REG.R1, data: valueBytes(v6 ? 'ipv6_addr' : 'ipv4_addr', st.addr) }];
      const nat: KernelExpr = { name: 'nat', type: NAT_TYPE[st.kind], family: v6 ? NFPROTO.ipv6 : NFPROTO.ipv4, reg_addr_min: REG.R1 };
      if (st.port !== undefined) {
        out.push({ name: 'immediate', dreg: REG.R2, data: Uint8Array.of(st.port >> 8, st.port & 0xff) });
        nat.reg_proto_min = REG.R2;
      }
      out.push(nat);
      return out;
    }
    case 'masquerade':
      return [st.fullyRandom ? { name: 'masq', flags: NAT_RANGE_PROTO_RANDOM_FULLY } : { name: 'masq' }];
    case 'reject':
      switch (st.with) {
        case 'tcp reset':
          return [{ name: 'reject', type: REJECT_TYPE.tcpRst }];
        case 'icmp port-unreachable':
          return [{ name: 'reject', type: REJECT_TYPE.icmp, code: 3 }];
        case 'icmpv6 port-unreachable':
          return [{ name: 'reject', type: REJECT_TYPE.icmp, code: 4 }];
        case 'icmpx port-unreachable':
          return [{ name: 'reject', type: REJECT_TYPE.icmpx, code: 1 }];
      }
      throw new NftLowerError(`unknown reject type ${JSON.stringify((st as { with: unknown }).with)}`);
    case 'mark-set': {
      const v = markBytes(st.value);
      if (!st.or) {
        return [
          { name: 'immediate', dreg: REG.R1, data: v },
          { name: 'meta', key: META_KEY.mark, sreg: REG.R1 },
        ];
      }
      return [
        { name: 'meta', key: META_KEY.mark, dreg: REG.R1 },
        { name: 'bitwise', sreg: REG.R1, dreg: REG.R1, len: 4, mask: v.map((b) => ~b & 0xff), xor: v },
        { name: 'meta', key: META_KEY.mark, sreg: REG.R1 },
      ];
    }
    case 'mark-xor':
      return [
        { name: 'meta', key: META_KEY.mark, dreg: REG.R1 },
        { name: 'bitwise', sreg: REG.R1, dreg: REG.R1, len: 4, mask: new Uint8Array([255, 255, 255, 255]), xor: markBytes(st.value) },
        { name: 'meta', key: META_KEY.mark, sreg: REG.R1 },
      ];
    case 'flow-offload':
      return [{ name: 'flow_offload', table: st.flowtable }];
    case 'notrack':
      return [{ name: 'notrack' }];
  }
  throw new NftLowerError(`unknown statement kind ${JSON.stringify((st as { kind: unknown }).kind)}`);
}

/** Lowers one statement, with its protocol dependencies. */
export function lowerStatement(st: Statement, family: Family): KernelExpr[] {
  return [...statementDependencies(st, family).flatMap(dependencyExprs), ...lowerCore(st)];
}

/** Lowers a rule's statements into the kernel expressions the addon sends. */
export function lower(statements: readonly Statement[], family: Family): KernelExpr[] {
  return statements.flatMap((st) => lowerStatement(st, family));
}

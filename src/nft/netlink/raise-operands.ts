// Operands of raising (see raise.ts): loads back into selectors, compared
// bytes back into nft's text, and the small readers both use.

import { LITTLE } from './listing-reader.ts';
import type { Selector } from '../objects.ts';
import { CMP_OP, CT_DIR, CT_KEY, FIB_F, FIB_RESULT_ADDRTYPE, META_KEY, NFPROTO, NUMGEN_RANDOM, VERDICT_CODE } from './kernel-constants.ts';
import type { FieldValue, KernelExpr } from './kernel-exprs.ts';
import { isHostOrder, networkBytes, PAYLOAD_FIELDS, selectorWidth } from './lower.ts';
import { FIB_TYPES, selectorType } from '../rule-checks.ts';
import { valueFromBytes } from '../values.ts';
import type { DataType } from '../objects.ts';

export const LOADS = new Set(['payload', 'meta', 'ct', 'fib', 'numgen']);

/** Fields of e other than name, which must all be among `allowed` (absent ones are fine). */
export function only(e: KernelExpr, ...allowed: string[]): boolean {
  for (const k of Object.keys(e)) if (k !== 'name' && !allowed.includes(k)) return false;
  return true;
}

export function bytes(v: FieldValue | undefined): Uint8Array | undefined {
  return v instanceof Uint8Array ? v : undefined;
}

export function eqBytes(a: Uint8Array | undefined, b: Uint8Array): boolean {
  return a !== undefined && a.length === b.length && a.every((x, i) => x === b[i]);
}

export function invert<T extends Record<string, number>>(o: T): Map<number, keyof T> {
  return new Map(Object.entries(o).map(([k, v]) => [v, k as keyof T]));
}
export const META_BY_KEY = invert(META_KEY);
export const CMP_BY_OP = invert(CMP_OP);
export const VERDICT_BY_CODE = invert(VERDICT_CODE);

type PlainPayloadField = 'ip saddr' | 'ip daddr' | 'ip protocol' | 'ip6 saddr' | 'ip6 daddr' | 'ip6 nexthdr' | 'th sport' | 'th dport';

// Built once: a listing raises every rule's loads (hundreds of thousands at 100k Services).
/** The plain payload fields by base/offset/len: tcp/udp/sctp dport are told apart by their dependency. */
const PAYLOAD_BY_PLACE: ReadonlyMap<string, PlainPayloadField> = new Map(
  (['ip saddr', 'ip daddr', 'ip protocol', 'ip6 saddr', 'ip6 daddr', 'ip6 nexthdr', 'th sport', 'th dport'] as const).map(
    (field): [string, PlainPayloadField] => {
      const p = PAYLOAD_FIELDS[field]!;
      return [`${p.base}/${p.offset}/${p.len}`, field];
    },
  ),
);
const CT_ADDR_BY_KEY = new Map<number, 'ip saddr' | 'ip daddr' | 'ip6 saddr' | 'ip6 daddr'>([
  [CT_KEY.src_ip, 'ip saddr'],
  [CT_KEY.dst_ip, 'ip daddr'],
  [CT_KEY.src_ip6, 'ip6 saddr'],
  [CT_KEY.dst_ip6, 'ip6 daddr'],
]);
const CT_BY_KEY: ReadonlyMap<number, 'state' | 'status' | 'mark' | 'packets' | 'bytes'> = new Map(
  (['state', 'status', 'mark', 'packets', 'bytes'] as const).map((k) => [CT_KEY[k], k] as const),
);

/** The selector a load expression reads, or null; its dreg is checked by the caller. */
export function parseLoad(e: KernelExpr | undefined): Selector | null {
  if (!e || !LOADS.has(e.name) || typeof e.dreg !== 'number') return null;
  switch (e.name) {
    case 'payload': {
      if (!only(e, 'dreg', 'base', 'offset', 'len')) return null;
      if (typeof e.base !== 'number' || typeof e.offset !== 'number' || typeof e.len !== 'number') return null;
      const field = PAYLOAD_BY_PLACE.get(`${e.base}/${e.offset}/${e.len}`);
      return field ? { kind: 'payload', field } : null;
    }
    case 'meta': {
      const key = META_BY_KEY.get(e.key as number);
      return key && only(e, 'key', 'dreg') ? { kind: 'meta', key } : null;
    }
    case 'ct': {
      if (!only(e, 'dreg', 'key', 'dir')) return null;
      const field = CT_ADDR_BY_KEY.get(e.key as number);
      if (field) {
        const dir = e.dir === CT_DIR.original ? 'original' : e.dir === CT_DIR.reply ? 'reply' : undefined;
        return dir ? { kind: 'ct-addr', dir, field } : null;
      }
      if (e.dir !== undefined) return null;
      const key = CT_BY_KEY.get(e.key as number);
      return key ? { kind: 'ct', key } : null;
    }
    case 'fib':
      if (!only(e, 'dreg', 'result', 'flags') || e.result !== FIB_RESULT_ADDRTYPE) return null;
      return e.flags === FIB_F.daddr
        ? { kind: 'fib-type', addr: 'daddr' }
        : e.flags === FIB_F.saddr
          ? { kind: 'fib-type', addr: 'saddr' }
          : null;
    case 'numgen':
      if (!only(e, 'dreg', 'modulus', 'type', 'offset') || e.type !== NUMGEN_RANDOM || typeof e.modulus !== 'number') return null;
      if (e.offset === undefined || e.offset === 0) return { kind: 'numgen', mod: e.modulus };
      return typeof e.offset === 'number' ? { kind: 'numgen', mod: e.modulus, offset: e.offset } : null;
  }
  return null;
}

export function readHost(b: Uint8Array): bigint {
  const v = new DataView(b.buffer, b.byteOffset, b.length);
  return b.length === 8 ? v.getBigUint64(0, LITTLE) : BigInt(v.getUint32(0, LITTLE));
}
export function readNet(b: Uint8Array): bigint {
  const v = new DataView(b.buffer, b.byteOffset, b.length);
  return b.length === 8 ? v.getBigUint64(0, false) : BigInt(v.getUint32(0, false));
}

export function flagNames(v: number, bits: Readonly<Record<string, number>>, order: readonly string[]): string | null {
  const names = order.filter((n) => (v & bits[n]!) !== 0);
  let rest = v;
  for (const n of names) rest &= ~bits[n]!;
  return rest === 0 && names.length > 0 ? names.join(',') : null;
}

/** The operand text of bytes compared with a selector (host or network order as the kernel holds it). */
export function operandText(s: Selector, b: Uint8Array, hostValue?: bigint): string | null {
  const t = selectorType(s);
  try {
    if (t === 'nf_proto') return b.length === 1 ? (b[0] === NFPROTO.ipv4 ? 'ipv4' : b[0] === NFPROTO.ipv6 ? 'ipv6' : null) : null;
    if (isHostOrder(s)) {
      if (b.length !== selectorWidth(s)) return null;
      const v = hostValue ?? readHost(b);
      if (t === 'mark') return valueFromBytes('mark', networkBytes(v, 4));
      if (t === 'fib_type') return FIB_TYPES[Number(v)] ?? null;
      return v.toString();
    }
    return valueFromBytes(t as DataType, b);
  } catch {
    return null;
  }
}

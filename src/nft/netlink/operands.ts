// Operands as the kernel holds them: what each selector loads (payload
// offsets, widths), which values are host-endian, and the bytes a match
// operand or set key becomes. Shared by lower.ts, raise.ts and the element encoder.

import { LITTLE } from './listing-reader.ts';
import type { DataType, Selector } from '../objects.ts';
import { CT_STATE_BIT, CT_STATUS_BIT, NFPROTO, PAYLOAD_BASE } from './kernel-constants.ts';
import { FIB_TYPES, selectorType } from '../rule-checks.ts';
import { typeLength, valueBytes, writeValueBytes, writeValueNumber } from '../values.ts';
import { assertNever } from '../../assert-never.ts';

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
    default:
      assertNever(s);
  }
}

/** Host-order bytes of an unsigned integer of width 4 or 8. */
function hostBytes(value: bigint, width: number): Uint8Array {
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

/** Strict decimal (no sign, no leading zeros) up to max. */
function decimal(text: string, max: number): number {
  const n = text.length;
  let v = 0;
  let ok = n > 0 && n <= 16 && !(n > 1 && text.charCodeAt(0) === 48);
  for (let i = 0; ok && i < n; i++) {
    const d = text.charCodeAt(i) - 48;
    ok = d >= 0 && d <= 9;
    v = v * 10 + d;
  }
  if (!ok || v > max) throw new NftLowerError(`expected an integer 0-${max}, got ${JSON.stringify(text)}`);
  return v;
}

/** The numeric value of an operand of a host-order selector (isHostOrder) of 4 bytes or less. */
export function hostValue32(s: Selector, text: string): number {
  const type = selectorType(s);
  switch (type) {
    case 'mark':
      return Number.parseInt(text.slice(2), 16) >>> 0;
    case 'fib_type': {
      const i = (FIB_TYPES as readonly string[]).indexOf(text);
      if (i < 0) throw new NftLowerError(`unknown route type ${JSON.stringify(text)}`);
      return i;
    }
    case 'ct_state':
      return flagBits(text, CT_STATE_BIT);
    case 'ct_status':
      return flagBits(text, CT_STATUS_BIT);
    case 'integer':
      return decimal(text, 0xffffffff);
    case 'ipv4_addr':
    case 'ipv6_addr':
    case 'inet_proto':
    case 'inet_service':
    case 'ifname':
    case 'verdict':
    case 'nf_proto':
      throw new NftLowerError(`${type} operands are not host-order numbers`);
    default:
      return assertNever(type);
  }
}

/** The numeric value of an operand of a host-order selector. */
export function hostValue(s: Selector, text: string): bigint {
  if (selectorWidth(s) === 8) {
    if (!/^(0|[1-9][0-9]*)$/.test(text)) throw new NftLowerError(`expected an integer, got ${JSON.stringify(text)}`);
    return BigInt(text);
  }
  return BigInt(hostValue32(s, text));
}

export function writeHost32(buf: Uint8Array, at: number, v: number): void {
  for (let i = 0; i < 4; i++) buf[at + (LITTLE ? i : 3 - i)] = (v >>> (8 * i)) & 0xff;
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

/** Whether a key or data type is held in host byte order (nft's mark and integer types are). */
function isHostOrderType(type: DataType): boolean {
  return type === 'mark' || type === 'integer';
}

/** A key value as stored in a set: marks and integers in host order. */
export function keyBytes(type: DataType, text: string): Uint8Array {
  const b = valueBytes(type, text);
  return isHostOrderType(type) && LITTLE ? b.reverse() : b;
}

/**
 * The bytes of a map's data: one value, or a concatenation laid out as keys
 * are (each part padded to 4 bytes), so that a lookup's data register holds
 * the address in its first 32-bit register(s) and the port in the next one.
 */
export function dataBytes(type: DataType | readonly DataType[], value: string | readonly string[]): Uint8Array {
  if (!Array.isArray(type)) {
    if (typeof value !== 'string') throw new NftLowerError(`a ${type as string} value is one text, got ${JSON.stringify(value)}`);
    return keyBytes(type as DataType, value);
  }
  const types = type as readonly DataType[];
  if (!Array.isArray(value) || value.length !== types.length) {
    throw new NftLowerError(`a ${types.join(' . ')} value has ${types.length} parts, got ${JSON.stringify(value)}`);
  }
  let len = 0;
  for (const t of types) len += (typeLength(t) + 3) & ~3;
  const out = new Uint8Array(len);
  for (let k = 0, at = 0; k < types.length; k++) {
    out.set(keyBytes(types[k]!, value[k]!), at);
    at += (typeLength(types[k]!) + 3) & ~3;
  }
  return out;
}

/**
 * Writes keyBytes(type, text) at buf[at...] without allocating for the common
 * types; a number (of a numeric type) as its decimal text.
 */
export function writeKeyBytes(buf: Uint8Array, at: number, type: DataType, text: string | number): void {
  if (typeof text === 'number') writeValueNumber(buf, at, type, text);
  else writeValueBytes(buf, at, type, text);
  if (isHostOrderType(type) && LITTLE) {
    const b0 = buf[at]!;
    const b1 = buf[at + 1]!;
    buf[at] = buf[at + 3]!;
    buf[at + 1] = buf[at + 2]!;
    buf[at + 2] = b1;
    buf[at + 3] = b0;
  }
}

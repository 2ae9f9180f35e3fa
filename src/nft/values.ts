// Text and byte forms of the values nftables keys, data and match operands hold.
//
// One canonical text per value, so that two objects that mean the same thing
// compare equal as strings (the reconciler diffs texts) and so that what is read
// back from the kernel prints exactly as what was written. Bytes are what the
// kernel stores: network byte order, no padding except ifname (NUL-padded to 16).
//
// Addresses are read and written by the one IP codec (src/net/ip.ts) in its
// strict syntax: an IPv4 address with a leading zero ('010.0.0.1') is refused,
// not guessed at (octal or decimal?). Normalising Kubernetes input is the
// model's job, with the same codec's lenient syntax. The other parsers walk
// char codes by hand too: they sit on hot paths (100k elements per full sync).

import { formatIPv4, formatIPv6, isFormattedIPv6, readIPv4, readIPv6 } from '../net/ip.ts';
import type { DataType } from './objects.ts';
import { assertNever } from '../assert-never.ts';

/** A value text or byte string that is not a valid value of its type. */
export class NftValueError extends Error {
  readonly code = 'ERR_NFT_VALUE';
  readonly type: DataType;
  readonly text: string;
  constructor(type: DataType, text: string, reason: string) {
    super(`invalid ${type} value ${JSON.stringify(text)}: ${reason}`);
    this.name = 'NftValueError';
    this.type = type;
    this.text = text;
  }
}

/** Bytes one value of the type occupies in a key or datum (before register padding). */
export function typeLength(type: DataType): number {
  switch (type) {
    case 'ipv4_addr':
      return 4;
    case 'ipv6_addr':
      return 16;
    case 'inet_proto':
      return 1;
    case 'inet_service':
      return 2;
    case 'ifname':
      return IFNAMSIZ;
    case 'mark':
    case 'integer':
      return 4;
    case 'verdict':
      throw new NftValueError(type, '', 'verdicts have no fixed byte form');
    default:
      assertNever(type);
  }
}

const IFNAMSIZ = 16;
const UTF8_ENCODER = new TextEncoder();
const UTF8_DECODER = new TextDecoder('utf-8');

const PROTO_BY_NAME: Record<string, number> = { tcp: 6, udp: 17, sctp: 132, icmp: 1, icmpv6: 58, 'ipv6-icmp': 58 };
const PROTO_NAME: Record<number, string> = { 6: 'tcp', 17: 'udp', 132: 'sctp', 1: 'icmp', 58: 'icmpv6' };

/** Validates a value text and returns its one canonical spelling. Throws NftValueError. */
export function canonicalValue(type: DataType, text: string): string {
  switch (type) {
    case 'ipv4_addr':
    case 'ipv6_addr': {
      const slash = text.indexOf('/');
      if (slash < 0) {
        if (type === 'ipv4_addr') {
          parseIPv4(text, 0, text.length, null, 0);
          return text;
        }
        parseIPv6(text, text.length, IPV6_SCRATCH);
        return isFormattedIPv6(text, IPV6_SCRATCH) ? text : formatIPv6(IPV6_SCRATCH);
      }
      const p = parsePrefix(type, text, slash);
      const addr = type === 'ipv4_addr' ? text.slice(0, slash) : formatIPv6(p.bytes);
      return p.len === p.bytes.length * 8 ? addr : `${addr}/${p.len}`;
    }
    case 'inet_proto': {
      const n = PROTO_BY_NAME[text];
      if (n !== undefined) return PROTO_NAME[n]!;
      const v = parseDecimal(type, text, 255);
      return PROTO_NAME[v] ?? String(v);
    }
    case 'inet_service':
      parseDecimal(type, text, 65535);
      return text;
    case 'mark':
      return formatMark(parseMark(text));
    case 'integer':
      parseDecimal(type, text, 0xffffffff);
      return text;
    case 'ifname':
      checkIfname(text);
      return text;
    case 'verdict':
      throw new NftValueError(type, text, 'verdicts are not value texts');
    default:
      assertNever(type);
  }
}

/** The bytes the kernel stores for a value text (not for a prefix: see prefixRange). */
export function valueBytes(type: DataType, text: string): Uint8Array {
  switch (type) {
    case 'ipv4_addr': {
      const out = new Uint8Array(4);
      parseIPv4(text, 0, text.length, out, 0);
      return out;
    }
    case 'ipv6_addr':
      return parseIPv6Whole(text);
    case 'inet_proto': {
      const n = PROTO_BY_NAME[text] ?? parseDecimal(type, text, 255);
      return Uint8Array.of(n);
    }
    case 'inet_service': {
      const n = parseDecimal(type, text, 65535);
      return Uint8Array.of(n >>> 8, n & 0xff);
    }
    case 'mark':
    case 'integer': {
      // Network order like every other type here; keyBytes turns both into host order.
      const n = type === 'mark' ? parseMark(text) : parseDecimal(type, text, 0xffffffff);
      return Uint8Array.of(n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);
    }
    case 'ifname': {
      checkIfname(text);
      // nft's wildcard: `iifname "veth*"` compares only the prefix's bytes (no NUL).
      if (text.endsWith('*')) return UTF8_ENCODER.encode(text.slice(0, -1));
      const out = new Uint8Array(IFNAMSIZ);
      UTF8_ENCODER.encodeInto(text, out);
      return out;
    }
    case 'verdict':
      throw new NftValueError(type, text, 'verdicts have no byte form here');
    default:
      assertNever(type);
  }
}

/**
 * Writes valueBytes(type, text) at buf[at...], without allocating for the
 * hot types (addresses, ports, protocols, marks). Throws NftValueError.
 */
export function writeValueBytes(buf: Uint8Array, at: number, type: DataType, text: string): void {
  switch (type) {
    case 'ipv4_addr':
      parseIPv4(text, 0, text.length, buf, at);
      return;
    case 'inet_service':
      writeBigEndian(buf, at, parseDecimal(type, text, 65535), 2);
      return;
    case 'inet_proto':
      buf[at] = PROTO_BY_NAME[text] ?? parseDecimal(type, text, 255);
      return;
    case 'mark':
      writeBigEndian(buf, at, parseMark(text), 4);
      return;
    case 'integer':
      writeBigEndian(buf, at, parseDecimal(type, text, 0xffffffff), 4);
      return;
    case 'ipv6_addr':
      parseIPv6(text, text.length, IPV6_SCRATCH);
      for (let i = 0; i < 16; i++) buf[at + i] = IPV6_SCRATCH[i]!;
      return;
    case 'ifname':
    case 'verdict':
      buf.set(valueBytes(type, text), at);
      return;
    default:
      assertNever(type);
  }
}

/** writeValueBytes for a number of a numeric type: the bytes of its decimal text. Throws NftValueError. */
export function writeValueNumber(buf: Uint8Array, at: number, type: DataType, n: number): void {
  const max = type === 'inet_service' ? 0xffff : type === 'inet_proto' ? 0xff : type === 'mark' || type === 'integer' ? 0xffffffff : -1;
  if (max < 0) throw new NftValueError(type, String(n), 'a number is no value of this type');
  if (!Number.isInteger(n) || n < 0 || n > max) throw new NftValueError(type, String(n), `out of range 0-${max}`);
  writeBigEndian(buf, at, n, typeLength(type));
}

/** An unsigned number of `width` bytes (1, 2 or 4) in network order. */
function writeBigEndian(buf: Uint8Array, at: number, n: number, width: number): void {
  for (let k = width - 1; k >= 0; k--) {
    buf[at + k] = n & 0xff;
    n >>>= 8;
  }
}

/** The canonical text of a value's bytes. */
function failBytes(type: DataType, bytes: Uint8Array, reason: string): never {
  throw new NftValueError(type, hex(bytes), reason);
}

export function valueFromBytes(type: DataType, bytes: Uint8Array): string {
  if (type === 'verdict') return failBytes(type, bytes, 'verdicts have no byte form here');
  if (type === 'ifname') {
    if (bytes.length === 0 || bytes.length > IFNAMSIZ) failBytes(type, bytes, `expected 1 to ${IFNAMSIZ} bytes`);
    const end = bytes.indexOf(0);
    // Shorter than IFNAMSIZ without a NUL: a prefix compare, nft's `"veth*"`.
    const name =
      end < 0 && bytes.length < IFNAMSIZ
        ? `${UTF8_DECODER.decode(bytes)}*`
        : UTF8_DECODER.decode(bytes.subarray(0, end < 0 ? bytes.length : end));
    checkIfname(name);
    return name;
  }
  const want = typeLength(type);
  if (bytes.length !== want) failBytes(type, bytes, `expected ${want} bytes, got ${bytes.length}`);
  switch (type) {
    case 'ipv4_addr':
      return formatIPv4(bytes);
    case 'ipv6_addr':
      return formatIPv6(bytes);
    case 'inet_proto':
      return PROTO_NAME[bytes[0]!] ?? String(bytes[0]);
    case 'inet_service':
      return String((bytes[0]! << 8) | bytes[1]!);
    case 'integer':
      return String(((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0);
    case 'mark':
      return formatMark(((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0);
    default:
      return assertNever(type);
  }
}

/**
 * The half-open byte range [start, endExclusive) an interval-set element covers:
 * 'a/len' for addresses, else a single value. The kernel stores intervals as
 * their start and the first value after them; endExclusive is null when the range
 * runs to the top of the value space (there is no value after it).
 */
export function prefixRange(type: DataType, text: string): { start: Uint8Array; endExclusive: Uint8Array | null } {
  if (type === 'ifname' || type === 'verdict') throw new NftValueError(type, text, 'not an interval type');
  let start: Uint8Array;
  let hostBits = 0;
  const isAddr = type === 'ipv4_addr' || type === 'ipv6_addr';
  const slash = isAddr ? text.indexOf('/') : -1;
  if (isAddr && slash >= 0) {
    const p = parsePrefix(type, text, slash);
    start = p.bytes;
    hostBits = start.length * 8 - p.len;
  } else {
    start = valueBytes(type, text);
  }
  // start's host bits are zero, so the carry starts at the lowest prefix bit.
  return { start, endExclusive: plusPowerOfTwo(start, hostBits) };
}

/** Big-endian byte strings in numeric order (a shorter one first where one is the other's start). */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/** b + 2^bits as a big-endian number of b's length; null when the carry runs out of the top. */
export function plusPowerOfTwo(b: Uint8Array, bits: number): Uint8Array | null {
  const out = b.slice();
  let i = out.length - 1 - (bits >>> 3);
  let add = 1 << (bits & 7);
  while (i >= 0 && add) {
    const s = out[i]! + add;
    out[i] = s & 0xff;
    add = s >>> 8;
    i--;
  }
  return add ? null : out;
}

/**
 * The value just below b, big-endian (the last value inside a range whose
 * exclusive end is b). Wraps 0 to all-ones; callers never pass 0.
 */
export function bytesMinusOne(b: Uint8Array): Uint8Array {
  const out = b.slice();
  for (let i = out.length - 1; i >= 0; i--) {
    if (out[i]! > 0) {
      out[i]!--;
      break;
    }
    out[i] = 0xff;
  }
  return out;
}

// ---------------------------------------------------------------------------
// Parsers

/** Reads text[from, to) as a strict dotted quad into out[at..at+4) (when out is given). */
function parseIPv4(text: string, from: number, to: number, out: Uint8Array | null, at: number): void {
  const reason = readIPv4(text, from, to, out, at, 'strict');
  if (reason !== undefined) throw new NftValueError('ipv4_addr', text, reason);
}

/** Reads text[0, to) as an IPv6 address (dotted tail strict) into out. */
function parseIPv6(text: string, to: number, out: Uint8Array): void {
  const reason = readIPv6(text, 0, to, out, 'strict');
  if (reason !== undefined) throw new NftValueError('ipv6_addr', text, reason);
}

/** An address read only to be checked or written again: the caller keeps no bytes. */
const IPV6_SCRATCH = new Uint8Array(16);

function parseIPv6Whole(text: string): Uint8Array {
  const out = new Uint8Array(16);
  parseIPv6(text, text.length, out);
  return out;
}

/** Strict decimal without sign or leading zeros, 0..max. */
function parseDecimal(type: DataType, text: string, max: number): number {
  const n = text.length;
  if (n === 0 || n > 10) throw new NftValueError(type, text, 'expected a decimal number');
  if (n > 1 && text.charCodeAt(0) === 48) throw new NftValueError(type, text, 'leading zero');
  let v = 0;
  for (let i = 0; i < n; i++) {
    const d = text.charCodeAt(i) - 48;
    if (d < 0 || d > 9) throw new NftValueError(type, text, 'expected a decimal number');
    v = v * 10 + d;
  }
  if (v > max) throw new NftValueError(type, text, `out of range 0-${max}`);
  return v;
}

function parsePrefix(type: 'ipv4_addr' | 'ipv6_addr', text: string, slash: number): { bytes: Uint8Array; len: number } {
  const size = type === 'ipv4_addr' ? 4 : 16;
  const bytes = new Uint8Array(size);
  if (type === 'ipv4_addr') parseIPv4(text, 0, slash, bytes, 0);
  else parseIPv6(text, slash, bytes);
  const lenText = text.slice(slash + 1);
  let len: number;
  try {
    len = parseDecimal(type, lenText, size * 8);
  } catch {
    throw new NftValueError(type, text, `prefix length must be 0-${size * 8}`);
  }
  for (let bit = len; bit < size * 8; bit++) {
    if ((bytes[bit >>> 3]! >>> (7 - (bit & 7))) & 1) throw new NftValueError(type, text, 'host bits set in prefix');
  }
  return { bytes, len };
}

/** A 32-bit mark: '0x' hex (any case, leading zeros allowed) or decimal. */
function parseMark(text: string): number {
  const n = text.length;
  let v = 0;
  if (n > 2 && text.charCodeAt(0) === 48 && (text.charCodeAt(1) | 0x20) === 120) {
    for (let i = 2; i < n; i++) {
      const c = text.charCodeAt(i);
      const h = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
      if (h < 0) throw new NftValueError('mark', text, 'expected 0x and hex digits');
      v = v * 16 + h;
      if (v > 0xffffffff) throw new NftValueError('mark', text, 'over 32 bits');
    }
    return v;
  }
  return parseDecimal('mark', text, 0xffffffff);
}

/** The canonical text of a 32-bit integer or mark already read from its bytes. */
export function u32ValueText(type: 'integer' | 'mark', v: number): string {
  return type === 'mark' ? formatMark(v) : String(v);
}

function formatMark(v: number): string {
  return `0x${v.toString(16)}`;
}

/** What Linux accepts as an interface name (dev_valid_name), within IFNAMSIZ with its NUL. */
function checkIfname(text: string): void {
  if (text.length === 0) throw new NftValueError('ifname', text, 'empty');
  if (text === '.' || text === '..') throw new NftValueError('ifname', text, 'not a valid interface name');
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0 || c === 47 || c === 58 || c === 32 || (c >= 9 && c <= 13)) {
      throw new NftValueError('ifname', text, 'contains NUL, "/", ":" or white space');
    }
    bytes += c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c <= 0xdfff ? 2 : 3; // each half of a surrogate pair counts 2
  }
  if (bytes > IFNAMSIZ - 1) throw new NftValueError('ifname', text, `longer than ${IFNAMSIZ - 1} bytes`);
}

function hex(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}

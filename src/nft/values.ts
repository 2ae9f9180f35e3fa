// Text and byte forms of the values nftables keys, data and match operands hold.
//
// One canonical text per value, so that two objects that mean the same thing
// compare equal as strings (the reconciler diffs texts) and so that what is read
// back from the kernel prints exactly as what was written. Bytes are what the
// kernel stores: network byte order, no padding except ifname (NUL-padded to 16).
//
// This layer is strict: an IPv4 address with a leading zero ('010.0.0.1') is
// refused, not guessed at (octal or decimal?). Normalising Kubernetes input is
// the model's job. The parsers walk char codes by hand because they sit on hot
// paths (100k elements per full sync).

import type { DataType } from './objects.ts';

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
        return formatIPv6(parseIPv6Whole(text));
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
    case 'inet_service': {
      const n = parseDecimal(type, text, 65535);
      buf[at] = n >>> 8;
      buf[at + 1] = n & 0xff;
      return;
    }
    case 'inet_proto':
      buf[at] = PROTO_BY_NAME[text] ?? parseDecimal(type, text, 255);
      return;
    case 'mark': {
      const n = parseMark(text);
      buf[at] = n >>> 24;
      buf[at + 1] = (n >>> 16) & 0xff;
      buf[at + 2] = (n >>> 8) & 0xff;
      buf[at + 3] = n & 0xff;
      return;
    }
    default:
      buf.set(valueBytes(type, text), at);
  }
}

/** The canonical text of a value's bytes. */
export function valueFromBytes(type: DataType, bytes: Uint8Array): string {
  const fail = (reason: string): never => {
    throw new NftValueError(type, hex(bytes), reason);
  };
  if (type === 'verdict') fail('verdicts have no byte form here');
  if (type === 'ifname') {
    if (bytes.length === 0 || bytes.length > IFNAMSIZ) fail(`expected 1 to ${IFNAMSIZ} bytes`);
    const end = bytes.indexOf(0);
    // Shorter than IFNAMSIZ without a NUL: a prefix compare, nft's `"veth*"`.
    const name = end < 0 && bytes.length < IFNAMSIZ ? `${UTF8_DECODER.decode(bytes)}*` : UTF8_DECODER.decode(bytes.subarray(0, end < 0 ? bytes.length : end));
    checkIfname(name);
    return name;
  }
  const want = typeLength(type);
  if (bytes.length !== want) fail(`expected ${want} bytes, got ${bytes.length}`);
  switch (type) {
    case 'ipv4_addr':
      return `${bytes[0]}.${bytes[1]}.${bytes[2]}.${bytes[3]}`;
    case 'ipv6_addr':
      return formatIPv6(bytes);
    case 'inet_proto':
      return PROTO_NAME[bytes[0]!] ?? String(bytes[0]);
    case 'inet_service':
      return String((bytes[0]! << 8) | bytes[1]!);
    case 'integer':
      return String(((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0);
    default:
      // mark
      return formatMark(((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0);
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
  // end = start + 2^hostBits; start's host bits are zero, so the carry starts at
  // the lowest prefix bit and may run out of the top (then there is no end).
  const end = start.slice();
  let i = end.length - 1 - (hostBits >>> 3);
  let add = 1 << (hostBits & 7);
  while (i >= 0 && add) {
    const s = end[i]! + add;
    end[i] = s & 0xff;
    add = s >>> 8;
    i--;
  }
  return { start, endExclusive: add ? null : end };
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

/** Parses text[from, to) as a strict dotted quad into out[at..at+4) (when out is given). */
function parseIPv4(text: string, from: number, to: number, out: Uint8Array | null, at: number): void {
  let part = 0;
  let v = 0;
  let digits = 0;
  let lead0 = false;
  for (let i = from; i <= to; i++) {
    const c = i < to ? text.charCodeAt(i) : 46; // a virtual trailing '.' closes the last part
    if (c === 46) {
      if (digits === 0 || part > 3) throw new NftValueError('ipv4_addr', text, 'expected a dotted quad');
      if (out) out[at + part] = v;
      part++;
      v = 0;
      digits = 0;
      continue;
    }
    const d = c - 48;
    if (d < 0 || d > 9) throw new NftValueError('ipv4_addr', text, 'expected a dotted quad');
    if (digits === 0) lead0 = d === 0;
    else if (lead0) throw new NftValueError('ipv4_addr', text, 'leading zero in an octet');
    v = v * 10 + d;
    digits++;
    if (v > 255) throw new NftValueError('ipv4_addr', text, 'octet over 255');
  }
  if (part !== 4) throw new NftValueError('ipv4_addr', text, 'expected a dotted quad');
}

function parseIPv6Whole(text: string): Uint8Array {
  const out = new Uint8Array(16);
  parseIPv6(text, text.length, out);
  return out;
}

/** Any RFC 4291 text form (hex groups, one '::', a trailing dotted quad), no zone. */
function parseIPv6(text: string, to: number, out: Uint8Array): void {
  const bad = (reason: string): never => {
    throw new NftValueError('ipv6_addr', text, reason);
  };
  const words = new Array<number>(8);
  let n = 0; // words written
  let gap = -1; // index in words where '::' stands
  let i = 0;
  if (to >= 2 && text.charCodeAt(0) === 58 && text.charCodeAt(1) === 58) {
    gap = 0;
    i = 2;
    if (i === to) {
      out.fill(0);
      return;
    }
  } else if (to > 0 && text.charCodeAt(0) === 58) {
    bad('leading single colon');
  }
  for (;;) {
    if (n === 8) bad('too many groups');
    const start = i;
    let v = 0;
    while (i < to) {
      const c = text.charCodeAt(i);
      const h = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
      if (h < 0) break;
      v = (v << 4) | h;
      i++;
    }
    if (i < to && text.charCodeAt(i) === 46) {
      // Embedded IPv4 in the last 32 bits.
      if (n > 6) bad('embedded IPv4 too late');
      const q = new Uint8Array(4);
      try {
        parseIPv4(text, start, to, q, 0);
      } catch {
        bad('invalid embedded IPv4 address');
      }
      words[n++] = (q[0]! << 8) | q[1]!;
      words[n++] = (q[2]! << 8) | q[3]!;
      i = to;
      break;
    }
    const len = i - start;
    if (len === 0 || len > 4) bad('expected 1 to 4 hex digits per group');
    words[n++] = v;
    if (i === to) break;
    if (text.charCodeAt(i) !== 58) bad('unexpected character');
    i++;
    if (i < to && text.charCodeAt(i) === 58) {
      if (gap >= 0) bad('more than one "::"');
      gap = n;
      i++;
      if (i === to) break;
    } else if (i === to) {
      bad('trailing colon');
    }
  }
  if (gap < 0) {
    if (n !== 8) bad('expected 8 groups');
  } else if (n > 7) {
    bad('"::" must stand for at least one group');
  }
  const tail = gap < 0 ? 0 : n - gap;
  let w = 0;
  for (let k = 0; k < 8; k++) {
    let value: number;
    if (gap < 0 || k < gap) value = words[w++]!;
    else if (k < 8 - tail) value = 0;
    else value = words[w++]!;
    out[2 * k] = value >>> 8;
    out[2 * k + 1] = value & 0xff;
  }
}

/** RFC 5952 text, with the dotted tail glibc's inet_ntop (and so `nft`) prints for ::ffff:a.b.c.d and ::a.b.c.d. */
function formatIPv6(b: Uint8Array): string {
  const w = new Array<number>(8);
  for (let k = 0; k < 8; k++) w[k] = (b[2 * k]! << 8) | b[2 * k + 1]!;
  let bestStart = -1;
  let bestLen = 0;
  for (let k = 0; k < 8; ) {
    if (w[k] !== 0) {
      k++;
      continue;
    }
    let e = k;
    while (e < 8 && w[e] === 0) e++;
    if (e - k > bestLen) {
      bestStart = k;
      bestLen = e - k;
    }
    k = e;
  }
  if (bestLen < 2) bestStart = -1;
  const dottedTail = bestStart === 0 && (bestLen === 6 || (bestLen === 5 && w[5] === 0xffff));
  let s = '';
  const last = dottedTail ? 6 : 8;
  for (let k = 0; k < last; k++) {
    if (k === bestStart) {
      s += '::';
      k += bestLen - 1;
      continue;
    }
    if (s.length > 0 && !s.endsWith(':')) s += ':';
    s += w[k]!.toString(16);
  }
  if (dottedTail) {
    if (!s.endsWith(':')) s += ':';
    s += `${b[12]}.${b[13]}.${b[14]}.${b[15]}`;
  }
  return s;
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

// IP address parsing with kube-proxy's leniency and canonical output.
//
// The API server has accepted (and still stores) IPv4 addresses with leading
// zeros, which kube-proxy reads as decimal ("172.30.0.041" is 172.30.0.41, not
// octal). We parse the same way and always hand out one canonical text per
// address, so the same endpoint never appears twice under two spellings and the
// renderer can compare strings. Hand-written rather than regex-based: this runs
// for every endpoint of every slice.

import type { IPFamily } from '../k8s/types.ts';

export interface ParsedIP {
  family: IPFamily;
  /** Canonical text: dotted decimal without leading zeros, or RFC 5952 IPv6. */
  address: string;
  /** 4 or 16 bytes, network order. */
  bytes: Uint8Array;
}

/** Longest IPv4 octet spelling accepted ("000000041"); past that it is garbage, not a zero-padded number. */
const MAX_OCTET_DIGITS = 10;

function parseIPv4Bytes(s: string, start: number, out: Uint8Array, at: number): boolean {
  let part = 0;
  let digits = 0;
  let value = 0;
  for (let i = start; i <= s.length; i++) {
    const c = i < s.length ? s.charCodeAt(i) : 46; // a virtual '.' ends the last octet
    if (c >= 48 && c <= 57) {
      if (++digits > MAX_OCTET_DIGITS) return false;
      value = value * 10 + (c - 48);
      if (value > 255) return false;
    } else if (c === 46) {
      if (digits === 0 || part > 3) return false;
      out[at + part] = value;
      part++;
      digits = 0;
      value = 0;
    } else {
      return false;
    }
  }
  return part === 4;
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

function parseIPv6Bytes(s: string, out: Uint8Array): boolean {
  // Groups go straight into `out`; on '::' the groups after it are shifted to
  // the end once parsing is done. No intermediate arrays: this is per endpoint.
  let count = 0; // groups written
  let gap = -1; // group index where '::' stands
  let i = 0;
  if (s.charCodeAt(0) === 58) {
    if (s.charCodeAt(1) !== 58) return false;
    gap = 0;
    i = 2;
  }
  while (i < s.length) {
    let value = 0;
    let digits = 0;
    const groupStart = i;
    while (i < s.length) {
      const h = hexValue(s.charCodeAt(i));
      if (h < 0) break;
      if (++digits > 4) return false;
      value = (value << 4) | h;
      i++;
    }
    if (i < s.length && s.charCodeAt(i) === 46) {
      // An embedded IPv4 tail ends the address and fills two groups.
      if (count > 6 || !parseIPv4Bytes(s, groupStart, out, 2 * count)) return false;
      count += 2;
      i = s.length;
      break;
    }
    if (digits === 0 || count === 8) return false;
    out[2 * count] = value >> 8;
    out[2 * count + 1] = value & 0xff;
    count++;
    if (i === s.length) break;
    if (s.charCodeAt(i) !== 58) return false; // only ':' may follow a group
    i++;
    if (i < s.length && s.charCodeAt(i) === 58) {
      if (gap !== -1) return false; // a second '::'
      gap = count;
      i++;
    } else if (i === s.length) {
      return false; // a trailing single ':'
    }
  }
  if (gap === -1) return count === 8;
  if (count > 7) return false;
  const tailBytes = 2 * (count - gap);
  const zeros = 2 * (8 - count);
  out.copyWithin(2 * gap + zeros, 2 * gap, 2 * gap + tailBytes);
  out.fill(0, 2 * gap, 2 * gap + zeros);
  return true;
}

function isV4Mapped(b: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (b[i] !== 0) return false;
  return b[10] === 0xff && b[11] === 0xff;
}

export function formatIPv4(b: Uint8Array, at = 0): string {
  return `${b[at]}.${b[at + 1]}.${b[at + 2]}.${b[at + 3]}`;
}

/** RFC 5952: lower-case, no leading zeros, the longest run (first on a tie) of two or more zero groups as '::'. */
export function formatIPv6(b: Uint8Array): string {
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (b[2 * i] !== 0 || b[2 * i + 1] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && b[2 * j] === 0 && b[2 * j + 1] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  let out = '';
  for (let i = 0; i < 8; i++) {
    if (i === bestStart) {
      out += '::';
      i += bestLen - 1;
      continue;
    }
    if (out.length > 0 && !out.endsWith(':')) out += ':';
    out += ((b[2 * i]! << 8) | b[2 * i + 1]!).toString(16);
  }
  return out;
}

/**
 * Parses an IPv4 or IPv6 address the way kube-proxy does (surrounding
 * whitespace and IPv4 leading zeros tolerated, no zone index). An IPv4-mapped
 * IPv6 address (::ffff:a.b.c.d) is an IPv4 address, as in Go's net.IP, which
 * kube-proxy classifies with To4(). Returns undefined when it is not an address.
 */
export function parseIP(text: string): ParsedIP | undefined {
  const s = text.trim();
  if (s.length === 0 || s.length > 45) return undefined;
  if (s.includes(':')) {
    const bytes = new Uint8Array(16);
    if (!parseIPv6Bytes(s, bytes)) return undefined;
    if (isV4Mapped(bytes)) {
      const v4 = bytes.slice(12);
      return { family: 'IPv4', address: formatIPv4(v4), bytes: v4 };
    }
    return { family: 'IPv6', address: formatIPv6(bytes), bytes };
  }
  const bytes = new Uint8Array(4);
  if (!parseIPv4Bytes(s, 0, bytes, 0)) return undefined;
  return { family: 'IPv4', address: formatIPv4(bytes), bytes };
}

/** Canonical text of an address, or undefined. */
export function normalizeIP(text: string): string | undefined {
  return parseIP(text)?.address;
}

export function ipFamilyOf(text: string): IPFamily | undefined {
  return parseIP(text)?.family;
}

/** Why an address cannot be a service or endpoint address; undefined for an ordinary unicast address. */
export type SpecialAddressKind = 'unspecified' | 'loopback' | 'link-local' | 'multicast' | 'broadcast';

/**
 * The API server refuses these for endpoints and service IPs
 * (ValidateNonSpecialIP), but objects written by older servers or other
 * producers may carry them; DNAT to any of them is never what anyone meant.
 */
export function specialAddressKind(ip: ParsedIP): SpecialAddressKind | undefined {
  const b = ip.bytes;
  if (ip.family === 'IPv4') {
    if (b[0] === 0 && b[1] === 0 && b[2] === 0 && b[3] === 0) return 'unspecified';
    if (b[0] === 255 && b[1] === 255 && b[2] === 255 && b[3] === 255) return 'broadcast';
    if (b[0] === 127) return 'loopback';
    if (b[0] === 169 && b[1] === 254) return 'link-local';
    if (b[0]! >= 224 && b[0]! <= 239) return 'multicast';
    return undefined;
  }
  let zeroPrefix = true;
  for (let i = 0; i < 15; i++) {
    if (b[i] !== 0) {
      zeroPrefix = false;
      break;
    }
  }
  if (zeroPrefix && b[15] === 0) return 'unspecified';
  if (zeroPrefix && b[15] === 1) return 'loopback';
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0x80) return 'link-local';
  if (b[0] === 0xff) return 'multicast';
  return undefined;
}

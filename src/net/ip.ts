// The one IP codec: reading address texts into bytes, and the one canonical
// text of an address.
//
// Two syntaxes. 'lenient' is what the API server has accepted (and still
// stores): IPv4 octets with leading zeros, read as decimal ("172.30.0.041" is
// 172.30.0.41, not octal), as Kubernetes' netutils.ParseIPSloppy reads them.
// 'strict' refuses leading zeros (octal or decimal? nobody should have to
// guess): what the nftables layer accepts, since its values come out of this
// codec's canonical form or out of configuration checked against it.
//
// The canonical text is the one Go's net.IP.String prints (RFC 5952: lower
// case, no leading zeros, the longest run — first on a tie — of two or more
// zero groups as '::'); an IPv4-compatible address (::a.b.c.d, deprecated) is
// plain hex like any other (::a00:1), and an IPv4-mapped one, where an IPv6
// text is needed, keeps the dotted tail RFC 5952 §5 asks for (::ffff:a.b.c.d).
// The model turns mapped addresses into IPv4 first, as Go's To4() does.
//
// Hand-written char-code scans rather than regexes: they run for every endpoint
// of every slice, and for every element of a full sync (100k and more).

import type { IPFamily } from '../k8s/types.ts';

/** How leniently address texts are read (see the top of this file). */
export type IPSyntax = 'lenient' | 'strict';

/**
 * Longest octet or group spelling accepted leniently ("0000000041", and, as in
 * Go's parser, "000000ff" for an IPv6 group); past that it is garbage, not a
 * zero-padded number.
 */
const MAX_LENIENT_DIGITS = 10;

/**
 * Reads text[from, to) as a dotted quad into out[at..at+4) (out may be null:
 * a check only). Returns undefined, or why it is not one.
 */
export function readIPv4(text: string, from: number, to: number, out: Uint8Array | null, at: number, syntax: IPSyntax): string | undefined {
  let part = 0;
  let value = 0;
  let digits = 0;
  let lead0 = false;
  for (let i = from; i <= to; i++) {
    const c = i < to ? text.charCodeAt(i) : 46; // a virtual trailing '.' closes the last octet
    if (c === 46) {
      if (digits === 0 || part > 3) return 'expected a dotted quad';
      if (out) out[at + part] = value;
      part++;
      value = 0;
      digits = 0;
      continue;
    }
    const d = c - 48;
    if (d < 0 || d > 9) return 'expected a dotted quad';
    if (digits === 0) lead0 = d === 0;
    else if (lead0 && syntax === 'strict') return 'leading zero in an octet';
    if (++digits > MAX_LENIENT_DIGITS) return 'expected a dotted quad';
    value = value * 10 + d;
    if (value > 255) return 'octet over 255';
  }
  return part === 4 ? undefined : 'expected a dotted quad';
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/**
 * Reads text[from, to) as an RFC 4291 IPv6 text (hex groups, at most one '::',
 * an optional dotted-quad tail read with `syntax`; no zone index) into the 16
 * bytes of out. Returns undefined, or why it is not one.
 */
export function readIPv6(text: string, from: number, to: number, out: Uint8Array, syntax: IPSyntax): string | undefined {
  // Groups go straight into `out`; on '::' the groups after it are shifted to
  // the end once reading is done. No intermediate arrays: this is per endpoint.
  let count = 0; // groups written
  let gap = -1; // group index where '::' stands
  let i = from;
  if (to - from >= 2 && text.charCodeAt(from) === 58 && text.charCodeAt(from + 1) === 58) {
    gap = 0;
    i = from + 2;
  } else if (to > from && text.charCodeAt(from) === 58) {
    return 'leading single colon';
  }
  while (i < to) {
    if (count === 8) return 'too many groups';
    const groupStart = i;
    let value = 0;
    while (i < to) {
      const h = hexValue(text.charCodeAt(i));
      if (h < 0) break;
      value = value * 16 + h;
      i++;
    }
    if (i < to && text.charCodeAt(i) === 46) {
      // An embedded IPv4 tail ends the address and fills two groups.
      if (count > 6) return 'embedded IPv4 too late';
      if (readIPv4(text, groupStart, to, out, 2 * count, syntax) !== undefined) return 'invalid embedded IPv4 address';
      count += 2;
      i = to;
      break;
    }
    const digits = i - groupStart;
    if (digits === 0 || digits > (syntax === 'strict' ? 4 : MAX_LENIENT_DIGITS) || value > 0xffff)
      return 'expected 1 to 4 hex digits per group';
    out[2 * count] = value >> 8;
    out[2 * count + 1] = value & 0xff;
    count++;
    if (i === to) break;
    if (text.charCodeAt(i) !== 58) return 'unexpected character';
    i++;
    if (i < to && text.charCodeAt(i) === 58) {
      if (gap !== -1) return 'more than one "::"';
      gap = count;
      i++;
    } else if (i === to) {
      return 'trailing colon';
    }
  }
  if (gap === -1) return count === 8 ? undefined : 'expected 8 groups';
  if (count > 7) return '"::" must stand for at least one group';
  const tailBytes = 2 * (count - gap);
  const zeros = 2 * (8 - count);
  out.copyWithin(2 * gap + zeros, 2 * gap, 2 * gap + tailBytes);
  out.fill(0, 2 * gap, 2 * gap + zeros);
  return undefined;
}

/** ::ffff:a.b.c.d: an IPv4 address in IPv6 clothing. */
function isIPv4Mapped(b: Uint8Array): boolean {
  if (b.length !== 16) return false;
  for (let i = 0; i < 10; i++) if (b[i] !== 0) return false;
  return b[10] === 0xff && b[11] === 0xff;
}

/** Canonical text of the 4 bytes at b[at...]: dotted decimal without leading zeros. */
export function formatIPv4(b: Uint8Array, at = 0): string {
  return `${b[at]}.${b[at + 1]}.${b[at + 2]}.${b[at + 3]}`;
}

/**
 * The groups '::' stands for in the canonical text of 16 bytes: the longest
 * run of two or more zero groups, the first on a tie, as start * 16 + length;
 * -1 when there is none.
 */
function compressedRun(b: Uint8Array): number {
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
  return bestStart < 0 ? -1 : bestStart * 16 + bestLen;
}

/** Canonical text of 16 bytes (see the top of this file). */
export function formatIPv6(b: Uint8Array): string {
  if (isIPv4Mapped(b)) return `::ffff:${formatIPv4(b, 12)}`;
  const run = compressedRun(b);
  const bestStart = run < 0 ? -1 : run >> 4;
  let out = '';
  for (let i = 0; i < 8; i++) {
    if (i === bestStart) {
      out += '::';
      i += (run & 15) - 1;
      continue;
    }
    if (out.length > 0 && !out.endsWith(':')) out += ':';
    out += ((b[2 * i]! << 8) | b[2 * i + 1]!).toString(16);
  }
  return out;
}

/**
 * Whether `text` is formatIPv6(b), b being the bytes it reads to: compared a
 * character at a time, no text made. The model's and the render's addresses
 * are canonical already, and an IPv6 endpoint's would otherwise be written out
 * again at each of them (a million at 100k Services x 10 endpoints).
 */
export function isFormattedIPv6(text: string, b: Uint8Array): boolean {
  if (isIPv4Mapped(b)) return formatIPv6(b) === text;
  const run = compressedRun(b);
  const bestStart = run < 0 ? -1 : run >> 4;
  let at = 0;
  let afterColon = true;
  for (let i = 0; i < 8; i++) {
    if (i === bestStart) {
      if (text.charCodeAt(at) !== 58 || text.charCodeAt(at + 1) !== 58) return false;
      at += 2;
      i += (run & 15) - 1;
      afterColon = true;
      continue;
    }
    if (!afterColon && text.charCodeAt(at++) !== 58) return false;
    const group = (b[2 * i]! << 8) | b[2 * i + 1]!;
    for (let shift = group >= 0x1000 ? 12 : group >= 0x100 ? 8 : group >= 0x10 ? 4 : 0; shift >= 0; shift -= 4) {
      const digit = (group >> shift) & 15;
      if (text.charCodeAt(at++) !== (digit < 10 ? 48 + digit : 87 + digit)) return false;
    }
    afterColon = false;
  }
  return at === text.length;
}

export interface ParsedIP {
  family: IPFamily;
  /** Canonical text (see the top of this file). */
  address: string;
  /** 4 or 16 bytes, network order. */
  bytes: Uint8Array;
}

/**
 * Reads an address text exactly (nothing around it, no zone index) in
 * `syntax`. An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is an IPv4 address,
 * as in Go's net.IP, which kube-proxy classifies with To4(). Returns undefined
 * when it is not an address.
 */
export function readIP(text: string, syntax: IPSyntax): ParsedIP | undefined {
  // No length cap: the readers give up at the first group or octet too long, and
  // zero padding makes lenient texts longer than the 45 characters of a strict one.
  if (text.length === 0) return undefined;
  if (text.includes(':')) {
    const bytes = new Uint8Array(16);
    if (readIPv6(text, 0, text.length, bytes, syntax) !== undefined) return undefined;
    if (isIPv4Mapped(bytes)) {
      const v4 = bytes.slice(12);
      return { family: 'IPv4', address: formatIPv4(v4), bytes: v4 };
    }
    return { family: 'IPv6', address: isFormattedIPv6(text, bytes) ? text : formatIPv6(bytes), bytes };
  }
  const bytes = new Uint8Array(4);
  if (readIPv4(text, 0, text.length, bytes, 0, syntax) !== undefined) return undefined;
  return { family: 'IPv4', address: formatIPv4(bytes), bytes };
}

/**
 * How the model reads an address field of the API: surrounding white space
 * tolerated, then readIP(…, 'lenient'). Returns undefined when it is not an address.
 */
export function parseIP(text: string): ParsedIP | undefined {
  return readIP(text.trim(), 'lenient');
}

/** Canonical text of an address field (as parseIP reads it), or undefined. */
export function normalizeIP(text: string): string | undefined {
  return parseIP(text)?.address;
}

/** The family of an address field (as parseIP reads it: a mapped address is IPv4), or undefined. */
export function ipFamilyOf(text: string): IPFamily | undefined {
  return parseIP(text)?.family;
}

const SCRATCH = new Uint8Array(16);

/**
 * The family an exact address text is written in (a mapped ::ffff:a.b.c.d is
 * IPv6 text), read in `syntax`, without allocating: for validating input that
 * is kept as written. Undefined when it is not an address.
 */
export function textFamily(text: string, syntax: IPSyntax): IPFamily | undefined {
  if (text.includes(':')) return readIPv6(text, 0, text.length, SCRATCH, syntax) === undefined ? 'IPv6' : undefined;
  return readIPv4(text, 0, text.length, null, 0, syntax) === undefined ? 'IPv4' : undefined;
}

/** `address/prefix`, as written (prefix of up to three digits within the family's width), read in `syntax`. */
export function isCIDRText(text: string, syntax: IPSyntax): boolean {
  const slash = text.indexOf('/');
  if (slash < 0) return false;
  const family = textFamily(text.slice(0, slash), syntax);
  const digits = text.length - slash - 1;
  if (family === undefined || digits < 1 || digits > 3) return false;
  let prefix = 0;
  for (let i = slash + 1; i < text.length; i++) {
    const d = text.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return false;
    prefix = prefix * 10 + d;
  }
  return prefix <= (family === 'IPv4' ? 32 : 128);
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
  if (ip.family === 'IPv4') return specialIPv4Kind(b);
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

/** specialAddressKind of the IPv4 address in b[0..3]. */
function specialIPv4Kind(b: Uint8Array): SpecialAddressKind | undefined {
  if (b[0] === 0 && b[1] === 0 && b[2] === 0 && b[3] === 0) return 'unspecified';
  if (b[0] === 255 && b[1] === 255 && b[2] === 255 && b[3] === 255) return 'broadcast';
  if (b[0] === 127) return 'loopback';
  if (b[0] === 169 && b[1] === 254) return 'link-local';
  if (b[0]! >= 224 && b[0]! <= 239) return 'multicast';
  return undefined;
}

/**
 * Whether `text` is an IPv4 address in canonical form that is not special:
 * exactly when parseIP reads it as IPv4 with `text` as its canonical text and
 * specialAddressKind finds nothing. It is how the API server writes endpoint
 * addresses, recognised here without the allocations of parseIP (a million
 * of them in a 100k-Service model): the strict syntax is the canonical form,
 * and the octets land in a scratch buffer. Anything else goes through parseIP.
 */
export function isOrdinaryCanonicalIPv4(text: string): boolean {
  return readIPv4(text, 0, text.length, SCRATCH, 0, 'strict') === undefined && specialIPv4Kind(SCRATCH) === undefined;
}

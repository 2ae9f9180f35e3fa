// Structural IP checks for validation at the stream boundary.
//
// The API server accepts IPv4 with leading zeros ("010.001.2.3"); the model
// normalises those later, so they pass here. What fails here is garbage that
// no normalisation can turn into an address.

import { isIPv6 } from 'node:net';

/**
 * Dotted quad, leading zeros allowed (read as decimal), each part ≤ 255.
 * Returns the first two octets as (a << 8 | b), or -1 when not such an
 * address. A char-code scan: this runs for every endpoint of every slice.
 */
export function ipv4Head(s: string): number {
  const n = s.length;
  if (n < 7 || n > 15) return -1;
  let parts = 0;
  let digits = 0;
  let value = 0;
  let head = 0;
  for (let i = 0; i <= n; i++) {
    const c = i < n ? s.charCodeAt(i) : 46;
    if (c >= 48 && c <= 57) {
      if (++digits > 3) return -1;
      value = value * 10 + (c - 48);
    } else if (c === 46) {
      if (digits === 0 || value > 255) return -1;
      if (parts < 2) head = (head << 8) | value;
      parts++;
      digits = 0;
      value = 0;
    } else return -1;
  }
  return parts === 4 ? head : -1;
}

export function isIPv4Loose(s: string): boolean {
  return ipv4Head(s) >= 0;
}

export function ipFamilyOf(s: string): 'IPv4' | 'IPv6' | undefined {
  if (isIPv4Loose(s)) return 'IPv4';
  if (isIPv6(s)) return 'IPv6';
  return undefined;
}

/** `ip/prefix` with the prefix inside the family's width. */
export function isCIDRLoose(s: string): boolean {
  const slash = s.indexOf('/');
  if (slash < 0) return false;
  const fam = ipFamilyOf(s.slice(0, slash));
  const p = s.slice(slash + 1);
  if (!fam || !/^\d{1,3}$/.test(p)) return false;
  return Number(p) <= (fam === 'IPv4' ? 32 : 128);
}

/**
 * Addresses no pod can have: unspecified, loopback, link-local, multicast and
 * the IPv4 broadcast. The API server accepts some of these in an
 * EndpointSlice; programming them would send service traffic nowhere useful.
 * IPv4 by its first two octets, as ipv4Head() gives them (a caller that has
 * parsed the address already does not parse it again).
 */
export function isUnroutableIPv4Head(head: number): boolean {
  const a = head >> 8;
  // unspecified/this-net, loopback, multicast+reserved+broadcast, link-local
  return a === 0 || a === 127 || a >= 224 || head === 0xa9fe;
}

export function isUnroutableIPv6(s: string): boolean {
  const lower = s.toLowerCase();
  if (lower === '::' || lower === '::1') return true;
  if (/^fe[89ab]/.test(lower)) return true; // fe80::/10
  return lower.startsWith('ff'); // multicast
}

// Structural IP checks for validation at the stream boundary.
//
// The API server accepts IPv4 with leading zeros ("010.001.2.3"); the model
// normalises those later, so they pass here. What fails here is garbage that
// no normalisation can turn into an address.

import { isIPv6 } from 'node:net';

const V4_RE = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** Dotted quad, leading zeros allowed (read as decimal), each part ≤ 255. */
export function isIPv4Loose(s: string): boolean {
  const m = V4_RE.exec(s);
  if (!m) return false;
  for (let i = 1; i <= 4; i++) if (Number(m[i]) > 255) return false;
  return true;
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
 */
export function isUnroutableEndpoint(s: string, family: 'IPv4' | 'IPv6'): boolean {
  if (family === 'IPv4') {
    const parts = s.split('.').map(Number);
    const a = parts[0]!;
    const b = parts[1]!;
    if (a === 0 || a === 127 || a >= 224) return true; // unspecified/this-net, loopback, multicast+reserved+broadcast
    if (a === 169 && b === 254) return true;
    return false;
  }
  const lower = s.toLowerCase();
  if (lower === '::' || lower === '::1') return true;
  if (/^fe[89ab]/.test(lower)) return true; // fe80::/10
  if (lower.startsWith('ff')) return true; // multicast
  return false;
}

// CIDR parsing for loadBalancerSourceRanges and similar fields.
//
// Users type these by hand (" 203.0.113.0/25" with a stray space is common);
// kube-proxy trims them and reads them with Go's ParseCIDR, which hands back the
// network (host bits cleared). We do the same so the renderer gets one spelling
// per range and interval-set elements never overlap by accident of spelling.

import type { IPFamily } from '../k8s/types.ts';
import { formatIPv4, formatIPv6, parseIP } from './ip.ts';

export interface ParsedCIDR {
  family: IPFamily;
  /** Canonical "network/prefix". */
  cidr: string;
  /** Network address, canonical text. */
  network: string;
  prefix: number;
}

function parsePrefix(s: string): number | undefined {
  if (s.length === 0 || s.length > 3) return undefined;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return undefined;
    n = n * 10 + (c - 48);
  }
  return n;
}

/**
 * Parses "address/prefix" (whitespace around it tolerated, IPv4 leading zeros
 * as in parseIP). An IPv4-mapped IPv6 range ::ffff:a.b.c.d/p with p >= 96 is
 * the IPv4 range a.b.c.d/(p-96), consistent with parseIP's treatment of mapped
 * addresses. Returns undefined when it is not a CIDR.
 */
export function parseCIDR(text: string): ParsedCIDR | undefined {
  const s = text.trim();
  const slash = s.indexOf('/');
  if (slash <= 0) return undefined;
  const addrText = s.slice(0, slash);
  if (addrText.trim() !== addrText) return undefined; // "a.b.c.d /24" is a typo, not a range
  let prefix = parsePrefix(s.slice(slash + 1));
  if (prefix === undefined) return undefined;
  const ip = parseIP(addrText);
  if (ip === undefined) return undefined;
  if (ip.family === 'IPv4' && addrText.includes(':')) {
    // The address was IPv4-mapped, so the prefix counts IPv6 bits.
    if (prefix < 96 || prefix > 128) return undefined;
    prefix -= 96;
  }
  const bits = ip.family === 'IPv4' ? 32 : 128;
  if (prefix > bits) return undefined;
  const net = ip.bytes.slice();
  for (let i = 0; i < net.length; i++) {
    const keep = Math.max(0, Math.min(8, prefix - i * 8));
    net[i] = net[i]! & ((0xff << (8 - keep)) & 0xff);
  }
  const network = ip.family === 'IPv4' ? formatIPv4(net) : formatIPv6(net);
  return { family: ip.family, cidr: `${network}/${prefix}`, network, prefix };
}

/** Canonical text of a CIDR, or undefined. */
export function normalizeCIDR(text: string): string | undefined {
  return parseCIDR(text)?.cidr;
}

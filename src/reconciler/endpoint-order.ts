// The order a policy chain lists its endpoints in: distinct by address and
// port, sorted by their `ip/port` text, so that a rendering does not depend on
// the order slices arrived in (and one address's endpoints are neighbours).

import type { Endpoint } from '../model/service-port.ts';

/** `eps` in that order (the very array when it is already); `address` checks each address (and throws), when given. */
export function distinctSorted(eps: readonly Endpoint[], address: ((ip: string) => string) | undefined): readonly Endpoint[] {
  // The model usually hands them over distinct and in this order already: then no copy.
  let ordered = true;
  for (let i = 0; i < eps.length; i++) {
    const e = eps[i]!;
    if (address) address(e.ip);
    if (i > 0 && ordered && !keyLess(eps[i - 1]!, e)) ordered = false;
  }
  if (ordered) return eps;
  const seen = new Map<string, Endpoint>();
  for (const e of eps) {
    const key = `${e.ip}/${e.port}`;
    if (!seen.has(key)) seen.set(key, e);
  }
  return [...seen.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, e]) => e);
}

const SLASH = 47;

/** `${a.ip}/${a.port}` < `${b.ip}/${b.port}` (the order distinctSorted sorts by), building the texts only when both are one address. */
function keyLess(a: Endpoint, b: Endpoint): boolean {
  const x = a.ip;
  const y = b.ip;
  if (x === y) return `${x}/${a.port}` < `${y}/${b.port}`;
  // The first differing character decides, before any '/' (a char-code loop:
  // startsWith and < were each a builtin call per pair of endpoints).
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) {
    const d = x.charCodeAt(i) - y.charCodeAt(i);
    if (d !== 0) return d < 0;
  }
  // One address begins the other ('10.0.0.1', '10.0.0.10', a pod network's
  // every tenth neighbour): the '/' after the shorter meets the longer's next character.
  return x.length < y.length ? SLASH < y.charCodeAt(n) : x.charCodeAt(n) < SLASH;
}

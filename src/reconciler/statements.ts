// Small builders for the statements our rules are made of, so that the
// skeleton and the per-service rules read close to the `nft` text they print.

import type { IPFamily, Protocol } from '../k8s/types.ts';
import type { Family, PayloadField, Selector, Statement } from '../nft/objects.ts';

export function tableFamily(f: IPFamily): Family {
  return f === 'IPv4' ? 'ip' : 'ip6';
}

export function addrType(f: IPFamily): 'ipv4_addr' | 'ipv6_addr' {
  return f === 'IPv4' ? 'ipv4_addr' : 'ipv6_addr';
}

// Rendered rules are never mutated, so the common pieces are shared objects:
// at 10k services x 10 endpoints that is a few hundred thousand fewer
// allocations per full render.
const payload = (field: PayloadField): Selector => ({ kind: 'payload', field });
const SADDR: Record<IPFamily, Selector> = { IPv4: payload('ip saddr'), IPv6: payload('ip6 saddr') };
const DADDR: Record<IPFamily, Selector> = { IPv4: payload('ip daddr'), IPv6: payload('ip6 daddr') };
export const saddr = (f: IPFamily): Selector => SADDR[f];
export const daddr = (f: IPFamily): Selector => DADDR[f];
const l4proto: Selector = { kind: 'meta', key: 'l4proto' };
export const thDport: Selector = payload('th dport');

const PROTO_MATCH = new Map<string, Statement>();
/** `meta l4proto tcp`, shared per protocol. */
export function l4protoIs(proto: string): Statement {
  let m = PROTO_MATCH.get(proto);
  if (!m) {
    m = { kind: 'match', left: l4proto, op: '==', right: proto };
    PROTO_MATCH.set(proto, m);
  }
  return m;
}

const NUMGEN_ZERO: Statement[] = [];
/** `numgen random mod n == 0`, shared per n. */
export function numgenZero(n: number): Statement {
  NUMGEN_ZERO[n] ??= { kind: 'match', left: { kind: 'numgen', mod: n }, op: '==', right: '0' };
  return NUMGEN_ZERO[n];
}

const NUMGEN: Selector[] = [];
/** `numgen random mod n` as a key, shared per n. */
export function numgenKey(n: number): Selector {
  NUMGEN[n] ??= { kind: 'numgen', mod: n };
  return NUMGEN[n];
}

export const match = (left: Selector, right: string, op: '==' | '!=' = '=='): Statement => ({ kind: 'match', left, op, right });
export const lookup = (keys: Selector[], set: string, negate = false): Statement =>
  negate ? { kind: 'lookup', keys, set, negate } : { kind: 'lookup', keys, set };
export const vmap = (keys: Selector[], map: string): Statement => ({ kind: 'vmap', keys, map });
export const jump = (chain: string): Statement => ({ kind: 'verdict', verdict: 'jump', chain });
/** `jump mark-for-masquerade`, the most common statement of all. */
export const jumpMarkForMasquerade: Statement = jump('mark-for-masquerade');
export const goto = (chain: string): Statement => ({ kind: 'verdict', verdict: 'goto', chain });
export const drop: Statement = { kind: 'verdict', verdict: 'drop' };
export const ret: Statement = { kind: 'verdict', verdict: 'return' };
export const ctStateNew: Statement = match({ kind: 'ct', key: 'state' }, 'new');
export const fibLocal = (addr: 'saddr' | 'daddr'): Statement => match({ kind: 'fib-type', addr }, 'local');

/** `meta l4proto tcp`: the `inet_proto` text of a Kubernetes protocol. */
export function protoText(p: Protocol): string {
  return p.toLowerCase();
}

/** The key of a ServicePort's destination in `service-ips`-shaped maps. */
export const serviceKey = (f: IPFamily): Selector[] => [daddr(f), l4proto, thDport];
/** The key of a NodePort in `service-nodeports`-shaped maps. */
export const nodePortKey: Selector[] = [l4proto, thDport];

export function rejectStatement(f: IPFamily): Statement {
  return { kind: 'reject', with: f === 'IPv4' ? 'icmp port-unreachable' : 'icmpv6 port-unreachable' };
}

export function loopbackNet(f: IPFamily): string {
  return f === 'IPv4' ? '127.0.0.0/8' : '::1';
}

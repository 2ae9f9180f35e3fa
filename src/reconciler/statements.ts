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

export const saddr = (f: IPFamily): Selector => ({ kind: 'payload', field: (f === 'IPv4' ? 'ip saddr' : 'ip6 saddr') as PayloadField });
export const daddr = (f: IPFamily): Selector => ({ kind: 'payload', field: (f === 'IPv4' ? 'ip daddr' : 'ip6 daddr') as PayloadField });
export const l4proto: Selector = { kind: 'meta', key: 'l4proto' };
export const thDport: Selector = { kind: 'payload', field: 'th dport' };

export const match = (left: Selector, right: string, op: '==' | '!=' = '=='): Statement => ({ kind: 'match', left, op, right });
export const lookup = (keys: Selector[], set: string, negate = false): Statement =>
  negate ? { kind: 'lookup', keys, set, negate } : { kind: 'lookup', keys, set };
export const vmap = (keys: Selector[], map: string): Statement => ({ kind: 'vmap', keys, map });
export const jump = (chain: string): Statement => ({ kind: 'verdict', verdict: 'jump', chain });
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

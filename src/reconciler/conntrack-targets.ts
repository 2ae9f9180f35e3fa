// Which conntrack entries are stale: a pure function of ServicePorts.
//
// kube-proxy 1.32's rule (pkg/proxy/conntrack/cleanup.go), for UDP and here
// also SCTP: for a Service port with at least one serving endpoint, an entry
// whose original destination is one of its frontends — ClusterIP:port, an
// external IP:port, a load-balancer IP:port, or *:NodePort — and whose reply
// source is not one of those endpoints leads nowhere useful: its endpoint is
// gone, or the flow started before the Service's rules existed and was never
// NATed. Such entries are deleted so that the next packet is NATed afresh.
// TCP is never a target: a TCP connection to a gone endpoint is reset by its
// peers, and deleting a live one would break it.
//
// Where we differ from kube-proxy: the set of allowed reply sources is the
// endpoints the port's rules can reach (ServicePort.allEndpoints) that are
// serving, not every endpoint of the Service; kube-proxy reads it from its
// whole endpoints map. Which ports are looked at is the caller's choice: the
// ports a sync changed, or every port at the full resync (kube-proxy: every
// port, every sync).

import type { IPFamily, Protocol } from '../k8s/types.ts';
import type { ServicePort } from '../model/service-port.ts';

export type ConntrackProtocol = 'UDP' | 'SCTP';

/** Entries to this original destination must have a reply source in `keep`. */
export interface ConntrackTarget {
  protocol: ConntrackProtocol;
  /** The Service IP; absent for a NodePort (every destination address). */
  address?: string;
  port: number;
  /** Serving endpoint addresses, sorted, without duplicates. */
  keep: readonly string[];
}

export type ConntrackTargets = Readonly<Record<IPFamily, readonly ConntrackTarget[]>>;

function conntrackProtocol(p: Protocol): ConntrackProtocol | undefined {
  switch (p) {
    case 'UDP':
    case 'SCTP':
      return p;
    case 'TCP':
      return undefined;
    default: {
      const never: never = p;
      return never;
    }
  }
}

function familyOf(address: string): IPFamily {
  return address.includes(':') ? 'IPv6' : 'IPv4';
}

/**
 * The targets of the given ServicePorts, by family: one per frontend of every
 * UDP/SCTP port that has a serving endpoint. Two ports naming the same
 * frontend share one target whose allowed sources are both ports' (fewer
 * deletions, never a wrong one).
 */
export function conntrackTargets(ports: Iterable<ServicePort>): ConntrackTargets {
  const byKey = new Map<string, { target: ConntrackTarget; keep: Set<string>; family: IPFamily }>();
  const add = (family: IPFamily, protocol: ConntrackProtocol, address: string | undefined, port: number, keep: readonly string[]): void => {
    if (address !== undefined && familyOf(address) !== family) return;
    const key = `${family}/${protocol}/${address ?? '*'}/${port}`;
    let entry = byKey.get(key);
    if (!entry) {
      entry = { target: { protocol, ...(address !== undefined ? { address } : {}), port, keep: [] }, keep: new Set(), family };
      byKey.set(key, entry);
    }
    for (const k of keep) entry.keep.add(k);
  };
  for (const sp of ports) {
    const protocol = conntrackProtocol(sp.protocol);
    if (!protocol) continue;
    const keep = servingAddresses(sp);
    if (keep.length === 0) continue;
    if (sp.clusterIP !== undefined) add(sp.family, protocol, sp.clusterIP, sp.port, keep);
    for (const ip of sp.externalIPs) add(sp.family, protocol, ip, sp.port, keep);
    for (const ip of sp.loadBalancerIPs) add(sp.family, protocol, ip, sp.port, keep);
    if (sp.nodePort !== undefined && sp.nodePort > 0) add(sp.family, protocol, undefined, sp.nodePort, keep);
  }
  const out: Record<IPFamily, ConntrackTarget[]> = { IPv4: [], IPv6: [] };
  for (const { target, keep, family } of byKey.values()) out[family].push({ ...target, keep: [...keep].sort() });
  return out;
}

function servingAddresses(sp: ServicePort): string[] {
  const out = new Set<string>();
  for (const e of sp.allEndpoints) if (e.serving) out.add(e.ip);
  return [...out];
}

/** How many targets a plan holds (both families). */
export function targetCount(t: ConntrackTargets): number {
  return t.IPv4.length + t.IPv6.length;
}

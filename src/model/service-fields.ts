// The Service half of the model: validates and normalises the fields of one
// Service, split by IP family. Every field is checked on its own, so a bad
// externalIP costs that one entry, never the service.

import type { IPFamily, Protocol, ServiceInfo } from '../k8s/types.ts';
import type { FeatureGates } from '../config/feature-gates.ts';
import { parseCIDR } from '../net/cidr.ts';
import { parseIP, specialAddressKind } from '../net/ip.ts';
import { serviceObject, type WarningSink } from './warnings.ts';

/** The empty address list every ServicePort without such addresses shares (frozen: a shared value must not change). */
const NO_ADDRESSES = Object.freeze([]) as unknown as string[];

/** kube-proxy's default for sessionAffinityConfig.clientIP.timeoutSeconds (3 hours). */
export const DEFAULT_AFFINITY_TIMEOUT_SECONDS = 10800;
/** The API's upper bound for the timeout (one day). */
const MAX_AFFINITY_TIMEOUT_SECONDS = 86400;

export interface FamilyFields {
  family: IPFamily;
  clusterIP: string;
  externalIPs: string[];
  loadBalancerIPs: string[];
  loadBalancerSourceRanges: string[];
}

export interface PortFields {
  name: string;
  protocol: Protocol;
  port: number;
  nodePort?: number;
}

export interface ServiceFields {
  /** In spec.clusterIPs order: the primary family first. */
  families: FamilyFields[];
  ports: PortFields[];
  sessionAffinityTimeout?: number;
  /** NodePort, LoadBalancer, or any externalIPs: external traffic policy applies. */
  externallyAccessible: boolean;
  externalPolicyLocal: boolean;
  internalPolicyLocal: boolean;
  healthCheckNodePort?: number;
}

const PROTOCOLS: ReadonlySet<string> = new Set(['TCP', 'UDP', 'SCTP']);

export function isValidPort(n: unknown): n is number {
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 65535;
}

/** Headless and ExternalName services have nothing for a proxy to do. */
function isProxiable(service: ServiceInfo): boolean {
  if (service.type === 'ExternalName') return false;
  if (service.clusterIPs.length === 0) return false;
  return !service.clusterIPs.some((ip) => ip.trim() === 'None');
}

type ServiceObject = ReturnType<typeof serviceObject>;

/** One family per usable ClusterIP (the first of each family), each with empty address lists to fill. */
function readClusterIPs(service: ServiceInfo, obj: ServiceObject, sink: WarningSink): FamilyFields[] {
  const families: FamilyFields[] = [];
  service.clusterIPs.forEach((raw, i) => {
    const field = `spec.clusterIPs[${i}]`;
    const ip = parseIP(raw);
    if (ip === undefined) {
      sink.add('INVALID_IP', obj, field, `not an IP address: ${JSON.stringify(raw)}; this family is not programmed`, raw);
      return;
    }
    const special = specialAddressKind(ip);
    if (special !== undefined) {
      sink.add('SPECIAL_IP', obj, field, `${special} address cannot be a ClusterIP; this family is not programmed`, raw);
      return;
    }
    if (families.some((f) => f.family === ip.family)) {
      sink.add('DUPLICATE_FAMILY', obj, field, `a second ${ip.family} ClusterIP is ignored`, raw);
      return;
    }
    // The store's own string when it is already canonical: one copy per service, not two.
    families.push({
      family: ip.family,
      clusterIP: ip.address === raw ? raw : ip.address,
      externalIPs: [],
      loadBalancerIPs: [],
      loadBalancerSourceRanges: [],
    });
  });
  return families;
}

/** The usable ports (known protocol, valid port, unique name per protocol), with a nodePort where the type takes one. */
function readPorts(service: ServiceInfo, obj: ServiceObject, hasNodePorts: boolean, sink: WarningSink): PortFields[] {
  const ports: PortFields[] = [];
  service.ports.forEach((p, i) => {
    const field = `spec.ports[${i}]`;
    if (!PROTOCOLS.has(p.protocol)) {
      sink.add(
        'INVALID_PORT',
        obj,
        `${field}.protocol`,
        `unsupported protocol ${JSON.stringify(p.protocol)}; port skipped`,
        String(p.protocol),
      );
      return;
    }
    if (!isValidPort(p.port)) {
      sink.add('INVALID_PORT', obj, `${field}.port`, `port ${p.port} is outside 1-65535; port skipped`, String(p.port));
      return;
    }
    if (ports.some((q) => q.name === p.name && q.protocol === p.protocol)) {
      sink.add('DUPLICATE_PORT', obj, `${field}.name`, `a second ${p.protocol} port named ${JSON.stringify(p.name)} is skipped`, p.name);
      return;
    }
    const out: PortFields = { name: p.name, protocol: p.protocol, port: p.port };
    if (p.nodePort !== undefined && p.nodePort !== 0) {
      if (!isValidPort(p.nodePort)) {
        sink.add('INVALID_PORT', obj, `${field}.nodePort`, `nodePort ${p.nodePort} is outside 1-65535; ignored`, String(p.nodePort));
      } else if (!hasNodePorts) {
        sink.add('IGNORED_FIELD', obj, `${field}.nodePort`, `nodePort on a ${service.type} service is ignored`, String(p.nodePort));
      } else {
        out.nodePort = p.nodePort;
      }
    }
    ports.push(out);
  });
  return ports;
}

/**
 * Reads the family-independent and per-family fields. Returns undefined for a
 * service that produces nothing (headless, ExternalName, no usable ClusterIP).
 */
export function readServiceFields(service: ServiceInfo, gates: FeatureGates, sink: WarningSink): ServiceFields | undefined {
  if (!isProxiable(service)) return undefined;
  const obj = serviceObject(service.namespace, service.name);

  const families = readClusterIPs(service, obj, sink);
  if (families.length === 0) return undefined;
  const byFamily = (family: IPFamily): FamilyFields | undefined => families.find((f) => f.family === family);

  service.externalIPs.forEach((raw, i) => {
    const field = `spec.externalIPs[${i}]`;
    const ip = parseIP(raw);
    if (ip === undefined) {
      sink.add('INVALID_IP', obj, field, `not an IP address: ${JSON.stringify(raw)}`, raw);
      return;
    }
    const special = specialAddressKind(ip);
    if (special !== undefined) {
      sink.add('SPECIAL_IP', obj, field, `${special} address cannot be an external IP`, raw);
      return;
    }
    // An address of a family the service does not have is valid but unusable
    // here (no family translation), as in kube-proxy.
    pushUnique(byFamily(ip.family)?.externalIPs, ip.address);
  });

  readLoadBalancerIngress(service, gates, obj, byFamily, sink);

  const isLB = service.type === 'LoadBalancer';
  service.loadBalancerSourceRanges.forEach((raw, i) => {
    const field = `spec.loadBalancerSourceRanges[${i}]`;
    const cidr = parseCIDR(raw);
    if (cidr === undefined) {
      sink.add('INVALID_CIDR', obj, field, `not a CIDR: ${JSON.stringify(raw)}`, raw);
      return;
    }
    if (isLB) pushUnique(byFamily(cidr.family)?.loadBalancerSourceRanges, cidr.cidr);
  });

  const hasNodePorts = service.type === 'NodePort' || isLB;
  const ports = readPorts(service, obj, hasNodePorts, sink);

  // Most services have none of these: one shared empty list instead of three per family.
  for (const f of families) {
    if (f.externalIPs.length === 0) f.externalIPs = NO_ADDRESSES;
    if (f.loadBalancerIPs.length === 0) f.loadBalancerIPs = NO_ADDRESSES;
    if (f.loadBalancerSourceRanges.length === 0) f.loadBalancerSourceRanges = NO_ADDRESSES;
  }

  const externallyAccessible = hasNodePorts || service.externalIPs.length > 0;
  const externalPolicyLocal = externallyAccessible && service.externalTrafficPolicy === 'Local';
  const fields: ServiceFields = {
    families,
    ports,
    externallyAccessible,
    externalPolicyLocal,
    internalPolicyLocal: service.internalTrafficPolicy === 'Local',
  };

  if (service.sessionAffinity === 'ClientIP') {
    const t = service.sessionAffinityTimeoutSeconds;
    if (t === undefined) fields.sessionAffinityTimeout = DEFAULT_AFFINITY_TIMEOUT_SECONDS;
    else if (Number.isInteger(t) && t >= 1 && t <= MAX_AFFINITY_TIMEOUT_SECONDS) fields.sessionAffinityTimeout = t;
    else {
      sink.add(
        'INVALID_TIMEOUT',
        obj,
        'spec.sessionAffinityConfig.clientIP.timeoutSeconds',
        `timeout ${t} is outside 1-${MAX_AFFINITY_TIMEOUT_SECONDS}; using ${DEFAULT_AFFINITY_TIMEOUT_SECONDS}`,
        String(t),
      );
      fields.sessionAffinityTimeout = DEFAULT_AFFINITY_TIMEOUT_SECONDS;
    }
  }

  const hc = service.healthCheckNodePort;
  if (hc !== undefined && hc !== 0) {
    if (!isValidPort(hc)) {
      sink.add('INVALID_PORT', obj, 'spec.healthCheckNodePort', `healthCheckNodePort ${hc} is outside 1-65535; ignored`, String(hc));
    } else if (!externalPolicyLocal) {
      sink.add(
        'IGNORED_FIELD',
        obj,
        'spec.healthCheckNodePort',
        'healthCheckNodePort without externalTrafficPolicy Local is ignored',
        String(hc),
      );
    } else {
      fields.healthCheckNodePort = hc;
    }
  }
  return fields;
}

function readLoadBalancerIngress(
  service: ServiceInfo,
  gates: FeatureGates,
  obj: string,
  byFamily: (f: IPFamily) => FamilyFields | undefined,
  sink: WarningSink,
): void {
  service.loadBalancerIngress.forEach((ing, i) => {
    const field = `status.loadBalancer.ingress[${i}]`;
    if (ing.ip === undefined || ing.ip === '') {
      // A hostname-only ingress is normal (some clouds); ipMode without an ip is a
      // broken status (the API refuses it since KEP-1860).
      if (ing.ipMode !== undefined) {
        sink.add('IPMODE_WITHOUT_IP', obj, `${field}.ipMode`, `ipMode ${ing.ipMode} without an ip; ingress ignored`, ing.ipMode);
      }
      return;
    }
    const ip = parseIP(ing.ip);
    if (ip === undefined) {
      sink.add('INVALID_IP', obj, `${field}.ip`, `not an IP address: ${JSON.stringify(ing.ip)}`, ing.ip);
      return;
    }
    const special = specialAddressKind(ip);
    if (special !== undefined) {
      sink.add('SPECIAL_IP', obj, `${field}.ip`, `${special} address cannot be a load balancer IP`, ing.ip);
      return;
    }
    if (service.type !== 'LoadBalancer') {
      // A status left behind by a type change must not capture traffic.
      sink.add('IGNORED_FIELD', obj, `${field}.ip`, `load balancer ingress on a ${service.type} service is ignored`, ing.ip);
      return;
    }
    // KEP-1860: with ipMode Proxy the load balancer must see the traffic, so this
    // node does not short-circuit it. Gate off: every ingress IP, as before the KEP.
    if (gates.LoadBalancerIPMode && ing.ipMode === 'Proxy') return;
    pushUnique(byFamily(ip.family)?.loadBalancerIPs, ip.address);
  });
}

function pushUnique(list: string[] | undefined, value: string): void {
  if (list !== undefined && !list.includes(value)) list.push(value);
}

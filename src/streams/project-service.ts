// Service → ServiceInfo: validate what the proxy programs, keep only that.
//
// A Service is all-or-nothing: a bad port or address leaves the whole Service
// out (the API server would have refused it; if it reaches us, the picture is
// not one we can program faithfully).

import type { IPFamily, LoadBalancerIngress, Protocol, ServiceInfo, ServicePortSpec } from '../k8s/types.ts';
import { isCIDRText, textFamily } from '../net/ip.ts';
import { digestOf, digestStep, EMPTY_LIST, type StringPool } from './intern.ts';
import {
  asList,
  asObject,
  checkDns1035Label,
  checkDnsLabel,
  fail,
  isObject,
  isPort,
  optionalString,
  project,
  resourceVersionOf,
  type Projection,
} from './validate-common.ts';

const SERVICE_TYPES = new Set(['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName']);
const IANA_SVC_NAME = /^[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$/;
const DEFAULT_AFFINITY_TIMEOUT = 10800;

function parseProtocol(what: string, v: unknown): Protocol {
  if (v === undefined || v === null) return 'TCP';
  if (v === 'TCP' || v === 'UDP' || v === 'SCTP') return v;
  return fail(`${what} has unknown protocol ${JSON.stringify(v)}`);
}

function checkIP(what: string, v: unknown): string {
  if (typeof v !== 'string' || textFamily(v, 'lenient') === undefined) fail(`${what} is not an IP: ${JSON.stringify(v)}`);
  return v;
}

function projectPort(raw: unknown, i: number, pool: StringPool): ServicePortSpec {
  const p = asObject(`spec.ports[${i}]`, raw);
  const name = optionalString(`spec.ports[${i}].name`, p.name) ?? '';
  // It names chains and comments: a DNS label, as the API server requires (empty only for a lone port, see projectPorts).
  if (name !== '') checkDnsLabel(`spec.ports[${i}].name`, name);
  if (!isPort(p.port)) fail(`spec.ports[${i}].port out of range: ${JSON.stringify(p.port)}`);
  const tp = p.targetPort;
  let targetPort: number | string | undefined;
  if (typeof tp === 'number') {
    if (!isPort(tp)) fail(`spec.ports[${i}].targetPort out of range: ${tp}`);
    targetPort = tp;
  } else if (typeof tp === 'string' && tp !== '') {
    // The API also accepts a numeric string for an int-or-string.
    if (/^\d+$/.test(tp)) {
      const n = Number(tp);
      if (!isPort(n)) fail(`spec.ports[${i}].targetPort out of range: ${tp}`);
      targetPort = n;
    } else {
      if (!IANA_SVC_NAME.test(tp)) fail(`spec.ports[${i}].targetPort is not a port name: ${JSON.stringify(tp)}`);
      targetPort = pool.intern(tp);
    }
  } else if (tp !== undefined && tp !== null) {
    fail(`spec.ports[${i}].targetPort has a bad type`);
  }
  let nodePort: number | undefined;
  if (p.nodePort !== undefined && p.nodePort !== null && p.nodePort !== 0) {
    if (!isPort(p.nodePort)) fail(`spec.ports[${i}].nodePort out of range: ${JSON.stringify(p.nodePort)}`);
    nodePort = p.nodePort;
  }
  const out: ServicePortSpec = {
    name: pool.intern(name),
    protocol: parseProtocol(`spec.ports[${i}]`, p.protocol),
    port: p.port,
    targetPort,
    nodePort,
  };
  return out;
}

function projectIngress(raw: unknown, i: number): LoadBalancerIngress {
  const g = asObject(`status.loadBalancer.ingress[${i}]`, raw);
  const out: LoadBalancerIngress = {};
  if (g.ip !== undefined && g.ip !== null && g.ip !== '') out.ip = checkIP(`status.loadBalancer.ingress[${i}].ip`, g.ip);
  const host = optionalString(`status.loadBalancer.ingress[${i}].hostname`, g.hostname);
  if (host) out.hostname = host;
  if (g.ipMode !== undefined && g.ipMode !== null) {
    if (g.ipMode !== 'VIP' && g.ipMode !== 'Proxy') fail(`status.loadBalancer.ingress[${i}].ipMode unknown: ${JSON.stringify(g.ipMode)}`);
    out.ipMode = g.ipMode;
  }
  return out;
}

/** list.map(fn), or the shared empty list: most Services have none of these lists. */
function mapList<T>(list: unknown[], fn: (v: unknown, i: number) => T): T[] {
  return list.length === 0 ? EMPTY_LIST : list.map(fn);
}

// The ipFamilies lists there can be: one frozen copy each.
const FAMILIES: IPFamily[][] = [['IPv4'], ['IPv6'], ['IPv4', 'IPv6'], ['IPv6', 'IPv4']].map((l) => Object.freeze(l) as IPFamily[]);

function shareFamilies(list: IPFamily[]): IPFamily[] {
  if (list.length === 0) return EMPTY_LIST;
  for (const f of FAMILIES) if (f.length === list.length && f[0] === list[0] && f[1] === list[1]) return f;
  // Repeated families: not valid for the API server, but not ours to refuse.
  return list;
}

function sameServicePorts(a: ServicePortSpec[], b: ServicePortSpec[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.port !== y.port || x.protocol !== y.protocol || x.name !== y.name || x.targetPort !== y.targetPort || x.nodePort !== y.nodePort)
      return false;
  }
  return true;
}

function portDigest(digest: number, port: unknown, name: unknown, targetPort: unknown, nodePort: unknown): number {
  const tp = typeof targetPort === 'number' ? targetPort : typeof targetPort === 'string' && targetPort !== '' ? digestOf(targetPort) : -1;
  return digestStep(
    digestStep(digestStep(digestStep(digest, typeof port === 'number' ? port : -1), typeof name === 'string' ? digestOf(name) : 0), tp),
    typeof nodePort === 'number' && nodePort !== 0 ? nodePort : -1,
  );
}

function sharePorts(pool: StringPool, ports: ServicePortSpec[]): ServicePortSpec[] {
  if (ports.length === 0) return EMPTY_LIST;
  let digest = ports.length;
  for (let i = 0; i < ports.length; i++) {
    const p = ports[i]!;
    digest = portDigest(digest, p.port, p.name, p.targetPort, p.nodePort);
  }
  return pool.share(digest, ports, sameServicePorts);
}

const absent = (v: unknown) => v === undefined || v === null;

/**
 * Whether raw ports are exactly a pooled (valid) list: then they need no
 * validation either. (A targetPort written as a numeric string never
 * matches: the pooled one holds a number; it takes the full path.)
 */
function rawPortsMatch(pooled: ServicePortSpec[], list: unknown[]): boolean {
  if (pooled.length !== list.length) return false;
  for (let i = 0; i < list.length; i++) {
    const p = list[i];
    const q = pooled[i]!;
    if (
      !isObject(p) ||
      p.port !== q.port ||
      (absent(p.name) ? '' : p.name) !== q.name ||
      (absent(p.protocol) ? 'TCP' : p.protocol) !== q.protocol
    )
      return false;
    const tp = p.targetPort;
    if (absent(tp) || tp === '' ? q.targetPort !== undefined : tp !== q.targetPort) return false;
    const np = p.nodePort;
    if (absent(np) || np === 0 ? q.nodePort !== undefined : np !== q.nodePort) return false;
  }
  return true;
}

function projectPorts(list: unknown[], pool: StringPool): ServicePortSpec[] {
  let rawDigest = list.length;
  for (let i = 0; i < list.length; i++) {
    const p = list[i];
    rawDigest = isObject(p)
      ? portDigest(rawDigest, p.port, absent(p.name) ? '' : p.name, p.targetPort, p.nodePort)
      : digestStep(rawDigest, -2);
  }
  const seen = pool.lookup(rawDigest, list, rawPortsMatch);
  if (seen !== undefined) return seen;
  const ports: ServicePortSpec[] = new Array<ServicePortSpec>(list.length);
  for (let i = 0; i < list.length; i++) ports[i] = projectPort(list[i], i, pool);
  if (ports.length > 1) {
    const seen = new Set<string>();
    for (const p of ports) {
      if (p.name === '') fail('spec.ports has an unnamed port among several');
      if (seen.has(p.name)) fail(`spec.ports has the name ${JSON.stringify(p.name)} twice`);
      seen.add(p.name);
    }
  }
  return sharePorts(pool, ports);
}

function policy(what: string, v: unknown): 'Cluster' | 'Local' {
  if (v === undefined || v === null || v === '' || v === 'Cluster') return 'Cluster';
  if (v === 'Local') return 'Local';
  return fail(`${what} unknown: ${JSON.stringify(v)}`);
}

function projectServiceUnchecked(raw: unknown, pool: StringPool): ServiceInfo {
  const obj = asObject('object', raw);
  const meta = asObject('metadata', obj.metadata);
  const namespace = pool.intern(checkDnsLabel('metadata.namespace', meta.namespace));
  const name = checkDns1035Label('metadata.name', meta.name);
  const spec = asObject('spec', obj.spec);
  const type = spec.type ?? 'ClusterIP';
  if (typeof type !== 'string' || !SERVICE_TYPES.has(type)) fail(`spec.type unknown: ${JSON.stringify(type)}`);

  // The parsed list is ours: kept as it is once every entry is checked.
  let clusterIPs = asList('spec.clusterIPs', spec.clusterIPs) as string[];
  for (let i = 0; i < clusterIPs.length; i++) if (clusterIPs[i] !== 'None') checkIP(`spec.clusterIPs[${i}]`, clusterIPs[i]);
  if (clusterIPs.length === 0 && spec.clusterIP !== undefined && spec.clusterIP !== null && spec.clusterIP !== '') {
    clusterIPs = [spec.clusterIP === 'None' ? 'None' : checkIP('spec.clusterIP', spec.clusterIP)];
  }
  if (clusterIPs.length > 2) fail('spec.clusterIPs has more than two addresses');
  if (clusterIPs.includes('None') && clusterIPs.length !== 1) fail('spec.clusterIPs mixes None with addresses');
  if (clusterIPs.length === 2 && textFamily(clusterIPs[0]!, 'lenient') === textFamily(clusterIPs[1]!, 'lenient')) {
    fail('spec.clusterIPs has two addresses of one family');
  }

  let ipFamilies = asList('spec.ipFamilies', spec.ipFamilies) as IPFamily[];
  for (let i = 0; i < ipFamilies.length; i++) {
    const f = ipFamilies[i];
    if (f !== 'IPv4' && f !== 'IPv6') fail(`spec.ipFamilies[${i}] unknown: ${JSON.stringify(f)}`);
  }
  if (ipFamilies.length === 0) {
    ipFamilies = clusterIPs.filter((ip) => ip !== 'None').map((ip) => textFamily(ip, 'lenient')!);
  }
  ipFamilies = shareFamilies(ipFamilies);

  const ports = projectPorts(asList('spec.ports', spec.ports), pool);

  const externalIPs = mapList(asList('spec.externalIPs', spec.externalIPs), (ip, i) => checkIP(`spec.externalIPs[${i}]`, ip));
  const loadBalancerSourceRanges = mapList(asList('spec.loadBalancerSourceRanges', spec.loadBalancerSourceRanges), (r, i) => {
    if (typeof r !== 'string' || !isCIDRText(r.trim(), 'lenient'))
      fail(`spec.loadBalancerSourceRanges[${i}] is not a CIDR: ${JSON.stringify(r)}`);
    return r.trim();
  });
  const status = isObject(obj.status) ? obj.status : undefined;
  const lb = status !== undefined && isObject(status.loadBalancer) ? status.loadBalancer : undefined;
  const loadBalancerIngress = mapList(asList('status.loadBalancer.ingress', lb?.ingress), projectIngress);

  const affinity = spec.sessionAffinity ?? 'None';
  if (affinity !== 'None' && affinity !== 'ClientIP') fail(`spec.sessionAffinity unknown: ${JSON.stringify(affinity)}`);

  let sessionAffinityTimeoutSeconds: number | undefined;
  if (affinity === 'ClientIP') {
    const cfg =
      isObject(spec.sessionAffinityConfig) && isObject(spec.sessionAffinityConfig.clientIP) ? spec.sessionAffinityConfig.clientIP : {};
    const t = cfg.timeoutSeconds ?? DEFAULT_AFFINITY_TIMEOUT;
    if (typeof t !== 'number' || !Number.isInteger(t) || t < 1 || t > 86400)
      fail(`sessionAffinityConfig timeoutSeconds out of range: ${JSON.stringify(t)}`);
    sessionAffinityTimeoutSeconds = t;
  }
  let healthCheckNodePort: number | undefined;
  if (spec.healthCheckNodePort !== undefined && spec.healthCheckNodePort !== null && spec.healthCheckNodePort !== 0) {
    if (!isPort(spec.healthCheckNodePort)) fail(`spec.healthCheckNodePort out of range: ${JSON.stringify(spec.healthCheckNodePort)}`);
    healthCheckNodePort = spec.healthCheckNodePort;
  }
  const td = optionalString('spec.trafficDistribution', spec.trafficDistribution);
  // Every field in one literal: one hidden class, no out-of-object properties.
  const info: ServiceInfo = {
    namespace,
    name,
    resourceVersion: resourceVersionOf(meta),
    type: type as ServiceInfo['type'],
    clusterIPs,
    ipFamilies,
    ports,
    externalIPs,
    loadBalancerIngress,
    loadBalancerSourceRanges,
    sessionAffinity: affinity,
    sessionAffinityTimeoutSeconds,
    externalTrafficPolicy: policy('spec.externalTrafficPolicy', spec.externalTrafficPolicy),
    internalTrafficPolicy: policy('spec.internalTrafficPolicy', spec.internalTrafficPolicy),
    healthCheckNodePort,
    trafficDistribution: td ? pool.intern(td) : undefined,
  };
  return info;
}

export function projectService(raw: unknown, pool: StringPool): Projection<ServiceInfo> {
  return project(() => projectServiceUnchecked(raw, pool));
}

// Builders for model inputs: a plausible object by default, the test states only
// what it is about.

import { type EndpointConditions, packConditions } from '../../src/k8s/endpoint-conditions.ts';
import type { EndpointInfo, EndpointSliceInfo, IPFamily, NodeInfo, ServiceInfo } from '../../src/k8s/types.ts';
import { DEFAULT_FEATURE_GATES, type FeatureGates } from '../../src/config/feature-gates.ts';
import type { ModelConfig } from '../../src/model/build-service-ports.ts';
import type { EndpointSelection, ServicePort } from '../../src/model/service-port.ts';

export const NODE = 'node-a';

export function service(over: Partial<ServiceInfo> = {}): ServiceInfo {
  return {
    namespace: 'default',
    name: 'web',
    resourceVersion: '1',
    type: 'ClusterIP',
    clusterIPs: ['10.96.0.10'],
    ipFamilies: ['IPv4'],
    ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }],
    externalIPs: [],
    loadBalancerIngress: [],
    loadBalancerSourceRanges: [],
    sessionAffinity: 'None',
    externalTrafficPolicy: 'Cluster',
    internalTrafficPolicy: 'Cluster',
    ...over,
  };
}

/** An endpoint's fields, its conditions by name as the API gives them (unset ones read as the API's defaults). */
export type EndpointFields = Partial<Omit<EndpointInfo, 'conditions'>> & EndpointConditions;

/** An endpoint as the streams project it. */
export function endpointInfo({ ready, serving, terminating, ...fields }: EndpointFields & { address: string }): EndpointInfo {
  return { ...fields, conditions: packConditions({ ready, serving, terminating }) };
}

export function ep(address: string, over: EndpointFields = {}): EndpointInfo {
  return endpointInfo({ address, nodeName: 'node-b', ...over });
}

/** A terminating endpoint still serving (graceful shutdown). */
export function servingTerminating(address: string, over: EndpointFields = {}): EndpointInfo {
  return ep(address, { ready: false, serving: true, terminating: true, ...over });
}

export function slice(name: string, endpoints: EndpointInfo[], over: Partial<EndpointSliceInfo> = {}): EndpointSliceInfo {
  const family: IPFamily | 'FQDN' = over.addressType ?? (endpoints[0]?.address.includes(':') ? 'IPv6' : 'IPv4');
  return {
    namespace: 'default',
    name,
    resourceVersion: '1',
    serviceName: 'web',
    addressType: family,
    ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
    endpoints,
    ...over,
  };
}

export function node(over: Partial<NodeInfo> = {}): NodeInfo {
  return { name: NODE, resourceVersion: '1', zone: 'zone-a', region: 'region-1', addresses: [], podCIDRs: [], ...over };
}

export function config(gates: Partial<FeatureGates> = {}): ModelConfig {
  return { nodeName: NODE, featureGates: { ...DEFAULT_FEATURE_GATES, ...gates } };
}

/** A selection as 'reject', 'drop' or the sorted "ip:port" list. */
export function show(sel: EndpointSelection): string | string[] {
  if (sel.kind !== 'endpoints') return sel.kind;
  return sel.endpoints.map((e) => (e.ip.includes(':') ? `[${e.ip}]:${e.port}` : `${e.ip}:${e.port}`));
}

export function only<T>(list: readonly T[]): T {
  if (list.length !== 1) throw new Error(`expected exactly one element, got ${list.length}`);
  return list[0]!;
}

export function byFamily(ports: readonly ServicePort[], family: IPFamily): ServicePort[] {
  return ports.filter((p) => p.family === family);
}

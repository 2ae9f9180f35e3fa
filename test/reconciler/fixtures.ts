// ServicePort fixtures for the reconciler tests, built the way the service
// model hands them over (normalised addresses, selections already made).

import type { IPFamily, Protocol } from '../../src/k8s/types.ts';
import type { Endpoint, EndpointSelection, ServicePort } from '../../src/model/service-port.ts';
import { servicePortId } from '../../src/model/service-port.ts';
import { servicePortEqual } from '../../src/model/equality.ts';
import { defaultRulesetConfig, type FamilyConfig, type RulesetConfig } from '../../src/reconciler/config.ts';
import type { ModelRead } from '../../src/reconciler/reconciler.ts';
import { renderRuleset, type Ruleset } from '../../src/reconciler/ruleset.ts';

export function ep(ip: string, port = 8080, extra: Partial<Endpoint> = {}): Endpoint {
  return { ip, port, isLocal: false, ready: true, serving: true, terminating: false, ...extra };
}

export const local = (ip: string, port = 8080): Endpoint => ep(ip, port, { isLocal: true });

export function sel(...endpoints: Endpoint[]): EndpointSelection {
  return endpoints.length === 0 ? { kind: 'reject' } : { kind: 'endpoints', endpoints };
}

export interface PortSpec extends Partial<Omit<ServicePort, 'id'>> {
  namespace?: string;
  serviceName?: string;
}

/** A ServicePort; `cluster`/`external` default to all endpoints, `allEndpoints` to their union. */
export function sp(spec: PortSpec & { endpoints?: Endpoint[] }): ServicePort {
  const namespace = spec.namespace ?? 'default';
  const serviceName = spec.serviceName ?? 'web';
  const protocol: Protocol = spec.protocol ?? 'TCP';
  const portName = spec.portName ?? 'http';
  const family: IPFamily = spec.family ?? 'IPv4';
  const endpoints = spec.endpoints ?? [];
  const cluster = spec.cluster ?? sel(...endpoints);
  const external = spec.external ?? sel(...endpoints);
  const union = new Map<string, Endpoint>();
  for (const s of [cluster, external]) if (s.kind === 'endpoints') for (const e of s.endpoints) union.set(`${e.ip}/${e.port}`, e);
  const result: ServicePort = {
    id: servicePortId(namespace, serviceName, protocol, portName, family),
    namespace,
    serviceName,
    portName,
    protocol,
    family,
    clusterIP: 'clusterIP' in spec ? spec.clusterIP : family === 'IPv4' ? '10.96.0.10' : 'fd00:96::10',
    port: spec.port ?? 80,
    externalIPs: spec.externalIPs ?? [],
    loadBalancerIPs: spec.loadBalancerIPs ?? [],
    loadBalancerSourceRanges: spec.loadBalancerSourceRanges ?? [],
    externalPolicyLocal: spec.externalPolicyLocal ?? false,
    internalPolicyLocal: spec.internalPolicyLocal ?? false,
    cluster,
    external,
    allEndpoints: spec.allEndpoints ?? [...union.values()],
  };
  if (spec.nodePort !== undefined) result.nodePort = spec.nodePort;
  if (spec.sessionAffinityTimeout !== undefined) result.sessionAffinityTimeout = spec.sessionAffinityTimeout;
  if (spec.healthCheckNodePort !== undefined) result.healthCheckNodePort = spec.healthCheckNodePort;
  return result;
}

export const V4: FamilyConfig = {
  nodePortAddresses: ['192.0.2.10'],
  nodeIPs: ['192.0.2.10'],
  clusterCIDRs: ['10.244.0.0/16'],
  serviceCIDRs: ['10.96.0.0/16'],
};

export const V6: FamilyConfig = {
  nodePortAddresses: 'all',
  nodeIPs: ['2001:db8::10'],
  clusterCIDRs: ['fd00:244::/56'],
  serviceCIDRs: ['fd00:96::/112'],
};

/** The reconciler tests' config: endpoint shape 'chains' unless asked (its goldens are kube-proxy's shape). */
export function config(overrides: Partial<RulesetConfig> = {}): RulesetConfig {
  return defaultRulesetConfig({ families: { IPv4: V4, IPv6: V6 }, endpointShape: 'chains', ...overrides });
}

/**
 * The reconciler's model reader over a list the test sets: each read says
 * which ports changed since the previous one, as the change tracker's drain does,
 * and what `said` says of the model (how many Services it holds; unsaid by default).
 */
export function modelReads(current: () => readonly ServicePort[], said: Pick<ModelRead, 'services'> = {}): () => ModelRead {
  let last: readonly ServicePort[] = [];
  return () => {
    const ports = current();
    const changed = changedBetween(last, ports);
    last = ports;
    return { ports, changed, ...said };
  };
}

/** The ids the change tracker would name going from one list of ports to another: added, removed, or not servicePortEqual. */
export function changedBetween(before: readonly ServicePort[], after: readonly ServicePort[]): Set<string> {
  const was = new Map(before.map((p) => [p.id, p]));
  const changed = new Set<string>();
  for (const p of after) {
    const q = was.get(p.id);
    if (q === undefined || !servicePortEqual(q, p)) changed.add(p.id);
    was.delete(p.id);
  }
  for (const id of was.keys()) changed.add(id);
  return changed;
}

/** renderRuleset from `previous`, naming as changed what the change tracker would (see changedBetween). */
export function renderNext(ports: readonly ServicePort[], config: RulesetConfig, previous: Ruleset): Ruleset {
  const before = [...previous.services.values()].map((s) => s.port);
  return renderRuleset(ports, config, previous, changedBetween(before, ports));
}

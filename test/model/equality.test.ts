// The change tracker reports a ServicePort as changed only when
// servicePortEqual says it differs, and the reconciler renders only what the
// tracker reports: a field the equality forgets is a change that never reaches
// the kernel. Every key is flipped here, and the flip tables are typed so that
// a new field of ServicePort or Endpoint fails to compile until it is listed.

import { describe, expect, it } from 'vitest';
import { endpointEqual, selectionEqual, servicePortEqual } from '../../src/model/equality.ts';
import type { Endpoint, EndpointSelection, ServicePort } from '../../src/model/service-port.ts';

const endpoint = (ip: string): Endpoint => ({
  ip,
  port: 8080,
  isLocal: false,
  ready: true,
  serving: true,
  terminating: false,
  zone: 'zone-a',
});

/** Every field set, optional ones too, so that each can be flipped. */
function full(): ServicePort {
  const a = endpoint('10.244.1.5');
  const b = endpoint('10.244.2.6');
  return {
    id: 'default/web/TCP/http/IPv4',
    namespace: 'default',
    serviceName: 'web',
    portName: 'http',
    protocol: 'TCP',
    family: 'IPv4',
    clusterIP: '10.96.0.10',
    port: 80,
    nodePort: 30080,
    externalIPs: ['192.0.2.10'],
    loadBalancerIPs: ['198.51.100.7'],
    loadBalancerSourceRanges: ['203.0.113.0/24'],
    sessionAffinityTimeout: 10800,
    externalPolicyLocal: false,
    internalPolicyLocal: false,
    healthCheckNodePort: 31000,
    cluster: { kind: 'endpoints', endpoints: [a, b] },
    external: { kind: 'endpoints', endpoints: [a, b] },
    allEndpoints: [a, b],
  };
}

/** One changed value per key; `Required<…>` makes a missing key a compile error, and `satisfies` an unknown one. */
const SERVICE_PORT_FLIPS = {
  id: (p) => `${p.id}x`,
  namespace: () => 'other',
  serviceName: () => 'api',
  portName: () => 'https',
  protocol: () => 'UDP',
  family: () => 'IPv6',
  clusterIP: () => '10.96.0.11',
  port: (p) => p.port + 1,
  nodePort: () => undefined,
  externalIPs: (p) => [...p.externalIPs, '192.0.2.11'],
  loadBalancerIPs: () => [],
  loadBalancerSourceRanges: () => ['203.0.113.0/25'],
  sessionAffinityTimeout: () => undefined,
  externalPolicyLocal: (p) => !p.externalPolicyLocal,
  internalPolicyLocal: (p) => !p.internalPolicyLocal,
  healthCheckNodePort: (p) => p.healthCheckNodePort! + 1,
  cluster: () => ({ kind: 'reject' }),
  external: () => ({ kind: 'drop' }),
  allEndpoints: (p) => p.allEndpoints.slice(1),
} satisfies { [K in keyof Required<ServicePort>]: (p: ServicePort) => ServicePort[K] };

const ENDPOINT_FLIPS = {
  ip: () => '10.244.9.9',
  port: (e) => e.port + 1,
  isLocal: (e) => !e.isLocal,
  ready: (e) => !e.ready,
  serving: (e) => !e.serving,
  terminating: (e) => !e.terminating,
  zone: () => 'zone-b',
} satisfies { [K in keyof Required<Endpoint>]: (e: Endpoint) => Endpoint[K] };

type Flip = [key: string, change: (p: ServicePort) => ServicePort];

const servicePortFlips: Flip[] = Object.entries(SERVICE_PORT_FLIPS).map(([key, f]) => [
  key,
  (p) => ({ ...p, [key]: (f as (p: ServicePort) => unknown)(p) }),
]);

describe('servicePortEqual tells every field apart', () => {
  it('the flip table has every key of a fully set ServicePort, and no other', () => {
    expect(Object.keys(SERVICE_PORT_FLIPS).sort()).toEqual(Object.keys(full()).sort());
    expect(Object.keys(ENDPOINT_FLIPS).sort()).toEqual(Object.keys(endpoint('10.0.0.1')).sort());
  });

  it('a copy is equal', () => {
    expect(servicePortEqual(full(), structuredClone(full()))).toBe(true);
  });

  it.each(servicePortFlips)('a different %s is a change', (_key, change) => {
    const a = full();
    const b = change(structuredClone(a));
    expect(servicePortEqual(a, b)).toBe(false);
    expect(servicePortEqual(b, a)).toBe(false);
  });

  it.each(Object.entries(ENDPOINT_FLIPS))('an endpoint with a different %s is a change, in each list that holds it', (key, f) => {
    const a = full();
    const flipped: Endpoint = { ...a.allEndpoints[0]!, [key]: (f as (e: Endpoint) => unknown)(a.allEndpoints[0]!) };
    expect(endpointEqual(a.allEndpoints[0]!, flipped)).toBe(false);
    const withFlipped = (s: EndpointSelection): EndpointSelection =>
      s.kind === 'endpoints' ? { kind: 'endpoints', endpoints: [flipped, ...s.endpoints.slice(1)] } : s;
    expect(selectionEqual(a.cluster, withFlipped(a.cluster))).toBe(false);
    expect(servicePortEqual(a, { ...a, cluster: withFlipped(a.cluster) })).toBe(false);
    expect(servicePortEqual(a, { ...a, external: withFlipped(a.external) })).toBe(false);
    expect(servicePortEqual(a, { ...a, allEndpoints: [flipped, ...a.allEndpoints.slice(1)] })).toBe(false);
  });

  it('an optional field absent and one set to undefined are equal', () => {
    const a = full();
    const { nodePort: _, ...withoutNodePort } = a;
    expect(servicePortEqual(withoutNodePort, { ...a, nodePort: undefined })).toBe(true);
  });
});

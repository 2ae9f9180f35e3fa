// Builders for raw API objects, shared by tests and benchmarks.

import type { K8sObject } from './object-store.ts';

export function service(ns: string, name: string, over: Record<string, unknown> = {}, labels: Record<string, string> = {}): K8sObject {
  const { spec, status, ...rest } = over as { spec?: Record<string, unknown>; status?: Record<string, unknown> };
  return {
    metadata: { namespace: ns, name, labels },
    spec: {
      type: 'ClusterIP',
      clusterIP: '10.96.0.10',
      clusterIPs: ['10.96.0.10'],
      ipFamilies: ['IPv4'],
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }],
      sessionAffinity: 'None',
      ...spec,
    },
    status: status ?? { loadBalancer: {} },
    ...rest,
  };
}

export interface EndpointSpec {
  ip: string;
  ready?: boolean;
  node?: string;
  zone?: string;
}

export function endpointSlice(
  ns: string,
  name: string,
  serviceName: string,
  endpoints: EndpointSpec[],
  extraLabels: Record<string, string> = {},
  over: Record<string, unknown> = {},
): K8sObject {
  return {
    metadata: {
      namespace: ns,
      name,
      labels: {
        'kubernetes.io/service-name': serviceName,
        'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
        ...extraLabels,
      },
    },
    addressType: 'IPv4',
    ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
    endpoints: endpoints.map((e) => ({
      addresses: [e.ip],
      conditions: { ready: e.ready ?? true, serving: e.ready ?? true, terminating: false },
      nodeName: e.node ?? 'node-a',
      zone: e.zone ?? 'zone-a',
      targetRef: { kind: 'Pod', namespace: ns, name: `pod-${e.ip.replaceAll('.', '-')}`, uid: `uid-${e.ip}` },
    })),
    ...over,
  };
}

export function node(name: string, labels: Record<string, string> = {}): K8sObject {
  return {
    metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } },
    spec: { podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24', 'fd00:10:244:1::/64'] },
    status: {
      addresses: [
        { type: 'InternalIP', address: '192.0.2.10' },
        { type: 'Hostname', address: name },
      ],
    },
  };
}

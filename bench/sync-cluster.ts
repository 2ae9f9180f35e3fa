// The cluster bench:sync loads into the fake API server: N ClusterIP services,
// each with one EndpointSlice of E ready endpoints (10 unless a size says
// otherwise, see sizes.ts) on other nodes (so every endpoint is used), and this node. Also the agent's flags, shared by the
// agent child and the raw-load child so both render the very same ruleset.
// IPv4 unless a size says IPv6 ("10kv6"): then single-stack IPv6, numbered alike.

import type { IPFamily } from '../src/k8s/types.ts';
import { formatIPv6 } from '../src/net/ip.ts';
import type { EndpointShape } from '../src/reconciler/config.ts';
import type { FakeApiServer, K8sObject } from '../test/fake-apiserver/index.ts';

export const ENDPOINTS_PER_SERVICE = 10;
export const NODE_NAME = 'node-a';
export const SERVICE_CIDR = '10.96.0.0/12';
export const CLUSTER_CIDR = '10.128.0.0/9';
/** An IPv6 cluster's: the last 20 and 32 bits number services and pods. */
const SERVICE_CIDR_V6 = 'fd00:96::/108';
const CLUSTER_CIDR_V6 = 'fd00:128::/96';

/** Address n of fd00:<group>::/96 (n in its last 32 bits), in canonical text. */
function ipv6In(group: number, n: number): string {
  const b = new Uint8Array(16);
  b[0] = 0xfd;
  b[2] = group >> 8;
  b[3] = group & 0xff;
  b[12] = n >>> 24;
  b[13] = (n >>> 16) & 0xff;
  b[14] = (n >>> 8) & 0xff;
  b[15] = n & 0xff;
  return formatIPv6(b);
}

const ns = (i: number) => `ns-${i % 50}`;
const name = (i: number) => `svc-${i}`;

/** 10.96.0.0/12 holds 1M addresses: service i is 10.96.0.0 + i + 1 (fd00:96:: + i + 1 in IPv6). */
export function clusterIP(i: number, family: IPFamily = 'IPv4'): string {
  const n = i + 1;
  if (family === 'IPv6') return ipv6In(0x96, n);
  return `10.${96 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`;
}

/**
 * Pod n (service i, endpoint j of E) in 10.128.0.0/9; `gen` moves it, as a
 * rollout would. 2M pods fit (100k services x 10 endpoints is 1M).
 */
export function podIP(i: number, j: number, gen = 0, endpoints = ENDPOINTS_PER_SERVICE, family: IPFamily = 'IPv4'): string {
  const n = (i * endpoints + j + 1) * 4 + gen; // gaps so that a moved pod gets a free address
  if (family === 'IPv6') return ipv6In(0x128, n);
  return `10.${128 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`;
}

export function serviceObject(i: number, family: IPFamily = 'IPv4'): K8sObject {
  const ip = clusterIP(i, family);
  return {
    metadata: { namespace: ns(i), name: name(i), labels: { app: name(i) } },
    spec: {
      type: 'ClusterIP',
      clusterIP: ip,
      clusterIPs: [ip],
      ipFamilies: [family],
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }],
      selector: { app: name(i) },
      sessionAffinity: 'None',
      internalTrafficPolicy: 'Cluster',
    },
    status: { loadBalancer: {} },
  };
}

/** The slice of service i with `count` endpoints; `moved` endpoints get the address of generation `gen`. */
export function sliceObject(
  i: number,
  moved: ReadonlyMap<number, number> = new Map(),
  count = ENDPOINTS_PER_SERVICE,
  family: IPFamily = 'IPv4',
): K8sObject {
  const endpoints = [];
  for (let j = 0; j < count; j++) {
    const ip = podIP(i, j, moved.get(j) ?? 0, count, family);
    endpoints.push({
      addresses: [ip],
      conditions: { ready: true, serving: true, terminating: false },
      nodeName: `node-${(i + j) % 100}`,
      zone: 'zone-a',
      targetRef: { kind: 'Pod', namespace: ns(i), name: `pod-${ip.replaceAll(/[.:]/g, '-')}` },
    });
  }
  return {
    metadata: {
      namespace: ns(i),
      name: `${name(i)}-abcde`,
      labels: { 'kubernetes.io/service-name': name(i), 'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io' },
    },
    addressType: family,
    ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
    endpoints,
  };
}

export function nodeObject(family: IPFamily = 'IPv4'): K8sObject {
  const v6 = family === 'IPv6';
  return {
    metadata: { name: NODE_NAME, labels: { 'kubernetes.io/hostname': NODE_NAME, 'topology.kubernetes.io/zone': 'zone-a' } },
    spec: { podCIDRs: [v6 ? 'fd00:128::/120' : '10.128.0.0/24'] },
    status: { addresses: [{ type: 'InternalIP', address: v6 ? '2001:db8::10' : '192.0.2.10' }] },
  };
}

export function populate(api: FakeApiServer, services: number, endpoints = ENDPOINTS_PER_SERVICE, family: IPFamily = 'IPv4'): void {
  api.create('nodes', nodeObject(family));
  for (let i = 0; i < services; i++) {
    api.create('services', serviceObject(i, family));
    api.create('endpointslices', sliceObject(i, undefined, endpoints, family));
  }
}

/** The agent's command line (without --kubeconfig and --netns). */
export function agentFlags(minSyncPeriod: string, endpointShape: EndpointShape = 'map', family: IPFamily = 'IPv4'): string[] {
  const v6 = family === 'IPv6';
  return [
    `--endpoint-shape=${endpointShape}`,
    `--hostname-override=${NODE_NAME}`,
    `--min-sync-period=${minSyncPeriod}`,
    `--cluster-cidr=${v6 ? CLUSTER_CIDR_V6 : CLUSTER_CIDR}`,
    `--service-cluster-ip-range=${v6 ? SERVICE_CIDR_V6 : SERVICE_CIDR}`,
    '--metrics-bind-address=127.0.0.1:0',
    '--healthz-bind-address=127.0.0.1:0',
    '--log-level=info',
  ];
}

export function sliceKey(i: number): string {
  return `${ns(i)}/${name(i)}-abcde`;
}

/** `ns/svc/tcp/http`: the readable part of service i's chain names. */
export function servicePortName(i: number): { namespace: string; serviceName: string; protocol: 'TCP'; portName: string } {
  return { namespace: ns(i), serviceName: name(i), protocol: 'TCP', portName: 'http' };
}

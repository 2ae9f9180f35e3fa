import { describe, expect, it } from 'vitest';
import { buildServicePorts } from '../../src/model/build-service-ports.ts';
import type { EndpointInfo, ServiceInfo } from '../../src/k8s/types.ts';
import { NODE, config, endpointInfo, ep, node, only, service, servingTerminating, show, slice } from './fixtures.ts';

const here = { nodeName: NODE };
const lb = (over: Partial<ServiceInfo> = {}) => service({ type: 'LoadBalancer', ...over });

interface Row {
  name: string;
  svc: ServiceInfo;
  endpoints: EndpointInfo[];
  cluster: string | string[];
  external: string | string[];
  all: string[];
}

const rows: Row[] = [
  {
    name: 'ready endpoints only',
    svc: service(),
    endpoints: [ep('10.0.1.1'), ep('10.0.1.2', { ready: false, serving: false }), servingTerminating('10.0.1.3')],
    cluster: ['10.0.1.1:8080'],
    external: ['10.0.1.1:8080'],
    all: ['10.0.1.1:8080'],
  },
  {
    name: 'no ready endpoint anywhere -> serving-terminating ones',
    svc: service(),
    endpoints: [servingTerminating('10.0.1.3'), ep('10.0.1.2', { ready: false, serving: false }), servingTerminating('10.0.1.4')],
    cluster: ['10.0.1.3:8080', '10.0.1.4:8080'],
    external: ['10.0.1.3:8080', '10.0.1.4:8080'],
    all: ['10.0.1.3:8080', '10.0.1.4:8080'],
  },
  {
    name: 'terminating but not serving is never used -> reject',
    svc: service(),
    endpoints: [ep('10.0.1.3', { ready: false, serving: false, terminating: true })],
    cluster: 'reject',
    external: 'reject',
    all: [],
  },
  {
    name: 'not ready and not terminating (starting up) is never used -> reject',
    svc: service(),
    endpoints: [ep('10.0.1.3', { ready: false, serving: false, terminating: false })],
    cluster: 'reject',
    external: 'reject',
    all: [],
  },
  {
    name: 'no endpoints at all -> reject',
    svc: lb({ externalTrafficPolicy: 'Local' }),
    endpoints: [],
    cluster: 'reject',
    external: 'reject',
    all: [],
  },
  {
    name: 'unset conditions: ready unset means ready',
    svc: service(),
    endpoints: [endpointInfo({ address: '10.0.1.1' })],
    cluster: ['10.0.1.1:8080'],
    external: ['10.0.1.1:8080'],
    all: ['10.0.1.1:8080'],
  },
  {
    name: 'unset serving means serving (as kube-proxy reads it): a not-ready terminating endpoint is a fallback',
    svc: service(),
    endpoints: [endpointInfo({ address: '10.0.1.1', ready: false, terminating: true })],
    cluster: ['10.0.1.1:8080'],
    external: ['10.0.1.1:8080'],
    all: ['10.0.1.1:8080'],
  },
  {
    name: 'unset terminating means not terminating: a not-ready endpoint with serving unset is unusable',
    svc: service(),
    endpoints: [endpointInfo({ address: '10.0.1.1', ready: false })],
    cluster: 'reject',
    external: 'reject',
    all: [],
  },
  {
    name: "internalTrafficPolicy Local: only this node's ready endpoints",
    svc: service({ internalTrafficPolicy: 'Local' }),
    endpoints: [ep('10.0.1.1'), ep('10.0.2.1', here), ep('10.0.2.2', here)],
    cluster: ['10.0.2.1:8080', '10.0.2.2:8080'],
    external: ['10.0.2.1:8080', '10.0.2.2:8080'],
    all: ['10.0.2.1:8080', '10.0.2.2:8080'],
  },
  {
    name: 'internalTrafficPolicy Local, none here but some elsewhere -> drop',
    svc: service({ internalTrafficPolicy: 'Local' }),
    endpoints: [ep('10.0.1.1'), servingTerminating('10.0.1.2')],
    cluster: 'drop',
    external: 'drop',
    all: [],
  },
  {
    name: 'internalTrafficPolicy Local, only serving-terminating elsewhere -> drop (not reject)',
    svc: service({ internalTrafficPolicy: 'Local' }),
    endpoints: [servingTerminating('10.0.1.2')],
    cluster: 'drop',
    external: 'drop',
    all: [],
  },
  {
    name: 'internalTrafficPolicy Local, nothing usable anywhere -> reject',
    svc: service({ internalTrafficPolicy: 'Local' }),
    endpoints: [ep('10.0.2.1', { ...here, ready: false, serving: false })],
    cluster: 'reject',
    external: 'reject',
    all: [],
  },
  {
    name: "Local falls back to this node's serving-terminating endpoints even when others are ready elsewhere",
    svc: service({ internalTrafficPolicy: 'Local' }),
    endpoints: [ep('10.0.1.1'), servingTerminating('10.0.2.1', here)],
    cluster: ['10.0.2.1:8080'],
    external: ['10.0.2.1:8080'],
    all: ['10.0.2.1:8080'],
  },
  {
    name: "Local prefers this node's ready endpoints over its terminating ones",
    svc: service({ internalTrafficPolicy: 'Local' }),
    endpoints: [ep('10.0.2.1', here), servingTerminating('10.0.2.2', here)],
    cluster: ['10.0.2.1:8080'],
    external: ['10.0.2.1:8080'],
    all: ['10.0.2.1:8080'],
  },
  {
    name: 'externalTrafficPolicy Local on a LoadBalancer: external local-only, cluster traffic everywhere',
    svc: lb({ externalTrafficPolicy: 'Local' }),
    endpoints: [ep('10.0.1.1'), ep('10.0.2.1', here)],
    cluster: ['10.0.1.1:8080', '10.0.2.1:8080'],
    external: ['10.0.2.1:8080'],
    all: ['10.0.1.1:8080', '10.0.2.1:8080'],
  },
  {
    name: 'externalTrafficPolicy Local, none here -> external drop, cluster still served',
    svc: lb({ externalTrafficPolicy: 'Local' }),
    endpoints: [ep('10.0.1.1')],
    cluster: ['10.0.1.1:8080'],
    external: 'drop',
    all: ['10.0.1.1:8080'],
  },
  {
    name: 'eTP Local with a terminating local endpoint and ready remote ones: each policy its own fallback',
    svc: lb({ externalTrafficPolicy: 'Local' }),
    endpoints: [ep('10.0.1.1'), servingTerminating('10.0.2.1', here)],
    cluster: ['10.0.1.1:8080'],
    external: ['10.0.2.1:8080'],
    all: ['10.0.1.1:8080', '10.0.2.1:8080'],
  },
  {
    name: 'both policies Local on a NodePort service',
    svc: service({ type: 'NodePort', externalTrafficPolicy: 'Local', internalTrafficPolicy: 'Local' }),
    endpoints: [ep('10.0.1.1'), ep('10.0.2.1', here)],
    cluster: ['10.0.2.1:8080'],
    external: ['10.0.2.1:8080'],
    all: ['10.0.2.1:8080'],
  },
  {
    name: 'iTP Local, eTP Cluster on a NodePort service: external uses every endpoint',
    svc: service({ type: 'NodePort', internalTrafficPolicy: 'Local' }),
    endpoints: [ep('10.0.1.1'), ep('10.0.2.1', here)],
    cluster: ['10.0.2.1:8080'],
    external: ['10.0.1.1:8080', '10.0.2.1:8080'],
    all: ['10.0.1.1:8080', '10.0.2.1:8080'],
  },
  {
    name: 'eTP Local on a ClusterIP service without externalIPs has no effect (nothing external reaches it)',
    svc: service({ externalTrafficPolicy: 'Local' }),
    endpoints: [ep('10.0.1.1'), ep('10.0.2.1', here)],
    cluster: ['10.0.1.1:8080', '10.0.2.1:8080'],
    external: ['10.0.1.1:8080', '10.0.2.1:8080'],
    all: ['10.0.1.1:8080', '10.0.2.1:8080'],
  },
  {
    name: 'eTP Local on a ClusterIP service with externalIPs applies to them',
    svc: service({ externalTrafficPolicy: 'Local', externalIPs: ['192.0.2.10'] }),
    endpoints: [ep('10.0.1.1'), ep('10.0.2.1', here)],
    cluster: ['10.0.1.1:8080', '10.0.2.1:8080'],
    external: ['10.0.2.1:8080'],
    all: ['10.0.1.1:8080', '10.0.2.1:8080'],
  },
  {
    name: 'an endpoint without nodeName is never local',
    svc: service({ internalTrafficPolicy: 'Local' }),
    endpoints: [endpointInfo({ address: '10.0.1.1', ready: true })],
    cluster: 'drop',
    external: 'drop',
    all: [],
  },
];

describe('endpoint selection (kube-proxy meaning)', () => {
  it.each(rows)('$name', ({ svc, endpoints, cluster, external, all }) => {
    const { ports, warnings } = buildServicePorts(svc, [slice('web-1', endpoints)], node(), config());
    expect(warnings).toEqual([]);
    const p = only(ports);
    expect(show(p.cluster)).toEqual(cluster);
    expect(show(p.external)).toEqual(external);
    expect(show({ kind: 'endpoints', endpoints: p.allEndpoints })).toEqual(all);
  });

  it.each([
    ['internal Local, external Cluster', { internalTrafficPolicy: 'Local' }],
    ['internal Cluster, external Local', { externalTrafficPolicy: 'Local' }],
  ] as const)('one Endpoint object per endpoint, shared by the two selections that name it: %s', (_, policy) => {
    const slices = [slice('web-1', [ep('10.0.1.1', here), ep('10.0.1.2'), ep('10.0.1.3', here)])];
    const p = only(buildServicePorts(lb(policy), slices, node(), config()).ports);
    const local = p.cluster.kind === 'endpoints' && p.cluster.endpoints.length === 2 ? p.cluster : p.external;
    const cluster = local === p.cluster ? p.external : p.cluster;
    if (local.kind !== 'endpoints' || cluster.kind !== 'endpoints') throw new Error('both selections should have endpoints');
    expect(show(local)).toEqual(['10.0.1.1:8080', '10.0.1.3:8080']);
    expect(show(cluster)).toEqual(['10.0.1.1:8080', '10.0.1.2:8080', '10.0.1.3:8080']);
    expect(local.endpoints[0]).toBe(cluster.endpoints[0]);
    expect(local.endpoints[1]).toBe(cluster.endpoints[2]);
    expect(p.allEndpoints).toHaveLength(3);
    for (const [i, e] of p.allEndpoints.entries()) expect(e).toBe(cluster.endpoints[i]);
  });

  it('carries the conditions, locality and zone of each endpoint', () => {
    const { ports } = buildServicePorts(
      service(),
      [slice('web-1', [servingTerminating('10.0.2.1', { nodeName: NODE, zone: 'zone-a' }), servingTerminating('10.0.1.1')])],
      node(),
      config(),
    );
    expect(only(ports).allEndpoints).toEqual([
      { ip: '10.0.1.1', port: 8080, isLocal: false, ready: false, serving: true, terminating: true },
      { ip: '10.0.2.1', port: 8080, isLocal: true, ready: false, serving: true, terminating: true, zone: 'zone-a' },
    ]);
  });
});

describe('slices and duplicates', () => {
  it('the same endpoint in two slices is used once; the ready record wins over a stale not-ready one', () => {
    const slices = [slice('web-a', [ep('10.0.1.1', { ready: false, serving: false })]), slice('web-b', [ep('10.0.1.1'), ep('10.0.1.2')])];
    const p = only(buildServicePorts(service(), slices, node(), config()).ports);
    expect(show(p.cluster)).toEqual(['10.0.1.1:8080', '10.0.1.2:8080']);
    expect(p.allEndpoints[0]).toMatchObject({ ip: '10.0.1.1', ready: true });
  });

  it.each([
    ['ready first', ['web-a', 'web-b']],
    ['ready last', ['web-b', 'web-a']],
  ])('the ready record wins whichever slice (by name) holds it: %s', (_, [readyName, staleName]) => {
    const slices = [
      slice(readyName!, [ep('10.0.1.1', { zone: 'fresh' })]),
      slice(staleName!, [ep('10.0.1.1', { ready: false, serving: true, terminating: true, zone: 'stale' })]),
    ];
    const p = only(buildServicePorts(service(), slices, node(), config()).ports);
    expect(p.allEndpoints).toEqual([
      { ip: '10.0.1.1', port: 8080, isLocal: false, ready: true, serving: true, terminating: false, zone: 'fresh' },
    ]);
  });

  it.each([
    ['in name order', ['web-a', 'web-b']],
    ['in reverse order', ['web-b', 'web-a']],
  ])('two equally usable records: the first slice by name wins, the slices given %s', (_, names) => {
    const zoneOf: Record<string, string> = { 'web-a': 'zone-of-a', 'web-b': 'zone-of-b' };
    const slices = names!.map((n) => slice(n, [ep('10.0.1.1', { zone: zoneOf[n]! }), ep(n === 'web-a' ? '10.0.1.2' : '10.0.1.0')]));
    const p = only(buildServicePorts(service(), slices, node(), config()).ports);
    expect(show(p.cluster)).toEqual(['10.0.1.0:8080', '10.0.1.1:8080', '10.0.1.2:8080']);
    expect(p.allEndpoints[1]).toMatchObject({ ip: '10.0.1.1', zone: 'zone-of-a' });
  });

  it('spellings of one address are one endpoint', () => {
    const slices = [slice('web-a', [ep('10.0.1.1'), ep('010.000.001.001')]), slice('web-b', [ep(' 10.0.1.01')])];
    expect(show(only(buildServicePorts(service(), slices, node(), config()).ports).cluster)).toEqual(['10.0.1.1:8080']);
  });

  it('the same address on two ports of the slice is two endpoints only if the service port maps to both (it cannot)', () => {
    const slices = [
      slice('web-a', [ep('10.0.1.1')]),
      slice('web-b', [ep('10.0.1.1')], { ports: [{ name: 'http', protocol: 'TCP', port: 9090 }] }),
    ];
    expect(show(only(buildServicePorts(service(), slices, node(), config()).ports).cluster)).toEqual(['10.0.1.1:8080', '10.0.1.1:9090']);
  });

  it('FQDN slices and slices of the other family are ignored', () => {
    const slices = [
      slice('web-fqdn', [ep('db.example.com')], { addressType: 'FQDN' }),
      slice('web-v6', [ep('fd00::1')]),
      slice('web-v4', [ep('10.0.1.1')]),
    ];
    const { ports, warnings } = buildServicePorts(service(), slices, node(), config());
    expect(warnings).toEqual([]);
    expect(show(only(ports).cluster)).toEqual(['10.0.1.1:8080']);
  });

  it('output does not depend on slice order', () => {
    const a = slice('web-a', [ep('10.0.1.1', { ready: false, serving: false, zone: 'x' })]);
    const b = slice('web-b', [ep('10.0.1.1', { ready: false, serving: false, zone: 'y' }), ep('10.0.1.2')]);
    const one = buildServicePorts(service(), [a, b], node(), config());
    const two = buildServicePorts(service(), [b, a], node(), config());
    expect(two).toEqual(one);
  });
});

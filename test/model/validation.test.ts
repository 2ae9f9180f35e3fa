// Normalisation and validation: bad entries are dropped one by one with a
// warning naming the object and field; the rest of the service keeps working.

import { describe, expect, it } from 'vitest';
import { buildServicePorts } from '../../src/model/build-service-ports.ts';
import type { EndpointSliceInfo, ServiceInfo } from '../../src/k8s/types.ts';
import type { ModelWarning } from '../../src/model/warnings.ts';
import { config, ep, node, service, show, slice } from './fixtures.ts';

const good = (): ServiceInfo =>
  service({
    type: 'LoadBalancer',
    clusterIPs: ['10.96.0.10'],
    ports: [
      { name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 },
      { name: 'https', protocol: 'TCP', port: 443, nodePort: 30443 },
    ],
    externalIPs: ['192.0.2.10'],
    loadBalancerIngress: [{ ip: '198.51.100.7' }],
    loadBalancerSourceRanges: ['203.0.113.0/25'],
  });
const goodSlices = (): EndpointSliceInfo[] => [
  slice('web-1', [ep('10.0.1.1'), ep('10.0.1.2')], {
    ports: [
      { name: 'http', protocol: 'TCP', port: 8080 },
      { name: 'https', protocol: 'TCP', port: 8443 },
    ],
  }),
];

function summary(svc: ServiceInfo, slices: EndpointSliceInfo[]) {
  const { ports, warnings } = buildServicePorts(svc, slices, node(), config());
  return {
    ports: ports.map((p) => ({
      id: p.id,
      clusterIP: p.clusterIP,
      nodePort: p.nodePort,
      externalIPs: p.externalIPs,
      loadBalancerIPs: p.loadBalancerIPs,
      loadBalancerSourceRanges: p.loadBalancerSourceRanges,
      cluster: show(p.cluster),
    })),
    warnings: warnings.map((w: ModelWarning) => [w.code, w.object, w.field]),
  };
}

describe('normalisation', () => {
  it('leading zeros, spaces and IPv6 spellings all come out canonical', () => {
    const svc = good();
    svc.clusterIPs = ['010.096.000.010', 'FD00:10:96:0:0:0:0:A'];
    svc.ipFamilies = ['IPv4', 'IPv6'];
    svc.externalIPs = ['192.0.2.010', '2001:DB8::0010'];
    svc.loadBalancerIngress = [{ ip: ' 198.51.100.07' }];
    svc.loadBalancerSourceRanges = [' 203.0.113.0/25', '2001:DB8:FF::/48 '];
    const slices = [
      ...goodSlices(),
      slice('web-v6', [ep('FD00:1:0:0::0001')], {
        ports: [
          { name: 'http', protocol: 'TCP', port: 8080 },
          { name: 'https', protocol: 'TCP', port: 8443 },
        ],
      }),
    ];
    slices[0]!.endpoints.push(ep('::ffff:10.0.1.3'));
    const s = summary(svc, slices);
    expect(s.warnings).toEqual([]);
    expect(s.ports.filter((p) => p.id.endsWith('http/IPv4') || p.id.endsWith('http/IPv6'))).toEqual([
      {
        id: 'default/web/TCP/http/IPv4',
        clusterIP: '10.96.0.10',
        nodePort: 30080,
        externalIPs: ['192.0.2.10'],
        loadBalancerIPs: ['198.51.100.7'],
        loadBalancerSourceRanges: ['203.0.113.0/25'],
        cluster: ['10.0.1.1:8080', '10.0.1.2:8080', '10.0.1.3:8080'],
      },
      {
        id: 'default/web/TCP/http/IPv6',
        clusterIP: 'fd00:10:96::a',
        nodePort: 30080,
        externalIPs: ['2001:db8::10'],
        loadBalancerIPs: [],
        loadBalancerSourceRanges: ['2001:db8:ff::/48'],
        cluster: ['[fd00:1::1]:8080'],
      },
    ]);
  });
});

const SVC = 'Service default/web';
const SLICE = 'EndpointSlice default/web-1';

interface Case {
  name: string;
  mutate: (svc: ServiceInfo, slices: EndpointSliceInfo[]) => void;
  warning: [string, string, string];
  /** What changes in the output relative to the good service. */
  expect: (s: ReturnType<typeof summary>) => void;
}

const cases: Case[] = [
  {
    name: 'an invalid externalIP is dropped, the others stay',
    mutate: (svc) => (svc.externalIPs = ['192.0.2.300', '192.0.2.10']),
    warning: ['INVALID_IP', SVC, 'spec.externalIPs[0]'],
    expect: (s) => expect(s.ports[0]!.externalIPs).toEqual(['192.0.2.10']),
  },
  {
    name: 'a special externalIP (loopback) is dropped',
    mutate: (svc) => (svc.externalIPs = ['127.0.0.1', '192.0.2.10']),
    warning: ['SPECIAL_IP', SVC, 'spec.externalIPs[0]'],
    expect: (s) => expect(s.ports[0]!.externalIPs).toEqual(['192.0.2.10']),
  },
  {
    name: 'an invalid load balancer ingress IP is dropped',
    mutate: (svc) => (svc.loadBalancerIngress = [{ ip: 'lb.example.com' }, { ip: '198.51.100.7' }]),
    warning: ['INVALID_IP', SVC, 'status.loadBalancer.ingress[0].ip'],
    expect: (s) => expect(s.ports[0]!.loadBalancerIPs).toEqual(['198.51.100.7']),
  },
  {
    name: 'a broadcast load balancer IP is dropped',
    mutate: (svc) => (svc.loadBalancerIngress = [{ ip: '255.255.255.255' }]),
    warning: ['SPECIAL_IP', SVC, 'status.loadBalancer.ingress[0].ip'],
    expect: (s) => expect(s.ports[0]!.loadBalancerIPs).toEqual([]),
  },
  {
    name: 'an invalid source range is dropped, the others stay',
    mutate: (svc) => (svc.loadBalancerSourceRanges = ['203.0.113.0/33', ' 198.51.100.0/24']),
    warning: ['INVALID_CIDR', SVC, 'spec.loadBalancerSourceRanges[0]'],
    expect: (s) => expect(s.ports[0]!.loadBalancerSourceRanges).toEqual(['198.51.100.0/24']),
  },
  {
    name: 'an out-of-range service port drops that port only',
    mutate: (svc) => (svc.ports[0]!.port = 65536),
    warning: ['INVALID_PORT', SVC, 'spec.ports[0].port'],
    expect: (s) => expect(s.ports.map((p) => p.id)).toEqual(['default/web/TCP/https/IPv4']),
  },
  {
    name: 'an unknown protocol drops that port only',
    mutate: (svc) => ((svc.ports[0] as { protocol: string }).protocol = 'ICMP'),
    warning: ['INVALID_PORT', SVC, 'spec.ports[0].protocol'],
    expect: (s) => expect(s.ports.map((p) => p.id)).toEqual(['default/web/TCP/https/IPv4']),
  },
  {
    name: 'a duplicated port name drops the second',
    mutate: (svc) => (svc.ports[1]!.name = 'http'),
    warning: ['DUPLICATE_PORT', SVC, 'spec.ports[1].name'],
    expect: (s) => expect(s.ports.map((p) => [p.id, p.nodePort])).toEqual([['default/web/TCP/http/IPv4', 30080]]),
  },
  {
    name: 'an out-of-range nodePort is dropped, the port stays',
    mutate: (svc) => (svc.ports[0]!.nodePort = 70000),
    warning: ['INVALID_PORT', SVC, 'spec.ports[0].nodePort'],
    expect: (s) => expect(s.ports.map((p) => p.nodePort)).toEqual([undefined, 30443]),
  },
  {
    name: 'an invalid ClusterIP of one family drops that family only',
    mutate: (svc) => {
      svc.clusterIPs = ['10.96.0.10', 'fd00::zz'];
      svc.ipFamilies = ['IPv4', 'IPv6'];
    },
    warning: ['INVALID_IP', SVC, 'spec.clusterIPs[1]'],
    expect: (s) => expect(s.ports.map((p) => p.id)).toEqual(['default/web/TCP/http/IPv4', 'default/web/TCP/https/IPv4']),
  },
  {
    name: 'two ClusterIPs of one family: the second is ignored',
    mutate: (svc) => (svc.clusterIPs = ['10.96.0.10', '10.96.0.11']),
    warning: ['DUPLICATE_FAMILY', SVC, 'spec.clusterIPs[1]'],
    expect: (s) => expect(s.ports.map((p) => p.clusterIP)).toEqual(['10.96.0.10', '10.96.0.10']),
  },
  {
    name: 'an unparseable endpoint address drops that endpoint',
    mutate: (_, slices) => (slices[0]!.endpoints[0]!.address = '10.0.1.256'),
    warning: ['INVALID_IP', SLICE, 'endpoints[0].addresses[0]'],
    expect: (s) => expect(s.ports[0]!.cluster).toEqual(['10.0.1.2:8080']),
  },
  {
    name: 'an endpoint of the wrong family in a slice drops that endpoint',
    mutate: (_, slices) => (slices[0]!.endpoints[0]!.address = 'fd00::1'),
    warning: ['FAMILY_MISMATCH', SLICE, 'endpoints[0].addresses[0]'],
    expect: (s) => expect(s.ports[0]!.cluster).toEqual(['10.0.1.2:8080']),
  },
  {
    name: 'an IPv4-mapped IPv6 endpoint address is IPv4, so it does not belong in an IPv6 slice',
    mutate: (svc, slices) => {
      svc.clusterIPs = ['fd00:10:96::a'];
      svc.ipFamilies = ['IPv6'];
      slices[0]!.addressType = 'IPv6';
      slices[0]!.endpoints = [ep('::ffff:10.0.1.5'), ep('fd00:1::2')];
    },
    warning: ['FAMILY_MISMATCH', SLICE, 'endpoints[0].addresses[0]'],
    expect: (s) => expect(s.ports[0]!.cluster).toEqual(['[fd00:1::2]:8080']),
  },
  {
    name: 'a broadcast endpoint address is dropped',
    mutate: (_, slices) => (slices[0]!.endpoints[0]!.address = '255.255.255.255'),
    warning: ['SPECIAL_IP', SLICE, 'endpoints[0].addresses[0]'],
    expect: (s) => expect(s.ports[0]!.cluster).toEqual(['10.0.1.2:8080']),
  },
  {
    name: 'an endpoint without addresses is dropped',
    mutate: (_, slices) => (slices[0]!.endpoints[0]!.address = ''),
    warning: ['MISSING_ADDRESS', SLICE, 'endpoints[0].addresses'],
    expect: (s) => expect(s.ports[0]!.cluster).toEqual(['10.0.1.2:8080']),
  },
  {
    name: 'an invalid slice port (0) makes that slice useless for that port only',
    mutate: (_, slices) => (slices[0]!.ports[0]!.port = 0),
    warning: ['INVALID_PORT', SLICE, 'ports[0].port'],
    expect: (s) => expect(s.ports.map((p) => p.cluster)).toEqual(['reject', ['10.0.1.1:8443', '10.0.1.2:8443']]),
  },
  {
    name: 'an invalid slice port (-1) is dropped',
    mutate: (_, slices) => (slices[0]!.ports[1]!.port = -1),
    warning: ['INVALID_PORT', SLICE, 'ports[1].port'],
    expect: (s) => expect(s.ports.map((p) => p.cluster)).toEqual([['10.0.1.1:8080', '10.0.1.2:8080'], 'reject']),
  },
  {
    name: 'a slice filed under another service is ignored',
    mutate: (_, slices) => slices.push(slice('other-1', [ep('10.0.7.7')], { serviceName: 'other' })),
    warning: ['FOREIGN_SLICE', 'EndpointSlice default/other-1', 'metadata.labels[kubernetes.io/service-name]'],
    expect: (s) => expect(s.ports[0]!.cluster).toEqual(['10.0.1.1:8080', '10.0.1.2:8080']),
  },
];

describe('validation: one bad field never drops the rest of the service', () => {
  const baseline = summary(good(), goodSlices());

  it('the good service has no warnings', () => {
    expect(baseline.warnings).toEqual([]);
    expect(baseline.ports).toHaveLength(2);
  });

  it.each(cases)('$name', ({ mutate, warning, expect: check }) => {
    const svc = structuredClone(good());
    const slices = structuredClone(goodSlices());
    mutate(svc, slices);
    const s = summary(svc, slices);
    expect(s.warnings).toEqual([warning]);
    check(s);
  });

  it('a warning carries the value as received and a message', () => {
    const svc = good();
    svc.externalIPs = [' 192.0.2.300'];
    const { warnings } = buildServicePorts(svc, goodSlices(), node(), config());
    expect(warnings).toEqual([
      {
        code: 'INVALID_IP',
        object: SVC,
        field: 'spec.externalIPs[0]',
        value: ' 192.0.2.300',
        message: expect.stringContaining('not an IP address'),
      },
    ]);
  });

  it('a bad slice entry is reported once even though every port reads the slice', () => {
    const slices = goodSlices();
    slices[0]!.endpoints[0]!.address = 'nope';
    const { warnings } = buildServicePorts(good(), slices, node(), config());
    expect(warnings).toHaveLength(1);
  });
});

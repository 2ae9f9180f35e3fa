// Which conntrack entries a cleanup deletes, as targets (kube-proxy 1.32's
// rule, pkg/proxy/conntrack/cleanup.go, extended to SCTP): table tests over
// ServicePorts as the model hands them over.

import { describe, expect, it } from 'vitest';
import type { ServicePort } from '../../src/model/service-port.ts';
import { conntrackTargets, targetCount, type ConntrackTargets } from '../../src/reconciler/conntrack-targets.ts';
import { ep, sp } from './fixtures.ts';

interface Case {
  name: string;
  ports: ServicePort[];
  want: ConntrackTargets;
}

const none: ConntrackTargets = { IPv4: [], IPv6: [] };

const cases: Case[] = [
  { name: 'TCP is never a target', ports: [sp({ protocol: 'TCP', port: 80, nodePort: 30080, endpoints: [ep('10.244.1.2')] })], want: none },
  { name: 'UDP without endpoints: nothing to clean', ports: [sp({ protocol: 'UDP', port: 53, endpoints: [] })], want: none },
  {
    name: 'UDP whose only endpoint is not serving: nothing to clean',
    ports: [sp({ protocol: 'UDP', port: 53, endpoints: [ep('10.244.1.2', 53, { ready: false, serving: false, terminating: true })] })],
    want: none,
  },
  {
    name: 'UDP ClusterIP: its serving endpoints are kept, not-serving ones are not',
    ports: [
      sp({
        protocol: 'UDP',
        port: 53,
        endpoints: [ep('10.244.1.3', 53), ep('10.244.1.2', 53), ep('10.244.1.9', 53, { ready: false, serving: false, terminating: true })],
      }),
    ],
    want: { IPv4: [{ protocol: 'UDP', address: '10.96.0.10', port: 53, keep: ['10.244.1.2', '10.244.1.3'] }], IPv6: [] },
  },
  {
    name: 'a serving terminating endpoint is kept (its flows drain)',
    ports: [sp({ protocol: 'UDP', port: 53, endpoints: [ep('10.244.1.2', 53, { ready: false, serving: true, terminating: true })] })],
    want: { IPv4: [{ protocol: 'UDP', address: '10.96.0.10', port: 53, keep: ['10.244.1.2'] }], IPv6: [] },
  },
  {
    name: 'every frontend: ClusterIP, external IPs, LB IPs (Service port) and the NodePort (any address)',
    ports: [
      sp({
        protocol: 'UDP',
        port: 53,
        nodePort: 30053,
        externalIPs: ['192.0.2.7'],
        loadBalancerIPs: ['203.0.113.9'],
        endpoints: [ep('10.244.1.2', 5353)],
      }),
    ],
    want: {
      IPv4: [
        { protocol: 'UDP', address: '10.96.0.10', port: 53, keep: ['10.244.1.2'] },
        { protocol: 'UDP', address: '192.0.2.7', port: 53, keep: ['10.244.1.2'] },
        { protocol: 'UDP', address: '203.0.113.9', port: 53, keep: ['10.244.1.2'] },
        { protocol: 'UDP', port: 30053, keep: ['10.244.1.2'] },
      ],
      IPv6: [],
    },
  },
  {
    name: 'a headless-like port without ClusterIP still gets its NodePort',
    ports: [sp({ protocol: 'SCTP', port: 9, clusterIP: undefined, nodePort: 30009, endpoints: [ep('10.244.1.2', 9)] })],
    want: { IPv4: [{ protocol: 'SCTP', port: 30009, keep: ['10.244.1.2'] }], IPv6: [] },
  },
  {
    name: 'IPv6 ports go to the IPv6 list; addresses of the other family are ignored',
    ports: [
      sp({ protocol: 'UDP', family: 'IPv6', port: 53, externalIPs: ['192.0.2.7', '2001:db8::7'], endpoints: [ep('fd00:244::2', 53)] }),
    ],
    want: {
      IPv4: [],
      IPv6: [
        { protocol: 'UDP', address: 'fd00:96::10', port: 53, keep: ['fd00:244::2'] },
        { protocol: 'UDP', address: '2001:db8::7', port: 53, keep: ['fd00:244::2'] },
      ],
    },
  },
  {
    name: "two ports on one frontend share a target that keeps both ports' endpoints",
    ports: [
      sp({ serviceName: 'a', protocol: 'UDP', port: 53, externalIPs: ['192.0.2.7'], endpoints: [ep('10.244.1.2', 53)] }),
      sp({
        serviceName: 'b',
        protocol: 'UDP',
        port: 53,
        clusterIP: '10.96.0.11',
        externalIPs: ['192.0.2.7'],
        endpoints: [ep('10.244.1.5', 53), ep('10.244.1.2', 53)],
      }),
    ],
    want: {
      IPv4: [
        { protocol: 'UDP', address: '10.96.0.10', port: 53, keep: ['10.244.1.2'] },
        { protocol: 'UDP', address: '192.0.2.7', port: 53, keep: ['10.244.1.2', '10.244.1.5'] },
        { protocol: 'UDP', address: '10.96.0.11', port: 53, keep: ['10.244.1.2', '10.244.1.5'] },
      ],
      IPv6: [],
    },
  },
  {
    name: 'UDP and SCTP on the same address and port are separate targets',
    ports: [
      sp({ portName: 'u', protocol: 'UDP', port: 9, endpoints: [ep('10.244.1.2', 9)] }),
      sp({ portName: 's', protocol: 'SCTP', port: 9, endpoints: [ep('10.244.1.3', 9)] }),
      sp({ portName: 't', protocol: 'TCP', port: 9, endpoints: [ep('10.244.1.4', 9)] }),
    ],
    want: {
      IPv4: [
        { protocol: 'UDP', address: '10.96.0.10', port: 9, keep: ['10.244.1.2'] },
        { protocol: 'SCTP', address: '10.96.0.10', port: 9, keep: ['10.244.1.3'] },
      ],
      IPv6: [],
    },
  },
];

describe('conntrackTargets', () => {
  for (const c of cases) {
    it(c.name, () => {
      const got = conntrackTargets(c.ports);
      expect(got).toEqual(c.want);
      expect(targetCount(got)).toBe(c.want.IPv4.length + c.want.IPv6.length);
    });
  }
});

// The rulesets whose `nft` text is kept under test/reconciler/golden/ and was
// reviewed line by line. Together they exercise every ServicePort feature
// (checked by golden.test.ts). Each is rendered in both endpoint shapes:
// 'chains' (kube-proxy's shape) as `NAME.nft`, 'map' (the agent's default) as `NAME-map.nft`.

import type { ServicePort } from '../../src/model/service-port.ts';
import type { RulesetConfig } from '../../src/reconciler/config.ts';
import { config, ep, local, sel, sp, V4, V6 } from './fixtures.ts';

export interface Golden {
  name: string;
  config: RulesetConfig;
  ports: ServicePort[];
}

const CHAINS: Golden[] = [
  {
    name: 'basic-ipv4',
    config: config({ families: { IPv4: V4 } }),
    ports: [
      // ClusterIP + NodePort, three endpoints: the numgen cascade.
      sp({ nodePort: 30080, endpoints: [ep('10.244.1.5'), ep('10.244.2.6'), ep('10.244.3.7')] }),
      // No endpoints anywhere: reject on the ClusterIP and the NodePort.
      sp({ serviceName: 'dns', protocol: 'UDP', portName: '', port: 53, clusterIP: '10.96.0.2', nodePort: 30053, endpoints: [] }),
    ],
  },
  {
    name: 'features-ipv4',
    config: config({ families: { IPv4: V4 }, offloadPacketThreshold: 20, flowtableSupported: true, flowtableDevices: ['eth0', 'eth1'] }),
    ports: [
      // LoadBalancer, eTP Local with a local endpoint, affinity, source ranges holding the node's IP.
      sp({
        serviceName: 'shop',
        portName: 'https',
        port: 443,
        nodePort: 30443,
        externalIPs: ['203.0.113.7'],
        loadBalancerIPs: ['198.51.100.9'],
        loadBalancerSourceRanges: ['192.0.2.0/24', '203.0.113.0/25'],
        sessionAffinityTimeout: 10800,
        externalPolicyLocal: true,
        healthCheckNodePort: 32000,
        cluster: sel(ep('10.244.1.5', 8443), local('10.244.2.6', 8443)),
        external: sel(local('10.244.2.6', 8443)),
      }),
      // eTP Local and no endpoint here: external traffic is dropped, pod/host traffic short-circuited.
      sp({
        serviceName: 'far',
        port: 8080,
        clusterIP: '10.96.0.11',
        nodePort: 30808,
        externalIPs: ['203.0.113.8'],
        externalPolicyLocal: true,
        cluster: sel(ep('10.244.1.9')),
        external: { kind: 'drop' },
      }),
      // iTP Local and no endpoint here: ClusterIP traffic dropped, NodePort traffic served.
      sp({
        serviceName: 'node-cache',
        protocol: 'UDP',
        portName: 'dns',
        port: 53,
        clusterIP: '10.96.0.53',
        nodePort: 30054,
        internalPolicyLocal: true,
        cluster: { kind: 'drop' },
        external: sel(ep('10.244.1.3', 53)),
      }),
      // SCTP, only a serving-terminating endpoint left (the model's fallback), reached by an externalIP only.
      sp({
        serviceName: 'signal',
        protocol: 'SCTP',
        portName: 'sig',
        port: 3868,
        clusterIP: undefined,
        externalIPs: ['203.0.113.9'],
        endpoints: [ep('10.244.4.4', 3868, { ready: false, serving: true, terminating: true })],
      }),
    ],
  },
  {
    name: 'masquerade-all-ipv6',
    config: config({ families: { IPv6: V6 }, masqueradeAll: true }),
    ports: [
      // IPv6, NodePort on every local address (fib), affinity, iTP Local with a local endpoint.
      sp({
        family: 'IPv6',
        namespace: 'kube-system',
        serviceName: 'api',
        port: 443,
        nodePort: 31443,
        sessionAffinityTimeout: 60,
        internalPolicyLocal: true,
        cluster: sel(local('fd00:244::5', 6443)),
        external: sel(ep('fd00:244:0:1::7', 6443), local('fd00:244::5', 6443)),
      }),
    ],
  },
];

// IPv6 without affinity: DNAT through the endpoints map (address . port over five registers).
const IPV6_NO_AFFINITY = sp({
  family: 'IPv6',
  namespace: 'kube-system',
  serviceName: 'dns',
  protocol: 'UDP',
  portName: 'dns',
  port: 53,
  clusterIP: 'fd00:96::a',
  endpoints: [ep('fd00:244::5', 53), ep('fd00:244:0:1::7', 53)],
});

/** The same ServicePorts with endpoint shape 'map' (IPv6 without affinity added: the map's five-register data). */
const MAP: Golden[] = CHAINS.map((g) => ({
  name: `${g.name}-map`,
  config: { ...g.config, endpointShape: 'map' },
  ports: g.name === 'masquerade-all-ipv6' ? [...g.ports, IPV6_NO_AFFINITY] : g.ports,
}));

export const GOLDENS: Golden[] = [...CHAINS, ...MAP];

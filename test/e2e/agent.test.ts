// Real packets through rules the real agent programs: the agent process watches
// the fake API server and programs the node namespace; clients in other
// namespaces connect and the backends answer with their own name and the source
// address they saw.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeApiServer } from '../fake-apiserver/index.ts';
import { eventually, serviceObject, sliceObject, type AgentProcess } from './agent-process.ts';
import { startAgentCluster, type AgentCluster } from './agent-cluster.ts';
import type { Cluster } from './topology.ts';

const PROXY_NAME = 'service.kubernetes.io/service-proxy-name';

describe('the agent with real packets', { timeout: 60_000 }, () => {
  let env: AgentCluster;
  let cluster: Cluster;
  let api: FakeApiServer;
  let agent: AgentProcess;
  const b1 = '10.244.0.11';
  const b2 = '10.244.0.12';
  const b3 = '10.244.0.13';

  const fromClient = (address: string, port: number, count = 1, proto: 'tcp' | 'udp' = 'tcp', timeoutMs = 1000) =>
    cluster.probe(cluster.client, proto, address, port, count, timeoutMs);
  const fromPod = (address: string, port: number, count = 1, timeoutMs = 1000) =>
    cluster.probe(cluster.pods.get('c1')!.ns, 'tcp', address, port, count, timeoutMs);
  const names = (outcomes: string[]) => [...new Set(outcomes.map((o) => o.split(' ')[0]))].sort();

  beforeAll(async () => {
    // KEP-2030 is an alpha gate, off unless turned on.
    env = await startAgentCluster(['b1', 'b2', 'b3', 'c1'], ['--feature-gates=TopologyAwareProxying=true']);
    ({ cluster, api, agent } = env);
  }, 60_000);

  afterAll(() => env?.destroy());

  it('spreads ClusterIP traffic over all endpoints, TCP and UDP', async () => {
    api.create('services', serviceObject({ name: 'spread', clusterIP: '10.96.0.10' }));
    api.create('endpointslices', sliceObject('spread', 'spread-1', [{ ip: b1 }, { ip: b2 }, { ip: b3 }]));
    api.create('services', serviceObject({ name: 'spread-udp', clusterIP: '10.96.0.11', protocol: 'UDP' }));
    api.create('endpointslices', sliceObject('spread-udp', 'spread-udp-1', [{ ip: b1 }, { ip: b2 }], { protocol: 'UDP' }));
    const tcp = await eventually(
      () => fromClient('10.96.0.10', 80, 40),
      (o) => names(o).length === 3,
      20_000,
      'all three backends',
    );
    expect(names(tcp)).toEqual(['b1', 'b2', 'b3']);
    const udp = await eventually(
      () => fromClient('10.96.0.11', 80, 30, 'udp'),
      (o) => names(o).length === 2,
      20_000,
      'both UDP backends',
    );
    expect(names(udp)).toEqual(['b1', 'b2']);
  });

  it('serves NodePorts on the node address', async () => {
    api.create('services', serviceObject({ name: 'np', clusterIP: '10.96.0.20', type: 'NodePort', nodePort: 30080 }));
    api.create('endpointslices', sliceObject('np', 'np-1', [{ ip: b2 }]));
    const out = await eventually(
      () => fromClient(cluster.nodeIPv4, 30080),
      (o) => o[0]!.startsWith('b2'),
      15_000,
      'NodePort answer',
    );
    // External traffic with externalTrafficPolicy Cluster is masqueraded to the node.
    expect(out).toEqual(['b2 10.244.0.1']);
  });

  it('serves externalIPs', async () => {
    api.create('services', serviceObject({ name: 'ext', clusterIP: '10.96.0.30', externalIPs: ['198.51.100.50'] }));
    api.create('endpointslices', sliceObject('ext', 'ext-1', [{ ip: b3 }]));
    const out = await eventually(
      () => fromClient('198.51.100.50', 80),
      (o) => o[0]!.startsWith('b3'),
      15_000,
      'externalIP answer',
    );
    expect(out[0]).toMatch(/^b3 /);
  });

  it('short-circuits a VIP load-balancer IP to the backends from inside, but not a Proxy one (KEP-1860)', async () => {
    api.create(
      'services',
      serviceObject({
        name: 'lb-vip',
        clusterIP: '10.96.0.40',
        type: 'LoadBalancer',
        nodePort: 30040,
        ingress: [{ ip: '203.0.113.10', ipMode: 'VIP' }],
      }),
    );
    api.create('endpointslices', sliceObject('lb-vip', 'lb-vip-1', [{ ip: b1 }]));
    api.create(
      'services',
      serviceObject({
        name: 'lb-proxy',
        clusterIP: '10.96.0.41',
        type: 'LoadBalancer',
        nodePort: 30041,
        ingress: [{ ip: '203.0.113.11', ipMode: 'Proxy' }],
      }),
    );
    api.create('endpointslices', sliceObject('lb-proxy', 'lb-proxy-1', [{ ip: b1 }]));
    await eventually(
      () => fromPod('10.96.0.41', 80),
      (o) => o[0]!.startsWith('b1'),
      15_000,
      'the Proxy service to be programmed',
    );
    const vip = await eventually(
      () => fromPod('203.0.113.10', 80),
      (o) => o[0]!.startsWith('b1'),
      15_000,
      'VIP short-circuit',
    );
    expect(vip[0]).toMatch(/^b1 /);
    // ipMode Proxy: no shortcut, the packet goes to the load balancer itself.
    expect(await fromPod('203.0.113.11', 80)).toEqual(['lb 10.244.0.14']);
  });

  it('refuses connections to a service without endpoints', async () => {
    api.create('services', serviceObject({ name: 'empty', clusterIP: '10.96.0.50' }));
    api.create('endpointslices', sliceObject('empty', 'empty-1', []));
    const out = await eventually(
      () => fromClient('10.96.0.50', 80),
      (o) => o[0] === 'refused',
      15_000,
      'ICMP port-unreachable',
    );
    expect(out).toEqual(['refused']);
  });

  it('drops traffic of an internalTrafficPolicy Local service without a local endpoint', async () => {
    api.create('services', serviceObject({ name: 'itp', clusterIP: '10.96.0.60', internalTrafficPolicy: 'Local' }));
    api.create('endpointslices', sliceObject('itp', 'itp-1', [{ ip: b1, node: 'node-b' }]));
    // Control: the same backend through a Cluster-policy service answers, so the drop is the policy's doing.
    api.create('services', serviceObject({ name: 'itp-control', clusterIP: '10.96.0.61' }));
    api.create('endpointslices', sliceObject('itp-control', 'itp-control-1', [{ ip: b1, node: 'node-b' }]));
    await eventually(
      () => fromPod('10.96.0.61', 80),
      (o) => o[0]!.startsWith('b1'),
      15_000,
      'control service',
    );
    expect(await fromPod('10.96.0.60', 80, 2, 700)).toEqual(['timeout', 'timeout']);
  });

  it('keeps the client source address with externalTrafficPolicy Local and uses only local endpoints', async () => {
    api.create(
      'services',
      serviceObject({
        name: 'etp',
        clusterIP: '10.96.0.70',
        type: 'NodePort',
        nodePort: 30070,
        externalTrafficPolicy: 'Local',
        healthCheckNodePort: 32070,
      }),
    );
    api.create('endpointslices', sliceObject('etp', 'etp-1', [{ ip: b1 }, { ip: b2, node: 'node-b' }]));
    const out = await eventually(
      () => fromClient(cluster.nodeIPv4, 30070, 12),
      (o) => o.every((x) => x.startsWith('b')),
      15_000,
      'eTP Local answers',
    );
    expect([...new Set(out)]).toEqual([`b1 ${cluster.clientIPv4}`]);
  });

  it('sticks a client to one endpoint with session affinity', async () => {
    api.create('services', serviceObject({ name: 'sticky', clusterIP: '10.96.0.80', sessionAffinity: true }));
    api.create('endpointslices', sliceObject('sticky', 'sticky-1', [{ ip: b1 }, { ip: b2 }, { ip: b3 }]));
    const out = await eventually(
      () => fromClient('10.96.0.80', 80, 15),
      (o) => o.every((x) => x.startsWith('b')),
      15_000,
      'sticky answers',
    );
    expect(names(out)).toHaveLength(1);
  });

  it('falls back to serving terminating endpoints when none is ready', async () => {
    api.create('services', serviceObject({ name: 'term', clusterIP: '10.96.0.90' }));
    api.create(
      'endpointslices',
      sliceObject('term', 'term-1', [
        { ip: b3, ready: false, serving: true, terminating: true },
        { ip: b2, ready: false, serving: false, terminating: true },
      ]),
    );
    const out = await eventually(
      () => fromClient('10.96.0.90', 80, 8),
      (o) => o.every((x) => x.startsWith('b')),
      15_000,
      'terminating fallback',
    );
    expect(names(out)).toEqual(['b3']);
  });

  it('stops serving a service that gains the service-proxy-name label and serves it again when it is removed (KEP-31)', async () => {
    api.create('services', serviceObject({ name: 'named', clusterIP: '10.96.0.100' }));
    api.create('endpointslices', sliceObject('named', 'named-1', [{ ip: b1 }]));
    await eventually(
      () => fromClient('10.96.0.100', 80),
      (o) => o[0]!.startsWith('b1'),
      15_000,
      'service up',
    );
    api.patchLabels('services', 'e2e/named', { [PROXY_NAME]: 'someone-else' });
    api.patchLabels('endpointslices', 'e2e/named-1', { [PROXY_NAME]: 'someone-else' });
    const gone = await eventually(
      () => fromClient('10.96.0.100', 80, 1, 'tcp', 500),
      (o) => !o[0]!.startsWith('b'),
      15_000,
      'service gone',
    );
    expect(gone[0]).not.toMatch(/^b/);
    api.patchLabels('services', 'e2e/named', { [PROXY_NAME]: null });
    api.patchLabels('endpointslices', 'e2e/named-1', { [PROXY_NAME]: null });
    const back = await eventually(
      () => fromClient('10.96.0.100', 80),
      (o) => o[0]!.startsWith('b1'),
      15_000,
      'service back',
    );
    expect(back[0]).toMatch(/^b1 /);
  });

  it('routes only to slices for our zone, and falls back to all when none is for us (KEP-2030)', async () => {
    api.create('services', serviceObject({ name: 'zoned', clusterIP: '10.96.0.110' }));
    api.create(
      'endpointslices',
      sliceObject('zoned', 'zoned-a', [{ ip: b1 }], { labels: { 'endpointslice.kubernetes.io/for-zone': 'zone-a' } }),
    );
    api.create(
      'endpointslices',
      sliceObject(
        'zoned',
        'zoned-b',
        [
          { ip: b2, node: 'node-b' },
          { ip: b3, node: 'node-b' },
        ],
        { labels: { 'endpointslice.kubernetes.io/for-zone': 'zone-b' } },
      ),
    );
    const inZone = await eventually(
      () => fromClient('10.96.0.110', 80, 20),
      (o) => o.every((x) => x.startsWith('b')),
      15_000,
      'zoned answers',
    );
    expect(names(inZone)).toEqual(['b1']);
    api.delete('endpointslices', 'e2e/zoned-a');
    const fallback = await eventually(
      () => fromClient('10.96.0.110', 80, 30),
      (o) => names(o).join() === 'b2,b3',
      15_000,
      'fallback to other zones',
    );
    expect(names(fallback)).toEqual(['b2', 'b3']);
  });

  it('serves an IPv6 ClusterIP', async () => {
    api.create('services', serviceObject({ name: 'v6', clusterIP: 'fd00:10:96::10' }));
    api.create('endpointslices', sliceObject('v6', 'v6-1', [{ ip: 'fd00:10:244::b' }, { ip: 'fd00:10:244::c' }], { family: 'IPv6' }));
    const out = await eventually(
      () => fromClient('fd00:10:96::10', 80, 20),
      (o) => names(o).length === 2,
      15_000,
      'both IPv6 backends',
    );
    expect(names(out)).toEqual(['b1', 'b2']);
  });

  it('kept syncing without a failed commit throughout', () => {
    const entries = agent.entries();
    const syncs = entries.filter((e) => e.msg === 'synced nftables rules');
    expect(syncs.length).toBeGreaterThan(5);
    expect(entries.filter((e) => String(e.msg).includes('nftables sync failed'))).toEqual([]);
  });
});

// Hairpin traffic (a pod reaching itself through a service) and endpoint moves,
// with the agent in each endpoint shape: 'chains' masquerades hairpin traffic
// in the per-endpoint chains, 'map' through the hairpin-endpoints set.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENDPOINT_SHAPES } from '../../src/reconciler/config.ts';
import type { FakeApiServer } from '../fake-apiserver/index.ts';
import { eventually, serviceObject, sliceObject, type AgentProcess } from './agent-process.ts';
import { startAgentCluster, type AgentCluster } from './agent-cluster.ts';
import type { Cluster } from './topology.ts';

describe.each(ENDPOINT_SHAPES)('hairpin and endpoint moves, --endpoint-shape=%s', { timeout: 60_000 }, (shape) => {
  let env: AgentCluster;
  let cluster: Cluster;
  let api: FakeApiServer;
  let agent: AgentProcess;
  const b1 = '10.244.0.11';
  const b2 = '10.244.0.12';
  const b3 = '10.244.0.13';

  const fromClient = (address: string, port: number, count = 1) => cluster.probe(cluster.client, 'tcp', address, port, count, 1000);
  const names = (outcomes: string[]) => [...new Set(outcomes.map((o) => o.split(' ')[0]))].sort();
  // A pod reaching itself through a service must see the node as the source:
  // with its own address it would answer itself directly, the reply would skip
  // the un-DNAT, and the connection would never complete.
  const fromPodNs = (pod: string, address: string, port: number, count = 1) =>
    cluster.probe(cluster.pods.get(pod)!.ns, 'tcp', address, port, count, 1000);
  const table = () => cluster.node.exec('nft', ['list', 'table', 'ip', 'kube-nft-proxy']);

  beforeAll(async () => {
    env = await startAgentCluster(['b1', 'b2', 'b3', 'c1'], [`--endpoint-shape=${shape}`]);
    ({ cluster, api, agent } = env);
  }, 60_000);

  afterAll(() => env?.destroy());

  it('masquerades hairpin traffic: a pod reaching itself through its ClusterIP sees the node bridge address', async () => {
    api.create('services', serviceObject({ name: 'hairpin', clusterIP: '10.96.0.120' }));
    api.create('endpointslices', sliceObject('hairpin', 'hairpin-1', [{ ip: b1 }]));
    const out = await eventually(
      () => fromPodNs('b1', '10.96.0.120', 80, 3),
      (o) => o.every((x) => x.startsWith('b1')),
      15_000,
      'hairpin answers',
    );
    expect([...new Set(out)]).toEqual(['b1 10.244.0.1']);
    // Another pod through the same service keeps its own address (the ClusterIP is reached from the pod CIDR).
    expect(await fromPodNs('c1', '10.96.0.120', 80)).toEqual(['b1 10.244.0.14']);
  });

  it(`programs the ${shape} shape for a service without affinity`, () => {
    const text = table();
    if (shape === 'map') {
      // This nft (1.0.6) lists the statement as `dnat ip to ... map`, newer ones as `dnat ip addr . port to`.
      // The port's slot range in one of the shared endpoint maps (a private one only if its range collided).
      expect(text).toMatch(/dnat ip (addr \. port )?to numgen random mod 1 offset \d+ map @service-endpoints-\d+/);
      expect(text).toMatch(new RegExp(`\\d+ : ${b1.replaceAll('.', '\\.')} \\. 8080`));
      expect(text).toContain(`${b1} . ${b1}`);
      expect(text).not.toMatch(/chain endpoint-\S+-e2e\/hairpin\//);
    } else {
      expect(text).toMatch(/chain endpoint-\S+-e2e\/hairpin\/tcp\/p__10\.244\.0\.11\/8080/);
      expect(text).toContain(`ip saddr ${b1} jump mark-for-masquerade`);
      expect(text).not.toContain('hairpin-endpoints');
      expect(text).not.toContain('map @endpoints-');
      expect(text).not.toContain('map @service-endpoints-');
    }
  });

  it('masquerades hairpin traffic of a service with session affinity too', async () => {
    api.create('services', serviceObject({ name: 'hairpin-sticky', clusterIP: '10.96.0.121', sessionAffinity: true }));
    api.create('endpointslices', sliceObject('hairpin-sticky', 'hairpin-sticky-1', [{ ip: b2 }]));
    const out = await eventually(
      () => fromPodNs('b2', '10.96.0.121', 80, 3),
      (o) => o.every((x) => x.startsWith('b2')),
      15_000,
      'hairpin answers',
    );
    expect([...new Set(out)]).toEqual(['b2 10.244.0.1']);
  });

  it('masquerades IPv6 hairpin traffic', async () => {
    api.create('services', serviceObject({ name: 'hairpin-v6', clusterIP: 'fd00:10:96::20' }));
    api.create('endpointslices', sliceObject('hairpin-v6', 'hairpin-v6-1', [{ ip: 'fd00:10:244::b' }], { family: 'IPv6' }));
    const out = await eventually(
      () => fromPodNs('b1', 'fd00:10:96::20', 80, 3),
      (o) => o.every((x) => x.startsWith('b1')),
      15_000,
      'IPv6 hairpin answers',
    );
    expect([...new Set(out)]).toEqual(['b1 fd00:10:244::1']);
  });

  it('follows an endpoint replaced by another (the same count)', async () => {
    api.create('services', serviceObject({ name: 'moving', clusterIP: '10.96.0.130' }));
    api.create('endpointslices', sliceObject('moving', 'moving-1', [{ ip: b1 }, { ip: b2 }]));
    await eventually(
      () => fromClient('10.96.0.130', 80, 20),
      (o) => names(o).join() === 'b1,b2',
      15_000,
      'b1 and b2',
    );
    api.update('endpointslices', sliceObject('moving', 'moving-1', [{ ip: b1 }, { ip: b3 }]));
    const moved = await eventually(
      () => fromClient('10.96.0.130', 80, 20),
      (o) => names(o).join() === 'b1,b3',
      15_000,
      'b1 and b3',
    );
    expect(names(moved)).toEqual(['b1', 'b3']);
  });

  it('kept syncing without a failed commit throughout', () => {
    const entries = agent.entries();
    expect(entries.filter((e) => e.msg === 'synced nftables rules').length).toBeGreaterThan(3);
    expect(entries.filter((e) => String(e.msg).includes('nftables sync failed'))).toEqual([]);
  });
});

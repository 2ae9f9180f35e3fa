// The e2e harness itself: before any proxy rule exists, plain routing between the
// namespaces works, so that what later tests see is the proxy's doing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCluster, type Cluster } from './topology.ts';

describe('e2e topology without any proxy rules', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await createCluster(['b1', 'b2']);
  });
  afterAll(async () => {
    await cluster?.destroy();
  });

  it('routes the client to a pod directly and the pod sees the client address', async () => {
    expect(await cluster.probe(cluster.client, 'tcp', '10.244.0.11', 8080)).toEqual(['b1 192.0.2.10']);
    expect(await cluster.probe(cluster.client, 'udp', '10.244.0.12', 8080)).toEqual(['b2 192.0.2.10']);
    expect(await cluster.probe(cluster.client, 'tcp', 'fd00:10:244::c', 8080)).toEqual(['b2 2001:db8:1::10']);
  });

  it('routes load-balancer addresses to the lb namespace', async () => {
    expect(await cluster.probe(cluster.pods.get('b1')!.ns, 'tcp', '203.0.113.10', 80)).toEqual(['lb 10.244.0.11']);
  });

  it('has no service rules yet: a ClusterIP goes nowhere', async () => {
    const [outcome] = await cluster.probe(cluster.client, 'tcp', '10.96.0.10', 80, 1, 300);
    expect(outcome).not.toMatch(/^b\d/);
  });
});

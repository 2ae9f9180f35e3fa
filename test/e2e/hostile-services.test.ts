// No Service costs more than itself: Services that a real API server accepts
// at their limits (63-character namespace, name and port name; 1,000
// loadBalancerSourceRanges), and manifests it would refuse (a port name with
// NUL, or of 200 multibyte characters), sit next to plain ones. The real agent
// programs a node namespace and real packets show the plain Services work,
// the 1,000-range one lets its allowed source in and drops another, and its
// NodePort is not filtered.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeApiServer, K8sObject } from '../fake-apiserver/index.ts';
import { eventually, serviceObject, sliceObject, type AgentProcess } from './agent-process.ts';
import { startAgentCluster, type AgentCluster } from './agent-cluster.ts';
import type { Cluster } from './topology.ts';

const LONG_NS = `n${'s'.repeat(61)}0`;
const LONG_NAME = `s${'v'.repeat(61)}c`;
const LONG_PORT = `p${'o'.repeat(61)}t`;

/** A Service in namespace `ns` with one port named `portName` and no endpoints (its elements carry a comment naming it). */
function namedService(ns: string, name: string, portName: string, clusterIP: string, nodePort: number): K8sObject {
  const o = serviceObject({ name, clusterIP, type: 'NodePort', nodePort }) as K8sObject & {
    metadata: { namespace: string };
    spec: { ports: Array<Record<string, unknown>> };
  };
  o.metadata.namespace = ns;
  o.spec.ports[0]!.name = portName;
  return o;
}

/** 999 adjacent /28s of 172.16.0.0/12 and the one client address allowed: 1,000 ranges. */
const RANGES = [...Array.from({ length: 999 }, (_, i) => `172.16.${i >> 4}.${(i & 15) << 4}/28`), '192.0.2.10/32'];
const ALLOWED = '192.0.2.10';
const BLOCKED = '192.0.2.20';

describe('hostile Services next to plain ones, with real packets', { timeout: 90_000 }, () => {
  let env: AgentCluster;
  let cluster: Cluster;
  let api: FakeApiServer;
  let agent: AgentProcess;
  const probe = (ip: string, port = 80, source?: string) => cluster.probe(cluster.client, 'tcp', ip, port, 1, 800, source);

  beforeAll(async () => {
    env = await startAgentCluster(['b1', 'b2'], [], (api) => {
      // In the agent's first list, so in its first (full) sync together with the plain one.
      api.create('services', namedService(LONG_NS, LONG_NAME, LONG_PORT, '10.96.0.30', 30030));
      api.create('services', serviceObject({ name: 'plain', clusterIP: '10.96.0.10' }));
      api.create('endpointslices', sliceObject('plain', 'plain-1', [{ ip: '10.244.0.11' }]));
    });
    ({ cluster, api, agent } = env);
    cluster.client.exec('ip', ['addr', 'add', `${BLOCKED}/24`, 'dev', 'eth0']);
  }, 90_000);

  afterAll(() => env?.destroy());

  it('a Service whose namespace, name and port name are 63 characters each does not hold back the plain one', async () => {
    await eventually(
      () => probe('10.96.0.10'),
      (o) => o[0]!.startsWith('b1'),
      20_000,
      'the plain service',
    );
    // Its own rules are in too: no endpoints, so its ClusterIP port is rejected rather than left unrouted.
    expect(await probe('10.96.0.30')).toEqual(['refused']);
  });

  it('port names the API server would refuse leave their Service out, logged, and nothing else', async () => {
    api.create('services', namedService('e2e', 'nul-port', 'a\u0000b', '10.96.0.31', 30031));
    api.create('services', namedService('e2e', 'wide-port', 'é'.repeat(200), '10.96.0.32', 30032));
    api.create('services', serviceObject({ name: 'after', clusterIP: '10.96.0.11' }));
    api.create('endpointslices', sliceObject('after', 'after-1', [{ ip: '10.244.0.12' }]));
    await eventually(
      () => probe('10.96.0.11'),
      (o) => o[0]!.startsWith('b2'),
      15_000,
      'the service created after the bad ones',
    );
    const warned = (name: string) =>
      agent.entries().some((l) => JSON.stringify(l).includes(`e2e/${name}`) && /DNS label|longer than 63/.test(String(l.reason)));
    expect(warned('nul-port') && warned('wide-port')).toBe(true);
  });

  it('1,000 loadBalancerSourceRanges: the allowed source gets in, another is dropped, the NodePort is not filtered', async () => {
    const lb = serviceObject({
      name: 'guarded',
      clusterIP: '10.96.0.40',
      type: 'LoadBalancer',
      nodePort: 30040,
      ingress: [{ ip: '203.0.113.40' }],
    }) as K8sObject & {
      spec: Record<string, unknown>;
    };
    lb.spec.loadBalancerSourceRanges = RANGES;
    api.create('services', lb);
    api.create('endpointslices', sliceObject('guarded', 'guarded-1', [{ ip: '10.244.0.12' }]));
    await eventually(
      () => probe('203.0.113.40', 80, ALLOWED),
      (o) => o[0]!.startsWith('b2'),
      20_000,
      'the allowed source through the LB IP',
    );
    expect(await probe('203.0.113.40', 80, BLOCKED)).toEqual(['timeout']);
    expect(await probe(cluster.nodeIPv4, 30040, BLOCKED)).toEqual([expect.stringMatching(/^b2 /)]);
    expect(await probe('10.96.0.10', 80, BLOCKED)).toEqual([expect.stringMatching(/^b1 /)]);
  });

  it('never failed a sync, set nothing aside, and is healthy', async () => {
    expect(agent.logs()).not.toContain('nftables sync failed');
    expect(agent.logs()).not.toContain('set aside');
    const served = agent.entries().find((l) => l.msg === 'serving /healthz and /metrics') as
      | { healthz: string; metrics: string }
      | undefined;
    expect(served).toBeDefined();
    expect((await fetch(`http://${served!.healthz}/healthz`)).status).toBe(200);
    const scraped = await (await fetch(`http://${served!.metrics}/metrics`)).text();
    expect(scraped).toMatch(/^kube_nft_proxy_refused_service_ports 0$/m);
    // The Services with a NUL and a 200-character port name, left out at the stream boundary.
    expect(scraped).toMatch(/^kube_nft_proxy_invalid_objects\{kind="Service"\} 2$/m);
  });
});

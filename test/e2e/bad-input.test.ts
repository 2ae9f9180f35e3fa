// Bad input is contained: malformed Services and EndpointSlices are logged with
// a reason and left out, and everything else — including what was already
// programmed — keeps working.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeApiServer, K8sObject } from '../fake-apiserver/index.ts';
import { eventually, serviceObject, sliceObject, type AgentProcess } from './agent-process.ts';
import { startAgentCluster, type AgentCluster } from './agent-cluster.ts';
import type { Cluster } from './topology.ts';

describe('bad input with real packets', { timeout: 60_000 }, () => {
  let env: AgentCluster;
  let cluster: Cluster;
  let api: FakeApiServer;
  let agent: AgentProcess;
  const probe = (ip: string) => cluster.probe(cluster.client, 'tcp', ip, 80, 1, 800);
  const logLines = () => agent.entries();

  beforeAll(async () => {
    env = await startAgentCluster(['b1', 'b2'], [], (api) => {
      api.create('services', serviceObject({ name: 'good', clusterIP: '10.96.0.10' }));
      api.create('endpointslices', sliceObject('good', 'good-1', [{ ip: '10.244.0.11' }]));
    });
    ({ cluster, api, agent } = env);
    await eventually(
      () => probe('10.96.0.10'),
      (o) => o[0]!.startsWith('b1'),
      20_000,
      'the good service',
    );
  }, 60_000);

  afterAll(() => env?.destroy());

  it('leaves out a Service whose clusterIP is not an IP, logs why, and keeps the others', async () => {
    api.create('services', serviceObject({ name: 'bad-ip', clusterIP: '10.96.0.300' }));
    api.create('services', serviceObject({ name: 'after-bad', clusterIP: '10.96.0.11' }));
    api.create('endpointslices', sliceObject('after-bad', 'after-bad-1', [{ ip: '10.244.0.12' }]));
    await eventually(
      () => probe('10.96.0.11'),
      (o) => o[0]!.startsWith('b2'),
      15_000,
      'the service created after the bad one',
    );
    expect(await probe('10.96.0.10')).toEqual([expect.stringMatching(/^b1 /)]);
    const complaint = logLines().find((l) => JSON.stringify(l).includes('bad-ip') && Number(l.level) >= 40);
    expect(complaint, 'a warning or error naming e2e/bad-ip').toBeDefined();
  });

  it('drops bad endpoints and ports of a slice and keeps its good endpoints', async () => {
    api.create('services', serviceObject({ name: 'mixed', clusterIP: '10.96.0.12' }));
    const slice = sliceObject('mixed', 'mixed-1', [{ ip: '10.244.0.11' }, { ip: '255.255.255.255' }, { ip: 'not-an-ip' }]) as K8sObject & {
      ports: Array<Record<string, unknown>>;
    };
    slice.ports.push({ name: 'bogus', protocol: 'TCP', port: 70000 });
    api.create('endpointslices', slice);
    const out = await eventually(
      () => probe('10.96.0.12'),
      (o) => o[0]!.startsWith('b1'),
      15_000,
      'the good endpoint of the mixed slice',
    );
    expect(out[0]).toMatch(/^b1 /);
  });

  it('contains an update that turns a Service invalid: logged, the others keep working, and it returns when fixed', async () => {
    api.create('services', serviceObject({ name: 'flip', clusterIP: '10.96.0.13' }));
    api.create('endpointslices', sliceObject('flip', 'flip-1', [{ ip: '10.244.0.12' }]));
    await eventually(
      () => probe('10.96.0.13'),
      (o) => o[0]!.startsWith('b2'),
      15_000,
      'flip up',
    );
    // An unknown protocol: the object fails validation; the other services are untouched.
    const broken = serviceObject({ name: 'flip', clusterIP: '10.96.0.13' }) as K8sObject & {
      spec: { ports: Array<Record<string, unknown>> };
    };
    broken.spec.ports[0]!.protocol = 'QUIC';
    api.update('services', broken);
    await eventually(
      async () => logLines(),
      (ls) => ls.some((l) => JSON.stringify(l).includes('QUIC')),
      15_000,
      'a log line about QUIC',
    );
    expect(await probe('10.96.0.10')).toEqual([expect.stringMatching(/^b1 /)]);
    api.update('services', serviceObject({ name: 'flip', clusterIP: '10.96.0.13' }));
    await eventually(
      () => probe('10.96.0.13'),
      (o) => o[0]!.startsWith('b2'),
      15_000,
      'flip back',
    );
  });

  it('never failed a commit because of bad input', () => {
    expect(agent.logs()).not.toContain('nftables sync failed');
  });
});

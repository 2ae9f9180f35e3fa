// The agent's life cycle with real packets: SIGTERM leaves the rules in place, a
// restarted agent replaces them in one transaction without a traffic blip, and
// `kube-nft-proxy cleanup` removes our tables and nothing else.

import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeApiServer } from '../fake-apiserver/index.ts';
import { eventually, nodeObject, serviceObject, sliceObject, startAgentProcess, type AgentProcess } from './agent-process.ts';
import { createCluster, type Cluster } from './topology.ts';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

describe('agent life cycle', { timeout: 90_000 }, () => {
  let cluster: Cluster;
  let api: FakeApiServer;
  const agents: AgentProcess[] = [];

  beforeAll(async () => {
    cluster = await createCluster(['b1', 'b2']);
    api = await FakeApiServer.start();
    api.create('nodes', nodeObject('node-a', 'zone-a', 'region-1', cluster.nodeIPv4));
    api.create('services', serviceObject({ name: 'web', clusterIP: '10.96.0.10' }));
    api.create('endpointslices', sliceObject('web', 'web-1', [{ ip: '10.244.0.11' }, { ip: '10.244.0.12' }]));
  }, 60_000);

  afterAll(async () => {
    for (const a of agents) await a.stop();
    await api?.close();
    await cluster?.destroy();
  });

  const probe = (count = 1) => cluster.probe(cluster.client, 'tcp', '10.96.0.10', 80, count, 1000);
  const tables = () => cluster.node.exec('nft', ['list', 'tables']);

  it('keeps serving across SIGTERM and a restart, with no failed connection', async () => {
    const first = await startAgentProcess(api, cluster.node.name);
    agents.push(first);
    await eventually(
      () => probe(),
      (o) => o[0]!.startsWith('b'),
      20_000,
      'first agent programs the service',
    );

    // A client keeps connecting while the agent stops and a new one starts.
    const during: string[] = [];
    let stop = false;
    const load = (async () => {
      while (!stop) during.push(...(await probe(5)));
    })();
    expect(await first.stop()).toBe(0);
    expect(tables()).toMatch(/table ip kube-nft-proxy/);
    const second = await startAgentProcess(api, cluster.node.name);
    agents.push(second);
    await eventually(
      async () => second.logs(),
      (l) => l.includes('synced nftables rules'),
      20_000,
      'the restarted agent to sync',
    );
    // A little more traffic after the replace landed.
    await new Promise((r) => setTimeout(r, 500));
    stop = true;
    await load;

    expect(during.length).toBeGreaterThan(10);
    expect(during.filter((o) => !o.startsWith('b'))).toEqual([]);
    // The restart replaced the table in one full sync, it did not flush and rebuild in two.
    const replaced = second
      .logs()
      .split('\n')
      .filter((l) => l.includes('synced nftables rules'))
      .map((l) => JSON.parse(l));
    expect(replaced[0]).toMatchObject({ reason: 'startup', kind: 'full' });
    await second.stop();
  });

  it('cleanup removes our tables and leaves others alone', async () => {
    cluster.node.exec('nft', ['add', 'table', 'inet', 'someone-else']);
    expect(tables()).toMatch(/table ip kube-nft-proxy/);
    execFileSync(process.execPath, [CLI, 'cleanup', `--netns=${cluster.node.name}`], { stdio: 'pipe', timeout: 20_000 });
    expect(tables()).not.toMatch(/kube-nft-proxy/);
    expect(tables()).toMatch(/table inet someone-else/);
    // Idempotent: a second cleanup finds nothing to remove and still succeeds.
    execFileSync(process.execPath, [CLI, 'cleanup', `--netns=${cluster.node.name}`], { stdio: 'pipe', timeout: 20_000 });
    expect(await probe()).not.toEqual([expect.stringMatching(/^b/)]);
  });
});

// Restarts adopt what the kernel holds: the agent is killed (SIGKILL, nothing
// cleaned up) and started again on the same node namespace; its first sync
// reads our tables back and commits only the difference. Session-affinity
// entries survive, a table damaged while no agent ran is repaired, and a table
// of our name that is not ours is refused at start-up and left by cleanup.

import { execFileSync, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeApiServer } from '../fake-apiserver/index.ts';
import { createNetns } from '../helpers/netns.ts';
import { ourTables } from '../helpers/our-tables.ts';
import { eventually, nodeObject, serviceObject, sliceObject, startAgentProcess, type AgentProcess } from './agent-process.ts';
import { createCluster, type Cluster } from './topology.ts';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

describe('restarts adopt our tables', { timeout: 120_000 }, () => {
  let cluster: Cluster;
  let api: FakeApiServer;
  const agents: AgentProcess[] = [];
  const backends = ['10.244.0.11', '10.244.0.12', '10.244.0.13', '10.244.0.14'];

  beforeAll(async () => {
    cluster = await createCluster(['b1', 'b2', 'b3', 'b4']);
    api = await FakeApiServer.start();
    api.create('nodes', nodeObject('node-a', 'zone-a', 'region-1', cluster.nodeIPv4));
    api.create('services', serviceObject({ name: 'sticky', clusterIP: '10.96.2.10', sessionAffinity: true }));
    api.create(
      'endpointslices',
      sliceObject(
        'sticky',
        'sticky-1',
        backends.map((ip) => ({ ip })),
      ),
    );
    api.create('services', serviceObject({ name: 'web', clusterIP: '10.96.2.20' }));
    api.create('endpointslices', sliceObject('web', 'web-1', [{ ip: backends[0]! }]));
  }, 60_000);

  afterAll(async () => {
    for (const a of agents) await a.stop();
    await api?.close();
    await cluster?.destroy();
  });

  const probe = (address: string, count = 1) => cluster.probe(cluster.client, 'tcp', address, 80, count, 1000);
  const start = async () => {
    const a = await startAgentProcess(api, cluster.node.name);
    agents.push(a);
    return a;
  };
  const kill = async (a: AgentProcess) => {
    a.child.kill('SIGKILL');
    if (a.child.exitCode === null && a.child.signalCode === null) await once(a.child, 'exit');
  };
  const firstSync = (a: AgentProcess) =>
    eventually(
      async () => a.entries().find((e) => e.msg === 'synced nftables rules'),
      (e) => e !== undefined,
      20_000,
      'the first sync',
    );

  it('keeps ClientIP affinity across SIGKILL and a restart, with no failed connection', async () => {
    const first = await start();
    const before = await eventually(
      () => probe('10.96.2.10', 5),
      (o) => o.every((x) => x.startsWith('b')),
      20_000,
      'sticky answers',
    );
    const backend = before[0]!.split(' ')[0];
    expect(new Set(before.map((o) => o.split(' ')[0]))).toEqual(new Set([backend]));

    // A client keeps connecting while the agent is killed and a new one starts.
    const during: string[] = [];
    let stop = false;
    const load = (async () => {
      while (!stop) during.push(...(await probe('10.96.2.10', 3)));
    })();
    await kill(first);
    const second = await start();
    // Nothing is committed again over intact tables.
    expect(await firstSync(second)).toMatchObject({ reason: 'startup', kind: 'full', mode: 'adopt', ops: 0 });
    await new Promise((r) => setTimeout(r, 500));
    stop = true;
    await load;
    const after = await probe('10.96.2.10', 5);

    expect(during.length).toBeGreaterThan(5);
    // A replace would have emptied the affinity set: the next connection picks any of four backends.
    expect(new Set([...during, ...after].map((o) => o.split(' ')[0]))).toEqual(new Set([backend]));
    await kill(second);
  });

  it('repairs at start-up a table damaged while no agent ran', async () => {
    const first = await start();
    await eventually(
      () => probe('10.96.2.20'),
      (o) => o[0]!.startsWith('b1'),
      20_000,
      'the web service',
    );
    const intact = ourTables(cluster.node);
    await kill(first);

    // Someone deletes, with nft, the web service's element of the dispatch map and a rule.
    const listed = cluster.node.nftJson().nftables;
    const dispatch = listed.find((o) => o.map?.family === 'ip' && o.map.name === 'service-ips')!.map;
    const elem = (dispatch.elem as Array<[{ concat: string[] }, unknown]>).find(([k]) => k.concat[0] === '10.96.2.20')!;
    cluster.node.exec('nft', ['delete', 'element', 'ip', 'kube-nft-proxy', 'service-ips', `{ ${elem[0].concat.join(' . ')} }`]);
    const rule = listed.find((o) => o.rule?.family === 'ip' && o.rule.chain === 'nat-prerouting')!.rule;
    cluster.node.exec('nft', ['delete', 'rule', 'ip', 'kube-nft-proxy', 'nat-prerouting', 'handle', String(rule.handle)]);
    expect(await probe('10.96.2.20')).not.toEqual([expect.stringMatching(/^b1/)]);

    const second = await start();
    const sync = await firstSync(second);
    expect(sync).toMatchObject({ reason: 'startup', kind: 'full', mode: 'adopt' });
    expect(sync!.ops).toBeGreaterThan(0);
    expect((await probe('10.96.2.20'))[0]).toMatch(/^b1 /);
    const repaired = ourTables(cluster.node);
    // Affinity entries are the kernel's own: compare everything else.
    for (const t of [intact, repaired])
      for (const f of Object.values(t)) for (const [n, s] of Object.entries(f.sets)) if (n.startsWith('affinity-')) delete s.elem;
    expect(repaired).toEqual(intact);
    await kill(second);
  });
});

describe('tables of our name that are not ours', { timeout: 60_000 }, () => {
  it('are refused at start-up (exit 2) and left alone by cleanup', async () => {
    const ns = createNetns('knp-foreign');
    const api = await FakeApiServer.start();
    const dir = mkdtempSync(join(tmpdir(), 'knp-foreign-'));
    try {
      api.create('nodes', nodeObject('node-a', 'zone-a', 'region-1', '192.0.2.1'));
      ns.exec('nft', ['-f', '-'], {
        input:
          'table ip kube-nft-proxy {\n  comment "the firewall team\'s"\n  chain input {\n    type filter hook input ' +
          'priority 0; policy accept;\n    counter\n  }\n}\n',
      });
      const before = ns.exec('nft', ['list', 'ruleset']);
      const kubeconfig = join(dir, 'kubeconfig');
      api.writeKubeconfig(kubeconfig);
      const run = spawnSync(
        process.execPath,
        [
          CLI,
          `--kubeconfig=${kubeconfig}`,
          '--hostname-override=node-a',
          `--netns=${ns.name}`,
          '--metrics-bind-address=127.0.0.1:0',
          '--healthz-bind-address=127.0.0.1:0',
        ],
        {
          encoding: 'utf8',
          timeout: 30_000,
        },
      );
      expect(run.status).toBe(2);
      expect(run.stderr).toMatch(/table ip kube-nft-proxy exists and was not created by kube-nft-proxy/);
      expect(ns.exec('nft', ['list', 'ruleset'])).toBe(before);

      const cleanup = execFileSync(process.execPath, [CLI, 'cleanup', `--netns=${ns.name}`], { encoding: 'utf8', timeout: 20_000 });
      expect(cleanup).toMatch(/left a table of this name alone/);
      expect(ns.exec('nft', ['list', 'ruleset'])).toBe(before);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await api.close();
      ns.destroy();
    }
  });
});

// KEP-4963 on a kernel WITHOUT flowtables (this machine's: CONFIG_NF_FLOW_TABLE
// unset): the real agent, offload asked for, detects it at start-up, says so
// once and clearly, reports offload off on /metrics, and serves Services as
// usual; nothing of the probe or of a flowtable is left in the kernel.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeApiServer } from '../fake-apiserver/index.ts';
import { eventually, serviceObject, sliceObject, type AgentProcess } from './agent-process.ts';
import { startAgentCluster, type AgentCluster } from './agent-cluster.ts';
import type { Cluster } from './topology.ts';

interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

describe('the agent on a kernel without flowtables', { timeout: 60_000 }, () => {
  let env: AgentCluster;
  let cluster: Cluster;
  let api: FakeApiServer;
  let agent: AgentProcess;
  const logLines = () => agent.entries() as LogLine[];
  const metricsText = async () => {
    const served = await eventually(
      async () => logLines().find((l) => l.msg === 'serving /healthz and /metrics'),
      (l) => l !== undefined,
      20_000,
      'the agent to log its metrics address',
    );
    const res = await fetch(`http://${String(served!.metrics)}/metrics`);
    expect(res.status).toBe(200);
    return res.text();
  };
  const sample = (text: string, name: string) => text.split('\n').find((l) => l.startsWith(`${name} `));

  beforeAll(async () => {
    // Offload asked for explicitly (20 is also the default).
    env = await startAgentCluster(['b1', 'c1'], ['--offload-packet-threshold=20', '--feature-gates=KubeProxyAcceleration=true']);
    ({ cluster, api, agent } = env);
  }, 60_000);

  afterAll(() => env?.destroy());

  it('serves a ClusterIP Service normally', async () => {
    api.create('services', serviceObject({ name: 'web', clusterIP: '10.96.0.10' }));
    api.create('endpointslices', sliceObject('web', 'web-1', [{ ip: '10.244.0.11' }]));
    const out = await eventually(
      () => cluster.probe(cluster.client, 'tcp', '10.96.0.10', 80),
      (o) => o[0]!.startsWith('b1'),
      20_000,
      'the ClusterIP to answer',
    );
    expect(out[0]).toMatch(/^b1 /);
    // A second change: the warning must not come back with every sync.
    api.create('services', serviceObject({ name: 'web2', clusterIP: '10.96.0.11' }));
    api.create('endpointslices', sliceObject('web2', 'web2-1', [{ ip: '10.244.0.11' }]));
    await eventually(
      () => cluster.probe(cluster.client, 'tcp', '10.96.0.11', 80),
      (o) => o[0]!.startsWith('b1'),
      20_000,
      'the second ClusterIP to answer',
    );
  });

  it('logs exactly one warning, naming the missing kernel support', () => {
    const warnings = logLines().filter((l) => l.level === 40);
    expect(warnings, JSON.stringify(warnings)).toHaveLength(1);
    const [w] = warnings;
    expect(w).toMatchObject({ capability: 'flowtable', status: 'unsupported' });
    expect(w!.msg).toMatch(/flowtable acceleration \(KEP-4963\) is OFF/);
    expect(w!.msg).toContain('CONFIG_NF_FLOW_TABLE');
    expect(w!.msg).toContain('nft_flow_offload');
    expect(String(w!.reason)).toMatch(/ENOENT/);
  });

  it('reports offload off on /metrics', async () => {
    const text = await metricsText();
    expect(sample(text, 'kube_nft_proxy_flowtable_offload_enabled')).toBe('kube_nft_proxy_flowtable_offload_enabled 0');
    expect(sample(text, 'kube_nft_proxy_flowtable_devices')).toBe('kube_nft_proxy_flowtable_devices 0');
    expect(sample(text, 'kubeproxy_sync_proxy_rules_nftables_sync_failures_total')).toBe(
      'kubeproxy_sync_proxy_rules_nftables_sync_failures_total 0',
    );
  });

  it('leaves no flowtable, offload rule or probe table in the kernel', () => {
    const objects = cluster.node.nftJson().nftables;
    const tables = objects.filter((o) => o.table).map((o) => `${o.table.family} ${o.table.name}`);
    expect(tables.sort()).toEqual(['ip kube-nft-proxy', 'ip6 kube-nft-proxy']);
    expect(objects.filter((o) => o.flowtable)).toEqual([]);
    expect(JSON.stringify(objects)).not.toContain('"flow"');
  });

  it('never failed a sync', () => {
    const lines = logLines();
    expect(lines.filter((l) => l.msg === 'nftables sync failed; will retry')).toEqual([]);
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    expect(lines.filter((l) => l.msg === 'synced nftables rules').length).toBeGreaterThanOrEqual(2);
  });
});

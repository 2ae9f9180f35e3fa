// Conntrack cleanup with real flows: the agent process programs the node
// namespace, clients keep long flows from fixed source ports, and the backends
// answer with their names. Without the cleanup each UDP flow below would stay
// on its old path for as long as it keeps sending (the entry never times out).
// The full resync is an hour away (--sync-period 1h): what moves the flows is
// the cleanup that follows the sync of the change itself.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeApiServer, K8sObject } from '../fake-apiserver/index.ts';
import { eventually, serviceObject, sliceObject, type AgentProcess } from './agent-process.ts';
import { startAgentCluster, type AgentCluster } from './agent-cluster.ts';
import { startTcpConnection, startUdpFlow, type Flow } from './flows.ts';
import type { Cluster } from './topology.ts';

const ECHO_PORT = 9090;

describe('conntrack cleanup with real flows', { timeout: 90_000 }, () => {
  let env: AgentCluster;
  let cluster: Cluster;
  let api: FakeApiServer;
  let agent: AgentProcess;
  const flows: Flow[] = [];
  const b1 = { v4: '10.244.0.11', v6: 'fd00:10:244::b' };
  const b2 = { v4: '10.244.0.12', v6: 'fd00:10:244::c' };

  beforeAll(async () => {
    env = await startAgentCluster(['b1', 'b2'], ['--sync-period=1h']);
    ({ cluster, api, agent } = env);
    // An echo server on b1 for the TCP connection that must survive.
    const echo = cluster.pods.get('b1')!.ns.spawn('socat', [`TCP-LISTEN:${ECHO_PORT},fork,reuseaddr`, 'EXEC:cat'], { stdio: 'ignore' });
    flows.push({ answers: () => [], last: () => undefined, stop: async () => void echo.kill('SIGKILL') });
  }, 60_000);

  afterAll(async () => {
    for (const f of flows) await f.stop();
    await env?.destroy();
  });

  const udpService = (name: string, clusterIP: string, extra: Partial<Parameters<typeof serviceObject>[0]> = {}) =>
    api.create('services', serviceObject({ name, clusterIP, protocol: 'UDP', ...extra }));
  const udpSlice = (service: string, ip: string, family: 'IPv4' | 'IPv6' = 'IPv4') =>
    sliceObject(service, `${service}-1`, [{ ip }], { protocol: 'UDP', family });
  const flow = async (address: string, port: number, sourcePort: number) => {
    const f = await startUdpFlow(cluster.client, address, port, sourcePort);
    flows.push(f);
    return f;
  };
  const reaches = (f: Flow, backend: string, what: string) =>
    eventually(
      async () => f.last(),
      (b) => b === backend,
      20_000,
      what,
    );
  /** conntrack's own listing in the node namespace (the tool is an oracle only). */
  const entries = (proto: 'udp' | 'tcp', sourcePort: number) =>
    cluster.node
      .tryExec('conntrack', ['-L', '-p', proto, '--orig-port-src', String(sourcePort)])
      .stdout.split('\n')
      .filter((l) => l.includes(`sport=${sourcePort}`));
  const changedCleanups = () => agent.entries().filter((e) => e.msg === 'deleted stale conntrack entries' && e.kind === 'changed');

  it('(a) moves a UDP flow to the new endpoint when its endpoint is replaced', async () => {
    udpService('dns', '10.96.1.10');
    api.create('endpointslices', udpSlice('dns', b1.v4));
    const f = await flow('10.96.1.10', 80, 40001);
    await reaches(f, 'b1', 'the flow to reach b1');
    const before = changedCleanups().length;
    api.update('endpointslices', udpSlice('dns', b2.v4));
    await reaches(f, 'b2', 'the same 5-tuple to reach b2');
    // b1 still answers: only a deleted entry can have moved the flow.
    expect(changedCleanups().length).toBeGreaterThan(before);
    expect(entries('udp', 40001).join('\n')).toContain(`src=${b2.v4}`);
  });

  it('(b) NATs a flow that started before its Service existed once the Service appears', async () => {
    // An external IP: before the Service, the node routes it out of its uplink
    // and conntrack holds an entry to the bare address. (Unallocated ClusterIPs
    // are rejected by the agent's rules and never get a confirmed entry.)
    const f = await flow('198.51.100.60', 80, 40002);
    await eventually(
      async () => entries('udp', 40002),
      (l) => l.some((x) => x.includes('src=198.51.100.60')),
      10_000,
      'the un-NATed entry',
    );
    expect(f.answers()).toEqual([]);
    udpService('late', '10.96.1.20', { externalIPs: ['198.51.100.60'] });
    api.create('endpointslices', udpSlice('late', b1.v4));
    await reaches(f, 'b1', 'the early flow to reach the endpoint');
  });

  it('(c) leaves a TCP connection on the same address and port alone', async () => {
    const svc = serviceObject({ name: 'mixed', clusterIP: '10.96.1.30' }) as K8sObject & { spec: { ports: unknown[] } };
    svc.spec.ports = [
      { name: 'tcp', protocol: 'TCP', port: 80, targetPort: ECHO_PORT },
      { name: 'udp', protocol: 'UDP', port: 80, targetPort: 8080 },
    ];
    api.create('services', svc);
    const slice = (ip: string) => ({
      ...sliceObject('mixed', 'mixed-1', [{ ip }]),
      ports: [
        { name: 'tcp', protocol: 'TCP', port: ECHO_PORT },
        { name: 'udp', protocol: 'UDP', port: 8080 },
      ],
    });
    api.create('endpointslices', slice(b1.v4));
    const u = await flow('10.96.1.30', 80, 40003);
    await reaches(u, 'b1', 'the UDP flow to reach b1');
    const tcp = await eventually(
      () => startTcpConnection(cluster.client, '10.96.1.30', 80, 40004).catch(() => undefined),
      (c) => c !== undefined,
      15_000,
      'a TCP connection through the service',
    );
    flows.push(tcp!);
    api.update('endpointslices', slice(b2.v4));
    await reaches(u, 'b2', 'the UDP flow on the same address and port to move to b2');
    // The TCP connection's entry is still there, still to b1, and the connection still carries data.
    expect(entries('tcp', 40004).join('\n')).toMatch(new RegExp(`ESTABLISHED.*src=${b1.v4.replace(/\./g, '\\.')}`));
    tcp!.send('still-here');
    await eventually(
      async () => tcp!.answers(),
      (a) => a.includes('still-here'),
      10_000,
      'the echo over the old connection',
    );
  });

  it('(d) moves an IPv6 UDP flow', async () => {
    udpService('dns6', 'fd00:10:96::1:10');
    api.create('endpointslices', udpSlice('dns6', b1.v6, 'IPv6'));
    const f = await flow('fd00:10:96::1:10', 80, 40005);
    await reaches(f, 'b1', 'the IPv6 flow to reach b1');
    api.update('endpointslices', udpSlice('dns6', b2.v6, 'IPv6'));
    await reaches(f, 'b2', 'the IPv6 flow to move to b2');
  });

  it('(e) moves a NodePort UDP flow', async () => {
    udpService('np', '10.96.1.50', { type: 'NodePort', nodePort: 30053 });
    api.create('endpointslices', udpSlice('np', b1.v4));
    const f = await flow(cluster.nodeIPv4, 30053, 40006);
    await reaches(f, 'b1', 'the NodePort flow to reach b1');
    api.update('endpointslices', udpSlice('np', b2.v4));
    await reaches(f, 'b2', 'the NodePort flow to move to b2');
  });

  it('ran no full resync meanwhile, counted its deletions and had no failure', async () => {
    const entriesLogged = agent.entries();
    const syncs = entriesLogged.filter((e) => e.msg === 'synced nftables rules');
    expect(syncs.filter((e) => e.kind === 'full')).toHaveLength(1);
    expect(entriesLogged.filter((e) => String(e.msg).startsWith('conntrack cleanup'))).toEqual(
      entriesLogged.filter((e) => e.msg === 'conntrack cleanup found nothing stale'),
    );
    const port = /"metrics":"([^"]+)"/.exec(agent.logs())![1];
    const text = await (await fetch(`http://${port}/metrics`)).text();
    const deleted = /kube_nft_proxy_conntrack_entries_deleted_total\{kind="changed"\} (\d+)/.exec(text);
    expect(Number(deleted?.[1])).toBeGreaterThanOrEqual(5);
    expect(text).not.toMatch(/kube_nft_proxy_conntrack_cleanup_failures_total\{[^}]*\} [1-9]/);
  });
});

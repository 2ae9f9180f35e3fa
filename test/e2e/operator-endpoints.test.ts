// What an operator's load balancer, probes and scraper see, with the real agent
// running inside the node namespace (as a hostNetwork pod on its node) and
// every request made from the client namespace, over real packets:
// - the health-check node port of an externalTrafficPolicy Local Service:
//   200 while a local endpoint exists, 503 when only remote ones remain,
//   connection refused once the Service is deleted;
// - /healthz and /livez: a Node tainted for deletion fails /healthz only;
// - /metrics after real syncs: every kube-proxy 1.32 nftables-mode metric has a sample;
// - the start-up Event on the Node, posted to the API server.

import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KUBE_PROXY_NFTABLES_METRICS } from '../../src/observability/metrics.ts';
import { FakeApiServer } from '../fake-apiserver/index.ts';
import { eventually, nodeObject, serviceObject, sliceObject, startAgentProcess, type AgentProcess } from './agent-process.ts';
import { createCluster, type Cluster } from './topology.ts';

const here = fileURLToPath(new URL('.', import.meta.url));
const HC_PORT = 32100;
const NODE_IP = '192.0.2.1';
const API_PORT_IN_NODE = 16443;

/** kube-proxy 1.32's metrics in nftables mode (pkg/proxy/metrics/metrics.go, RegisterMetrics). */
const KUBE_PROXY_METRICS = [
  'kubeproxy_sync_proxy_rules_duration_seconds',
  'kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds',
  'kubeproxy_sync_proxy_rules_last_timestamp_seconds',
  'kubeproxy_sync_proxy_rules_endpoint_changes_pending',
  'kubeproxy_sync_proxy_rules_endpoint_changes_total',
  'kubeproxy_sync_proxy_rules_service_changes_pending',
  'kubeproxy_sync_proxy_rules_service_changes_total',
  'kubeproxy_proxy_healthz_total',
  'kubeproxy_proxy_livez_total',
  'kubeproxy_network_programming_duration_seconds',
  'kubeproxy_sync_proxy_rules_no_local_endpoints_total',
  'kubeproxy_sync_proxy_rules_nftables_sync_failures_total',
  'kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total',
];

interface HttpAnswer {
  status?: number;
  contentType?: string;
  nosniff?: string;
  body?: string;
  error?: string;
}

describe('operator endpoints, from another namespace', { timeout: 120_000 }, () => {
  let cluster: Cluster;
  let api: FakeApiServer;
  let agent: AgentProcess;
  let bridge: Server;
  let forwarder: ChildProcess;
  let dir: string;

  const get = async (url: string): Promise<HttpAnswer> => {
    const child = cluster.client.spawn(process.execPath, [`${here}http-get.ts`, url, '2000'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    await once(child, 'exit');
    return JSON.parse(out) as HttpAnswer;
  };
  const healthCheck = () => get(`http://${NODE_IP}:${HC_PORT}/`);

  beforeAll(async () => {
    cluster = await createCluster(['b1']);
    api = await FakeApiServer.start();
    api.create('nodes', nodeObject('node-a', 'zone-a', 'region-1', NODE_IP));
    api.create(
      'services',
      serviceObject({
        name: 'lb',
        clusterIP: '10.96.0.20',
        type: 'LoadBalancer',
        nodePort: 30080,
        externalTrafficPolicy: 'Local',
        healthCheckNodePort: HC_PORT,
      }),
    );
    api.create('endpointslices', sliceObject('lb', 'lb-1', [{ ip: '10.244.0.11', node: 'node-a' }]));
    // The fake API server listens on this process's loopback; the agent, inside
    // the node namespace, reaches it over a Unix socket both can open.
    dir = mkdtempSync(join(tmpdir(), 'knp-opep-'));
    const socketPath = join(dir, 'api.sock');
    const apiPort = Number(new URL(api.url).port);
    bridge = createServer((s) => {
      const up = connect(apiPort, '127.0.0.1');
      s.pipe(up).pipe(s);
      s.on('error', () => up.destroy());
      up.on('error', () => s.destroy());
    });
    await new Promise<void>((r) => bridge.listen(socketPath, r));
    forwarder = cluster.node.spawn(process.execPath, [`${here}unix-forward.ts`, '127.0.0.1', String(API_PORT_IN_NODE), socketPath], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    await once(forwarder.stdout!, 'data');
    agent = await startAgentProcess(
      api,
      cluster.node.name,
      [`--healthz-bind-address=${NODE_IP}:10256`, `--metrics-bind-address=${NODE_IP}:10249`],
      { inside: true, server: `http://127.0.0.1:${API_PORT_IN_NODE}` },
    );
  }, 60_000);

  afterAll(async () => {
    if (process.env.E2E_LOGS) console.log(agent?.logs());
    await agent?.stop();
    forwarder?.kill('SIGKILL');
    bridge?.close();
    await api?.close();
    await cluster?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('serves the health-check node port: 200 with a local endpoint, 503 with only remote ones, refused once deleted', async () => {
    const ok = await eventually(healthCheck, (a) => a.status === 200, 30_000, 'the health-check port to answer 200');
    expect(ok.contentType).toBe('application/json');
    expect(ok.nosniff).toBe('nosniff');
    expect(JSON.parse(ok.body!)).toEqual({ service: { namespace: 'e2e', name: 'lb' }, localEndpoints: 1, serviceProxyHealthy: true });
    // The probe above crossed our rules to reach the agent; nothing in them names the port.
    const ruleset = JSON.stringify(cluster.node.nftJson());
    expect(ruleset).toContain('30080');
    expect(ruleset).not.toContain(String(HC_PORT));

    // The endpoint moves to another node; the slice says when the change began.
    const slice = sliceObject('lb', 'lb-1', [{ ip: '10.244.0.11', node: 'node-b' }]);
    (slice.metadata as Record<string, unknown>).annotations = {
      'endpoints.kubernetes.io/last-change-trigger-time': new Date().toISOString(),
    };
    api.update('endpointslices', slice);
    const drained = await eventually(healthCheck, (a) => a.status === 503, 15_000, 'the health-check port to answer 503');
    expect(JSON.parse(drained.body!)).toEqual({ service: { namespace: 'e2e', name: 'lb' }, localEndpoints: 0, serviceProxyHealthy: true });

    api.delete('services', 'e2e/lb');
    await eventually(healthCheck, (a) => a.error === 'refused', 15_000, 'the health-check port to close');
  });

  it('answers /healthz and /livez, and fails /healthz only for a Node tainted for deletion', async () => {
    const healthz = await get(`http://${NODE_IP}:10256/healthz`);
    expect(healthz.status).toBe(200);
    expect(JSON.parse(healthz.body!)).toMatchObject({ nodeEligible: true });
    const tainted = nodeObject('node-a', 'zone-a', 'region-1', NODE_IP);
    (tainted.spec as Record<string, unknown>).taints = [
      { key: 'ToBeDeletedByClusterAutoscaler', value: '1700000000', effect: 'NoSchedule' },
    ];
    api.update('nodes', tainted);
    const failing = await eventually(
      () => get(`http://${NODE_IP}:10256/healthz`),
      (a) => a.status === 503,
      15_000,
      '/healthz to fail',
    );
    expect(JSON.parse(failing.body!)).toMatchObject({ nodeEligible: false });
    expect((await get(`http://${NODE_IP}:10256/livez`)).status).toBe(200);
  });

  it('exports every kube-proxy nftables-mode metric with a sample after real syncs', async () => {
    expect([...KUBE_PROXY_NFTABLES_METRICS].map((m) => `kubeproxy_${m}`).sort()).toEqual([...KUBE_PROXY_METRICS].sort());
    const res = await get(`http://${NODE_IP}:10249/metrics`);
    expect(res.status).toBe(200);
    const text = res.body!;
    const missing = KUBE_PROXY_METRICS.filter((name) => !new RegExp(`^${name}(_count|_bucket|_sum)?(\\{[^}]*\\})? `, 'm').test(text));
    expect(missing).toEqual([]);
    // Recorded, not only declared.
    expect(text).toMatch(/^kubeproxy_network_programming_duration_seconds_count [1-9]/m);
    expect(text).toMatch(/^kubeproxy_sync_proxy_rules_no_local_endpoints_total\{traffic_policy="external"\} \d/m);
    expect(text).toMatch(/^kubeproxy_proxy_healthz_total\{code="503"\} [1-9]/m);
    expect(text).toMatch(/^kube_nft_proxy_nftables_operations_total\{verb="add",kind="chain"\} [1-9]/m);
    expect(text).toMatch(/^kube_nft_proxy_events_total\{type="Normal",outcome="sent"\} 1$/m);
  });

  it("posted kube-proxy's start-up event on the Node", () => {
    const startup = api.events.filter((e) => e.object.reason === 'Starting');
    expect(startup).toHaveLength(1);
    expect(startup[0]!.object).toMatchObject({ type: 'Normal', action: 'StartKubeProxy', regarding: { kind: 'Node', name: 'node-a' } });
  });
});

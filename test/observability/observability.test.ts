import { afterEach, describe, expect, it } from 'vitest';
import { goTimeString, HealthState } from '../../src/observability/health.ts';
import { startObservabilityServer, type ObservabilityServer } from '../../src/observability/http-server.ts';
import { ProxyMetrics } from '../../src/observability/metrics.ts';
import type { NodeInfo } from '../../src/k8s/types.ts';

const node = (over: Partial<NodeInfo> = {}): NodeInfo => ({ name: 'node-a', resourceVersion: '1', addresses: [], podCIDRs: [], ...over });

describe('HealthState (kube-proxy proxier_health semantics)', () => {
  it('is healthy while starting, until a queued change is older than the timeout', () => {
    const h = new HealthState(60_000);
    expect(h.healthz(0).status).toBe(200);
    h.queued(1000);
    expect(h.healthz(60_999).status).toBe(200);
    expect(h.healthz(61_000).status).toBe(503);
    h.synced(62_000);
    expect(h.healthz(200_000).status).toBe(200);
  });

  it('measures from the oldest change queued since the last sync', () => {
    const h = new HealthState(60_000);
    h.synced(0);
    h.queued(10_000);
    h.queued(50_000);
    expect(h.isHealthy(69_999)).toBe(true);
    expect(h.isHealthy(70_000)).toBe(false);
  });

  it('reports lastUpdated as now when healthy, the last sync when not, with nodeEligible', () => {
    const h = new HealthState(1000);
    h.synced(Date.UTC(2026, 0, 2, 3, 4, 5, 120));
    const now = Date.UTC(2026, 0, 2, 3, 4, 6);
    expect(JSON.parse(h.healthz(now).body)).toEqual({
      lastUpdated: '2026-01-02 03:04:06 +0000 UTC',
      currentTime: '2026-01-02 03:04:06 +0000 UTC',
      nodeEligible: true,
    });
    h.queued(now);
    const later = now + 5000;
    expect(h.healthz(later)).toEqual({
      status: 503,
      body: '{"lastUpdated": "2026-01-02 03:04:05.12 +0000 UTC","currentTime": "2026-01-02 03:04:11 +0000 UTC", "nodeEligible": true}',
    });
    expect(JSON.parse(h.livez(later).body)).toEqual({
      lastUpdated: '2026-01-02 03:04:05.12 +0000 UTC',
      currentTime: '2026-01-02 03:04:11 +0000 UTC',
    });
    expect(goTimeString(undefined)).toBe('0001-01-01 00:00:00 +0000 UTC');
  });

  it('fails /healthz but not /livez for a Node being deleted or tainted for deletion', () => {
    const h = new HealthState(60_000);
    h.node(node({ deleting: true }));
    expect(h.healthz(0).status).toBe(503);
    expect(JSON.parse(h.healthz(0).body).nodeEligible).toBe(false);
    expect(h.livez(0).status).toBe(200);
    h.node(node());
    expect(h.healthz(0).status).toBe(200);
    h.node(node({ taints: ['ToBeDeletedByClusterAutoscaler'] }));
    expect(h.healthz(0).status).toBe(503);
    expect(h.livez(0).status).toBe(200);
    h.node(node());
    h.node(undefined); // deleted after it was seen
    expect(h.healthz(0).status).toBe(503);
  });

  it('stays eligible while no Node has been seen yet', () => {
    const h = new HealthState(60_000);
    h.node(undefined);
    expect(h.healthz(0).status).toBe(200);
  });
});

describe('observability HTTP servers', () => {
  const servers: ObservabilityServer[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await s.close();
  });

  it('serves /healthz and /livez as kube-proxy does and counts each answer', async () => {
    const health = new HealthState(1000);
    const metrics = new ProxyMetrics();
    let now = 5000;
    const srv = await startObservabilityServer('127.0.0.1:0', { health, metrics }, { now: () => now });
    servers.push(srv);
    const base = `http://127.0.0.1:${srv.address.port}`;

    let res = await fetch(`${base}/healthz`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await res.json()).toMatchObject({ nodeEligible: true });
    health.queued(now);
    now += 2000;
    expect((await fetch(`${base}/healthz`)).status).toBe(503);
    expect((await fetch(`${base}/livez`)).status).toBe(503);
    health.synced(now);
    res = await fetch(`${base}/livez`);
    expect(res.status).toBe(200);
    expect(Object.keys((await res.json()) as object)).toEqual(['lastUpdated', 'currentTime']);

    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^kubeproxy_proxy_healthz_total\{code="200"\} 1$/m);
    expect(text).toMatch(/^kubeproxy_proxy_healthz_total\{code="503"\} 1$/m);
    expect(text).toMatch(/^kubeproxy_proxy_livez_total\{code="503"\} 1$/m);
    expect(text).toMatch(/^kubeproxy_proxy_livez_total\{code="200"\} 1$/m);
    expect((await fetch(`${base}/nope`)).status).toBe(404);
  });

  it('serves /metrics, /proxyMode and a plain /healthz on the metrics port', async () => {
    const metrics = new ProxyMetrics();
    const srv = await startObservabilityServer('127.0.0.1:0', { metrics });
    servers.push(srv);
    const base = `http://127.0.0.1:${srv.address.port}`;
    metrics.recordSync('partial', 0.003, 1234);
    metrics.offloadEnabled.set(0);
    // Before any scrape the process metrics are not registered (their modules are loaded late); a scrape has them.
    expect(await metrics.registry.metrics()).not.toContain('process_resident_memory_bytes');
    const text = await (await fetch(`${base}/metrics`)).text();
    expect(text).toMatch(/^process_resident_memory_bytes [1-9]\d*$/m);
    expect(text).toMatch(/^kubeproxy_sync_proxy_rules_duration_seconds_count 1$/m);
    expect(text).toMatch(/^kubeproxy_sync_proxy_rules_last_timestamp_seconds 1234$/m);
    expect(text).toMatch(/^kube_nft_proxy_flowtable_offload_enabled 0$/m);
    expect(await (await fetch(`${base}/proxyMode`)).text()).toBe('nftables');
    expect(await (await fetch(`${base}/healthz`)).text()).toBe('ok');
    expect((await fetch(`${base}/livez`)).status).toBe(404);
  });

  it('registers the process metrics once, however often they are asked for', async () => {
    const metrics = new ProxyMetrics();
    metrics.collectProcessMetrics();
    // A second registration of the same names would throw in prom-client.
    metrics.collectProcessMetrics();
    const text = await metrics.exposition();
    expect(text.match(/^# TYPE process_resident_memory_bytes gauge$/gm)).toHaveLength(1);
    expect(text).toMatch(/^nodejs_heap_size_used_bytes [1-9]\d*$/m);
  });

  it('refuses request bodies with 413 and closes the connection', async () => {
    const srv = await startObservabilityServer('127.0.0.1:0', { metrics: new ProxyMetrics() });
    servers.push(srv);
    const res = await fetch(`http://127.0.0.1:${srv.address.port}/metrics`, { method: 'POST', body: 'x'.repeat(1000) });
    expect(res.status).toBe(413);
    expect(res.headers.get('connection')).toBe('close');
  });
});

describe("kube-proxy's metric shapes", () => {
  /** The `le` values of a histogram as exposed, without +Inf. */
  async function buckets(metrics: ProxyMetrics, name: string): Promise<number[]> {
    const text = await metrics.registry.metrics();
    return [...text.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)"\\}`, 'gm'))]
      .map((m) => m[1]!)
      .filter((le) => le !== '+Inf')
      .map(Number);
  }
  const linear = (start: number, width: number, count: number) => Array.from({ length: count }, (_, i) => start + i * width);

  it('uses the same buckets (pkg/proxy/metrics/metrics.go)', async () => {
    const m = new ProxyMetrics();
    m.recordSync('full', 0.01, 1);
    m.networkProgrammingDuration.observe(1);
    expect(await buckets(m, 'kubeproxy_sync_proxy_rules_duration_seconds')).toEqual(Array.from({ length: 15 }, (_, i) => 0.001 * 2 ** i));
    expect(await buckets(m, 'kubeproxy_network_programming_duration_seconds')).toEqual([
      0,
      ...linear(0.25, 0.25, 2),
      ...linear(1, 1, 59),
      ...linear(60, 5, 12),
      ...linear(120, 30, 7),
    ]);
  });

  it('uses the same types and labels', async () => {
    const m = new ProxyMetrics();
    const meta = new Map((await m.registry.getMetricsAsJSON()).map((x) => [x.name, x]));
    const want: Array<[string, string]> = [
      ['kubeproxy_sync_proxy_rules_endpoint_changes_pending', 'gauge'],
      ['kubeproxy_sync_proxy_rules_service_changes_pending', 'gauge'],
      ['kubeproxy_sync_proxy_rules_endpoint_changes_total', 'counter'],
      ['kubeproxy_sync_proxy_rules_service_changes_total', 'counter'],
      ['kubeproxy_sync_proxy_rules_nftables_sync_failures_total', 'counter'],
      ['kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total', 'counter'],
      ['kubeproxy_proxy_healthz_total', 'counter'],
      ['kubeproxy_proxy_livez_total', 'counter'],
      ['kubeproxy_sync_proxy_rules_no_local_endpoints_total', 'gauge'],
      ['kubeproxy_sync_proxy_rules_last_timestamp_seconds', 'gauge'],
      ['kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds', 'gauge'],
      ['kubeproxy_network_programming_duration_seconds', 'histogram'],
      ['kubeproxy_sync_proxy_rules_duration_seconds', 'histogram'],
    ];
    for (const [name, type] of want) expect(meta.get(name)?.type, name).toBe(type);
    m.healthzTotal.inc({ code: '200' });
    m.recordNoLocalEndpoints(1, 2);
    const text = await m.registry.metrics();
    expect(text).toMatch(/^kubeproxy_proxy_healthz_total\{code="200"\} 1$/m);
    expect(text).toMatch(/^kubeproxy_sync_proxy_rules_no_local_endpoints_total\{traffic_policy="external"\} 2$/m);
  });
});

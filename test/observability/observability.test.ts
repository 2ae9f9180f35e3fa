import { afterEach, describe, expect, it } from 'vitest';
import { HealthState } from '../../src/observability/health.ts';
import { startObservabilityServer, type ObservabilityServer } from '../../src/observability/http-server.ts';
import { ProxyMetrics } from '../../src/observability/metrics.ts';

describe('HealthState', () => {
  it('is unhealthy until the first sync', () => {
    const h = new HealthState(60_000);
    expect(h.report(0)).toMatchObject({ healthy: false, reason: /not been programmed/ });
    h.synced(1000);
    expect(h.report(2000)).toMatchObject({ healthy: true, lastUpdated: new Date(1000).toISOString() });
  });

  it('turns unhealthy when a queued change waits past the timeout, and recovers on sync', () => {
    const h = new HealthState(60_000);
    h.synced(0);
    h.queued(10_000);
    h.queued(50_000); // the oldest pending change is what counts
    expect(h.report(70_000).healthy).toBe(true);
    expect(h.report(70_001)).toMatchObject({ healthy: false, reason: /waited 60s/ });
    h.synced(80_000);
    expect(h.report(200_000).healthy).toBe(true);
  });
});

describe('observability HTTP server', () => {
  let srv: ObservabilityServer | undefined;
  afterEach(async () => {
    await srv?.close();
    srv = undefined;
  });

  it('serves /healthz with 503 then 200, and /metrics with kube-proxy names', async () => {
    const health = new HealthState(1000);
    const metrics = new ProxyMetrics();
    let now = 5000;
    srv = await startObservabilityServer('127.0.0.1:0', { health, metrics }, () => now);
    const base = `http://127.0.0.1:${srv.address.port}`;

    let res = await fetch(`${base}/healthz`);
    expect(res.status).toBe(503);
    health.synced(now);
    now += 10;
    res = await fetch(`${base}/livez`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ healthy: true });

    metrics.recordSync('partial', 0.003, 1234);
    metrics.offloadEnabled.set(0);
    const text = await (await fetch(`${base}/metrics`)).text();
    expect(text).toMatch(/^kubeproxy_sync_proxy_rules_duration_seconds_count 1$/m);
    expect(text).toMatch(/^kubeproxy_sync_partial_proxy_rules_duration_seconds_count 1$/m);
    expect(text).toMatch(/^kubeproxy_sync_proxy_rules_last_timestamp_seconds 1234$/m);
    expect(text).toMatch(/^kube_nft_proxy_flowtable_offload_enabled 0$/m);

    expect((await fetch(`${base}/nope`)).status).toBe(404);
  });
});

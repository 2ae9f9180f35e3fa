// The health-check node port manager over loopback with real HTTP: answers as
// kube-proxy's, opens, changes and closes ports as the model changes, and
// survives (and retries) a port it cannot bind.

import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { healthCheckAddresses, HealthCheckServers, type ListenAddress } from '../../src/agent/health-check-servers.ts';
import type { HealthCheckService } from '../../src/model/local-endpoints.ts';
import { ConnectionBudget } from '../../src/observability/limited-http.ts';
import { recordingLogger, waitFor } from '../streams/helpers.ts';

const LOOPBACK: ListenAddress[] = [{ host: '127.0.0.1', ipv6Only: false }];

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

async function probe(port: number): Promise<{ status: number; body?: unknown; headers?: Headers } | 'refused'> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/`);
    return { status: res.status, body: await res.json(), headers: res.headers };
  } catch (e) {
    if ((e as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED') return 'refused';
    throw e;
  }
}

const services = (...list: HealthCheckService[]) => new Map(list.map((s) => [`${s.namespace}/${s.name}`, s]));

describe('HealthCheckServers', { timeout: 20_000 }, () => {
  const cleanup: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  function manager(o: { healthy?: () => boolean } = {}) {
    const failures: string[] = [];
    const log = recordingLogger();
    const hc = new HealthCheckServers({
      logger: log.logger,
      proxyHealthy: o.healthy ?? (() => true),
      budget: new ConnectionBudget(16),
      onBindFailure: (svc, port, err) => failures.push(`${svc.namespace}/${svc.name} ${port} ${(err as NodeJS.ErrnoException).code}`),
      retryMs: 100,
    });
    cleanup.push(() => hc.close());
    return { hc, failures, log };
  }

  it('answers as kube-proxy: 200 with a local endpoint and a healthy proxy, else 503', async () => {
    let healthy = true;
    const { hc } = manager({ healthy: () => healthy });
    const port = await freePort();
    await hc.sync(services({ namespace: 'shop', name: 'web', port, localEndpoints: 2 }), LOOPBACK);
    const ok = await probe(port);
    if (ok === 'refused') throw new Error('refused');
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ service: { namespace: 'shop', name: 'web' }, localEndpoints: 2, serviceProxyHealthy: true });
    expect(ok.headers!.get('content-type')).toBe('application/json');
    expect(ok.headers!.get('x-content-type-options')).toBe('nosniff');

    await hc.sync(services({ namespace: 'shop', name: 'web', port, localEndpoints: 0 }), LOOPBACK);
    expect(await probe(port)).toMatchObject({ status: 503, body: { localEndpoints: 0, serviceProxyHealthy: true } });

    await hc.sync(services({ namespace: 'shop', name: 'web', port, localEndpoints: 1 }), LOOPBACK);
    healthy = false;
    expect(await probe(port)).toMatchObject({ status: 503, body: { localEndpoints: 1, serviceProxyHealthy: false } });
    // The same limits as every agent server: no request bodies.
    const post = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: 'x' });
    expect(post.status).toBe(413);
  });

  it('moves a changed port and closes a removed Service', async () => {
    const { hc } = manager();
    const [p1, p2, p3] = [await freePort(), await freePort(), await freePort()];
    await hc.sync(
      services({ namespace: 'a', name: 'one', port: p1, localEndpoints: 1 }, { namespace: 'a', name: 'two', port: p3, localEndpoints: 1 }),
      LOOPBACK,
    );
    expect(await probe(p1)).toMatchObject({ status: 200 });
    await hc.sync(
      services({ namespace: 'a', name: 'one', port: p2, localEndpoints: 1 }, { namespace: 'a', name: 'two', port: p3, localEndpoints: 1 }),
      LOOPBACK,
    );
    expect(await probe(p1)).toBe('refused');
    expect(await probe(p2)).toMatchObject({ status: 200, body: { service: { name: 'one' } } });
    await hc.sync(services({ namespace: 'a', name: 'one', port: p2, localEndpoints: 1 }), LOOPBACK);
    expect(await probe(p3)).toBe('refused');
    expect([...hc.serving.keys()]).toEqual(['a/one']);
  });

  it('logs, reports and retries a port it cannot bind, and serves the others meanwhile', async () => {
    const { hc, failures, log } = manager();
    const busy = await freePort();
    const other = await freePort();
    const squatter: Server = createServer();
    await new Promise<void>((r) => squatter.listen(busy, '127.0.0.1', r));
    let squatting = true;
    cleanup.push(() => (squatting ? new Promise((r) => squatter.close(r)) : Promise.resolve()));

    await hc.sync(
      services(
        { namespace: 'a', name: 'busy', port: busy, localEndpoints: 1 },
        { namespace: 'a', name: 'free', port: other, localEndpoints: 1 },
      ),
      LOOPBACK,
    );
    expect(failures[0]).toBe(`a/busy ${busy} EADDRINUSE`);
    expect(await probe(other)).toMatchObject({ status: 200 });
    await waitFor(() => failures.length >= 2, 5000, 'a retry');
    // One error line, not one per retry.
    expect(log.find('failed to open health-check node port; retrying')).toHaveLength(1);

    await new Promise((r) => squatter.close(r));
    squatting = false;
    await waitFor(() => hc.serving.has('a/busy'), 5000, 'the port to be taken once free');
    expect(await probe(busy)).toMatchObject({ status: 200, body: { service: { name: 'busy' } } });
  });

  it('listens on every address only when NodePorts are accepted on all of them', () => {
    expect(healthCheckAddresses(() => 'all')).toEqual([{ host: '::', ipv6Only: false }]);
    expect(healthCheckAddresses((f) => (f === 'IPv4' ? ['192.0.2.1'] : 'all'))).toEqual([
      { host: '192.0.2.1', ipv6Only: false },
      { host: '::', ipv6Only: true },
    ]);
    expect(healthCheckAddresses((f) => (f === 'IPv4' ? ['192.0.2.1'] : []))).toEqual([{ host: '192.0.2.1', ipv6Only: false }]);
  });
});

// The agent's HTTP servers against slow and greedy clients, over loopback:
// connections past the budget are closed on arrival, a client that never
// finishes its headers is cut off after the header timeout, and the server
// serves normally once the flood is gone.

import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HealthState } from '../../src/observability/health.ts';
import { startObservabilityServer, type ObservabilityServer } from '../../src/observability/http-server.ts';
import type { HttpLimits } from '../../src/observability/limited-http.ts';
import { ProxyMetrics } from '../../src/observability/metrics.ts';

const LIMITS: HttpLimits = { headersTimeoutMs: 600, requestTimeoutMs: 1200, keepAliveTimeoutMs: 500, maxHeaderBytes: 8 * 1024 };

/** Opens a connection that sends a request line and then one header byte every 100 ms, forever. */
function slowClient(port: number): Promise<{ socket: Socket; closed: Promise<number> }> {
  return new Promise((resolve) => {
    const opened = Date.now();
    const socket = connect({ host: '127.0.0.1', port });
    let timer: NodeJS.Timeout | undefined;
    const closed = new Promise<number>((done) =>
      socket.on('close', () => {
        clearInterval(timer);
        done(Date.now() - opened);
      }),
    );
    socket.on('error', () => {});
    socket.on('connect', () => {
      socket.write('GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ');
      timer = setInterval(() => socket.write('a'), 100);
      resolve({ socket, closed });
    });
  });
}

describe('HTTP server limits', { timeout: 30_000 }, () => {
  let srv: ObservabilityServer | undefined;
  afterEach(async () => {
    await srv?.close();
    srv = undefined;
  });

  it('caps slow-header connections and times them out', async () => {
    const metrics = new ProxyMetrics();
    let refused = 0;
    srv = await startObservabilityServer('127.0.0.1:0', { health: new HealthState(60_000), metrics }, { limits: LIMITS, maxConnections: 16, onRefused: () => refused++ });
    const port = srv.address.port;
    const clients = await Promise.all(Array.from({ length: 200 }, () => slowClient(port)));
    // Never more open than the budget, whatever the flood.
    await new Promise((r) => setTimeout(r, 200));
    expect(srv.budget.open).toBeLessThanOrEqual(16);
    const lifetimes = await Promise.all(clients.map((c) => c.closed));
    // Every connection ended: 184 at once, 16 at the header timeout (a hostile client lives no longer).
    expect(refused).toBe(200 - 16);
    expect(srv.budget.refused).toBe(184);
    const timedOut = lifetimes.filter((ms) => ms >= LIMITS.headersTimeoutMs);
    expect(timedOut.length).toBe(16);
    expect(Math.max(...lifetimes)).toBeLessThan(LIMITS.headersTimeoutMs + 5_000);
    expect(srv.budget.open).toBe(0);
    // And once they are gone, a probe gets its answer.
    const res = await fetch(`http://127.0.0.1:${port}/livez`);
    expect(res.status).toBe(200);
  });

  it('refuses oversized headers', async () => {
    srv = await startObservabilityServer('127.0.0.1:0', { metrics: new ProxyMetrics() }, { limits: LIMITS });
    const res = await fetch(`http://127.0.0.1:${srv.address.port}/metrics`, { headers: { 'x-big': 'a'.repeat(16 * 1024) } });
    expect(res.status).toBe(431);
  });
});

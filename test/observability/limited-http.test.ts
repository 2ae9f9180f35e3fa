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
import { waitFor } from '../streams/helpers.ts';

const LIMITS: HttpLimits = { headersTimeoutMs: 600, requestTimeoutMs: 1200, keepAliveTimeoutMs: 500, maxHeaderBytes: 8 * 1024 };
/** Headers due in 2 s; a whole request could take 60 s: the header deadline is what must end a slow client. */
const SLOW: HttpLimits = { headersTimeoutMs: 2_000, requestTimeoutMs: 60_000, keepAliveTimeoutMs: 500, maxHeaderBytes: 8 * 1024 };

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
    srv = await startObservabilityServer(
      '127.0.0.1:0',
      { health: new HealthState(60_000), metrics },
      { limits: SLOW, maxConnections: 16, onRefused: () => refused++ },
    );
    const port = srv.address.port;
    // The budget fills up with slow clients that keep sending header bytes...
    const first = await Promise.all(Array.from({ length: 16 }, () => slowClient(port)));
    await waitFor(() => srv!.budget.open === 16, 5000, 'sixteen open connections');
    // ...and every further connection is closed on arrival, while they hold it.
    const flood = await Promise.all(Array.from({ length: 184 }, () => slowClient(port)));
    await Promise.all(flood.map((c) => c.closed));
    expect(refused).toBe(184);
    expect(srv.budget.refused).toBe(184);
    expect(srv.budget.open).toBe(16);
    // The slow ones are cut at the header timeout, although they never stop sending
    // (the request timeout, far longer, is not what ends them).
    const lifetimes = await Promise.all(first.map((c) => c.closed));
    expect(Math.min(...lifetimes)).toBeGreaterThanOrEqual(SLOW.headersTimeoutMs - 100);
    expect(Math.max(...lifetimes)).toBeLessThan(SLOW.requestTimeoutMs);
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

// The agent's HTTP endpoints: /healthz and /livez (kube-proxy's health port) and
// /metrics (Prometheus). Thin: all decisions live in HealthState and ProxyMetrics.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HealthState } from './health.ts';
import type { ProxyMetrics } from './metrics.ts';

export interface ObservabilityServer {
  server: Server;
  address: AddressInfo;
  close(): Promise<void>;
}

function splitHostPort(bind: string): { host: string; port: number } {
  const colon = bind.lastIndexOf(':');
  return { host: bind.slice(0, colon).replace(/^\[(.*)\]$/, '$1') || '::', port: Number(bind.slice(colon + 1)) };
}

export async function startObservabilityServer(
  bind: string,
  routes: { health?: HealthState; metrics?: ProxyMetrics },
  now: () => number = Date.now,
): Promise<ObservabilityServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if ((path === '/healthz' || path === '/livez') && routes.health) {
      const report = routes.health.report(now());
      res.writeHead(report.healthy ? 200 : 503, { 'content-type': 'application/json' });
      res.end(JSON.stringify(report));
      return;
    }
    if (path === '/metrics' && routes.metrics) {
      routes.metrics.registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'content-type': routes.metrics!.registry.contentType });
          res.end(text);
        },
        (e: Error) => {
          res.writeHead(500);
          res.end(e.message);
        },
      );
      return;
    }
    res.writeHead(404);
    res.end('not found\n');
  });
  const { host, port } = splitHostPort(bind);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    server,
    address: server.address() as AddressInfo,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

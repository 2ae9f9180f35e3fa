// The agent's HTTP endpoints, as kube-proxy serves them:
// - the health port: /healthz (proxy and Node eligibility) and /livez (proxy
//   only), each answer counted in kubeproxy_proxy_{healthz,livez}_total;
// - the metrics port: /metrics (Prometheus), /proxyMode ("nftables") and a
//   plain /healthz ("ok"), as kube-proxy's metrics mux has.
// Thin: decisions live in HealthState and ProxyMetrics; limits in limited-http.ts.

import type { Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HealthAnswer, HealthState } from './health.ts';
import {
  closeServer,
  ConnectionBudget,
  createLimitedServer,
  DEFAULT_HTTP_LIMITS,
  type HttpLimits,
  listen,
  splitHostPort,
} from './limited-http.ts';
import type { ProxyMetrics } from './metrics.ts';

export interface ObservabilityServer {
  server: Server;
  address: AddressInfo;
  budget: ConnectionBudget;
  close(): Promise<void>;
}

/** Open connections one observability server takes: probes and a scraper or two need a handful. */
export const OBSERVABILITY_MAX_CONNECTIONS = 32;

export interface ObservabilityServerOptions {
  now?: () => number;
  limits?: HttpLimits;
  maxConnections?: number;
  /** Called for each connection closed because maxConnections were open. */
  onRefused?: () => void;
}

function sendHealth(res: ServerResponse, answer: HealthAnswer): void {
  res.writeHead(answer.status, { 'content-type': 'application/json', 'x-content-type-options': 'nosniff' });
  res.end(answer.body);
}

export async function startObservabilityServer(
  bind: string,
  routes: { health?: HealthState; metrics?: ProxyMetrics },
  options: ObservabilityServerOptions = {},
): Promise<ObservabilityServer> {
  const now = options.now ?? Date.now;
  const budget = new ConnectionBudget(options.maxConnections ?? OBSERVABILITY_MAX_CONNECTIONS, options.onRefused);
  const server = createLimitedServer(
    (req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path === '/healthz' && routes.health) {
        const answer = routes.health.healthz(now());
        routes.metrics?.healthzTotal.inc({ code: String(answer.status) });
        return sendHealth(res, answer);
      }
      if (path === '/livez' && routes.health) {
        const answer = routes.health.livez(now());
        routes.metrics?.livezTotal.inc({ code: String(answer.status) });
        return sendHealth(res, answer);
      }
      if (routes.metrics && path === '/metrics') {
        const metrics = routes.metrics;
        metrics.exposition().then(
          (text) => {
            res.writeHead(200, { 'content-type': metrics.registry.contentType });
            res.end(text);
          },
          (e: Error) => {
            res.writeHead(500);
            res.end(e.message);
          },
        );
        return;
      }
      if (routes.metrics && path === '/proxyMode') {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' });
        return void res.end('nftables');
      }
      if (routes.metrics && path === '/healthz') {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' });
        return void res.end('ok');
      }
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found\n');
    },
    budget,
    options.limits ?? DEFAULT_HTTP_LIMITS,
  );
  const { host, port } = splitHostPort(bind);
  const address = await listen(server, host, port);
  return { server, address, budget, close: () => closeServer(server) };
}

// Health-check node ports, as kube-proxy 1.32 serves them
// (pkg/proxy/healthcheck/service_health.go): for every Service with
// externalTrafficPolicy Local, an HTTP server on its healthCheckNodePort on
// the node's NodePort addresses. Cloud load balancers probe it on every node
// and send traffic only where it answers 200:
//
//   200 when the Service has a local ready endpoint and the proxy is healthy,
//   503 otherwise; body {"service":{"namespace","name"},"localEndpoints",
//   "serviceProxyHealthy"}; Content-Type application/json, nosniff.
//
// After every successful sync the agent hands over the model's current set.
// A Service that is gone, or whose port changed, is closed; a new one is
// opened; endpoint counts change in place (the handler reads them per
// request). A port that cannot be bound (EADDRINUSE, EACCES...) is logged,
// counted and retried a few seconds later and at every sync; it is never
// fatal. Calls are serialised: sync() never blocks the caller's sync.

import type { Server, ServerResponse } from 'node:http';
import type { IPFamily } from '../k8s/types.ts';
import type { HealthCheckService } from '../model/local-endpoints.ts';
import type { Logger } from '../observability/logger.ts';
import {
  closeServer,
  type ConnectionBudget,
  createLimitedServer,
  DEFAULT_HTTP_LIMITS,
  type HttpLimits,
  listen,
} from '../observability/limited-http.ts';

/** Where every health-check port listens: an address, or every address ('::' or '0.0.0.0'). */
export interface ListenAddress {
  host: string;
  /** For '::' when only IPv6 is wanted. */
  ipv6Only: boolean;
}

export interface HealthCheckServersOptions {
  logger: Logger;
  /** The proxy's own health (without the Node), read per request. */
  proxyHealthy: () => boolean;
  /** Shared by every health-check port: a flood on one cannot open unbounded sockets. */
  budget: ConnectionBudget;
  limits?: HttpLimits;
  /** A port could not be bound (after logging): metrics, a Warning Event. */
  onBindFailure?: (service: { namespace: string; name: string }, port: number, error: Error) => void;
  /** Open health-check node ports changed. */
  onServing?: (count: number) => void;
  retryMs?: number;
}

interface Instance {
  service: HealthCheckService;
  servers: Server[];
}

const DEFAULT_RETRY_MS = 5_000;

/**
 * kube-proxy's choice: every address when NodePorts are accepted on all of
 * them, else exactly the NodePort addresses (per family, from
 * --nodeport-addresses: the Node's primary IPs by default).
 */
export function healthCheckAddresses(nodePortAddresses: (family: IPFamily) => 'all' | string[]): ListenAddress[] {
  const v4 = nodePortAddresses('IPv4');
  const v6 = nodePortAddresses('IPv6');
  if (v4 === 'all' && v6 === 'all') return [{ host: '::', ipv6Only: false }];
  const out: ListenAddress[] = [];
  if (v4 === 'all') out.push({ host: '0.0.0.0', ipv6Only: false });
  else for (const a of v4) out.push({ host: a, ipv6Only: false });
  if (v6 === 'all') out.push({ host: '::', ipv6Only: true });
  else for (const a of v6) out.push({ host: a, ipv6Only: false });
  return out;
}

export class HealthCheckServers {
  readonly #o: HealthCheckServersOptions;
  readonly #open = new Map<string, Instance>();
  /** Ports that failed to bind, by service key: logged once until they bind or change. */
  readonly #failing = new Map<string, number>();
  #addressesKey = '';
  #chain: Promise<void> = Promise.resolve();
  #retry: NodeJS.Timeout | undefined;
  #last: { services: Map<string, HealthCheckService>; addresses: ListenAddress[] } | undefined;
  #closed = false;

  constructor(options: HealthCheckServersOptions) {
    this.#o = options;
  }

  /** Services served now, with their current counts (for tests and embedders). */
  get serving(): ReadonlyMap<string, HealthCheckService> {
    const out = new Map<string, HealthCheckService>();
    for (const [k, i] of this.#open) out.set(k, i.service);
    return out;
  }

  /** Makes the open ports match `services` on `addresses`; resolves once done (callers need not wait). */
  sync(services: Map<string, HealthCheckService>, addresses: ListenAddress[]): Promise<void> {
    this.#last = { services, addresses };
    // One failure must not stop every later sync: log it and go on.
    this.#chain = this.#chain
      .then(() => this.#apply(services, addresses))
      .catch((err: unknown) => this.#o.logger.error({ err }, 'health-check node ports could not be updated; retrying at the next sync'));
    return this.#chain;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    await this.#chain;
    await Promise.all([...this.#open.values()].map((i) => this.#closeInstance(i)));
    this.#open.clear();
  }

  async #apply(services: Map<string, HealthCheckService>, addresses: ListenAddress[]): Promise<void> {
    if (this.#closed) return;
    const addressesKey = addresses.map((a) => `${a.host}/${a.ipv6Only}`).join(',');
    const moved = addressesKey !== this.#addressesKey;
    this.#addressesKey = addressesKey;
    for (const [key, inst] of this.#open) {
      const want = services.get(key);
      if (want !== undefined && want.port === inst.service.port && !moved) continue;
      this.#o.logger.info({ service: key, port: inst.service.port }, 'closing health-check node port');
      this.#open.delete(key);
      await this.#closeInstance(inst);
    }
    for (const key of this.#failing.keys()) if (!services.has(key)) this.#failing.delete(key);
    let failed = false;
    for (const [key, want] of services) {
      const inst = this.#open.get(key);
      if (inst !== undefined) {
        inst.service = want; // new endpoint count, same port
        continue;
      }
      if (!(await this.#openInstance(key, want, addresses))) failed = true;
    }
    this.#o.onServing?.(this.#open.size);
    clearTimeout(this.#retry);
    this.#retry = undefined;
    if (failed && !this.#closed) {
      this.#retry = setTimeout(() => {
        if (this.#last) void this.sync(this.#last.services, this.#last.addresses);
      }, this.#o.retryMs ?? DEFAULT_RETRY_MS);
      this.#retry.unref();
    }
  }

  async #openInstance(key: string, service: HealthCheckService, addresses: ListenAddress[]): Promise<boolean> {
    const inst: Instance = { service, servers: [] };
    try {
      for (const a of addresses) {
        const server = createLimitedServer((_req, res) => this.#answer(inst, res), this.#o.budget, this.#o.limits ?? DEFAULT_HTTP_LIMITS);
        inst.servers.push(server);
        await listen(server, a.host, service.port, a.ipv6Only);
      }
    } catch (e) {
      // As kube-proxy: close what did open, so a retry (or the port's new owner) starts clean.
      await this.#closeInstance(inst);
      const err = e as Error;
      this.#o.onBindFailure?.({ namespace: service.namespace, name: service.name }, service.port, err);
      if (this.#failing.get(key) !== service.port) {
        this.#failing.set(key, service.port);
        this.#o.logger.error({ service: key, port: service.port, err }, 'failed to open health-check node port; retrying');
      }
      return false;
    }
    if (this.#failing.delete(key))
      this.#o.logger.info({ service: key, port: service.port }, 'health-check node port open after earlier failures');
    else
      this.#o.logger.info({ service: key, port: service.port, addresses: addresses.map((a) => a.host) }, 'opening health-check node port');
    this.#open.set(key, inst);
    return true;
  }

  #answer(inst: Instance, res: ServerResponse): void {
    const { namespace, name, localEndpoints } = inst.service;
    const healthy = this.#o.proxyHealthy();
    res.writeHead(localEndpoints > 0 && healthy ? 200 : 503, { 'content-type': 'application/json', 'x-content-type-options': 'nosniff' });
    res.end(JSON.stringify({ service: { namespace, name }, localEndpoints, serviceProxyHealthy: healthy }));
  }

  async #closeInstance(inst: Instance): Promise<void> {
    await Promise.all(inst.servers.map((s) => closeServer(s)));
  }
}

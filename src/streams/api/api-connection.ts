// How we reach the API server: base URL, an HTTP client carrying the TLS
// material, and the request headers (bearer token, basic auth) computed on
// every request, so tokens that rotate (projected service-account tokens,
// exec plugins) stay fresh.
//
// The client honours proxies (proxy-url, HTTPS_PROXY/NO_PROXY) and follows
// rotated TLS files (rotating-client.ts); requests are spaced by clientConnection's
// qps and burst, as client-go's token bucket spaces them.
//
// Two ways to get there (see src/streams/api/kubeconfig.ts for why):
// - our own loader, for in-cluster and plain kubeconfig files: no
//   @kubernetes/client-node at all;
// - client-node's KubeConfig (its authentication/TLS helpers), imported
//   lazily and only for what our loader hands over (exec, auth providers,
//   impersonation, proxies, merged KUBECONFIG lists) or when an embedder
//   passes a KubeConfig object. Loading it costs ~80 MiB RSS.
// Requests are our own HTTP client's either way (client-node's generated
// client and watch are slower and less resilient, see FACTS.md).

import type { KubeConfig } from '@kubernetes/client-node';
import type https from 'node:https';
import type { HttpClient } from './http-client.ts';
import { buildHttpClient, RotatingHttpClient } from './rotating-client.ts';
import { authHeaders, KubeConfigError, loadClusterAccess, type ClusterAccess, type LoadOptions } from './kubeconfig.ts';

export { KubeConfigError };

export interface ApiConnection {
  /** Origin plus any path prefix, without a trailing slash. */
  readonly baseUrl: string;
  /** The client for the next request (it changes when TLS files rotate); read it after headers(). */
  readonly client: HttpClient;
  /** The next request's headers; waits for the rate limit, and picks up rotated TLS files. */
  headers(): Promise<Record<string, string>>;
  close(): Promise<void>;
  /** How it was configured, for logs: 'in-cluster', a kubeconfig path, or 'client-node (<why>)'. */
  readonly via: string;
}

/** Loads client-node's KubeConfig: an explicit file, else in-cluster, else its default chain. */
async function loadKubeConfig(file?: string): Promise<KubeConfig> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  if (file) kc.loadFromFile(file);
  else if (process.env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
  else kc.loadFromDefault();
  return kc;
}

async function requestOptions(kc: KubeConfig): Promise<https.RequestOptions> {
  const opts: https.RequestOptions = { headers: {} };
  await kc.applyToHTTPSOptions(opts);
  return opts;
}

function headersOf(opts: https.RequestOptions): Record<string, string> {
  const out: Record<string, string> = { accept: 'application/json' };
  for (const [k, v] of Object.entries(opts.headers ?? {})) if (v !== undefined) out[k.toLowerCase()] = String(v);
  if (opts.auth) out.authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
  return out;
}

export interface ConnectionOptions {
  /** Keep-alive for idle pooled connections (lists between watches). */
  keepAliveTimeoutMs?: number;
  /** --master: the API server's URL instead of the kubeconfig's. */
  server?: string;
  /** clientConnection.qps and burst (0 or absent: no limit). */
  qps?: number;
  burst?: number;
  /** Environment for HTTPS_PROXY/NO_PROXY (default process.env). */
  env?: Record<string, string | undefined>;
}

/** client-go's token bucket: `burst` requests at once, then one every 1/qps s. */
export class RateLimiter {
  #tokens: number;
  #last: number | undefined;
  readonly #qps: number;
  readonly #burst: number;
  constructor(qps: number, burst: number) {
    this.#qps = qps;
    this.#burst = Math.max(1, burst);
    this.#tokens = this.#burst;
  }
  /** Milliseconds to wait before the next request may go (and takes its token). */
  take(now = Date.now()): number {
    if (!(this.#qps > 0)) return 0;
    this.#tokens = Math.min(this.#burst, this.#tokens + ((now - (this.#last ?? now)) / 1000) * this.#qps);
    this.#last = now;
    this.#tokens -= 1;
    return this.#tokens >= 0 ? 0 : Math.ceil((-this.#tokens / this.#qps) * 1000);
  }
}

function limiter(o: ConnectionOptions): () => Promise<void> {
  if (!(o.qps !== undefined && o.qps > 0)) return async () => {};
  const bucket = new RateLimiter(o.qps, o.burst ?? 1);
  return async () => {
    const wait = bucket.take();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  };
}

function baseUrlOf(server: string): string {
  let base: URL;
  try {
    base = new URL(server);
  } catch {
    throw new KubeConfigError(`server is not a URL: ${server}`);
  }
  if (base.protocol !== 'https:' && base.protocol !== 'http:') throw new KubeConfigError(`unsupported server URL ${server}`);
  return `${base.origin}${base.pathname.replace(/\/+$/, '')}`;
}

/** A connection from what our own loader read (no client-node). */
export function connectionFromAccess(access: ClusterAccess, options: ConnectionOptions = {}): ApiConnection {
  const tls = {
    rejectUnauthorized: !access.insecureSkipTLSVerify,
    ...(access.ca ? { ca: access.ca } : {}),
    ...(access.cert ? { cert: access.cert } : {}),
    ...(access.key ? { key: access.key } : {}),
    ...(access.servername ? { servername: access.servername } : {}),
  };
  const rotating = new RotatingHttpClient(tls, access.files ?? {}, {
    ...(access.proxyUrl !== undefined ? { proxyUrl: access.proxyUrl, proxyUrlField: `${access.source}: cluster.proxy-url` } : {}),
    ...(options.env ? { env: options.env } : {}),
    keepAliveTimeoutMs: options.keepAliveTimeoutMs,
  });
  const wait = limiter(options);
  return {
    baseUrl: baseUrlOf(options.server ?? access.server),
    get client() {
      return rotating.client;
    },
    async headers() {
      await wait();
      await rotating.current();
      return { accept: 'application/json', ...(await authHeaders(access.credentials)) };
    },
    close: () => rotating.close(),
    via: access.source,
  };
}

/**
 * The connection for a kubeconfig path (undefined: in-cluster, then
 * $KUBECONFIG, then ~/.kube/config) or a client-node KubeConfig object.
 */
export async function connect(kubeConfig?: KubeConfig | string, options: ConnectionOptions & LoadOptions = {}): Promise<ApiConnection> {
  if (typeof kubeConfig === 'object') return connectionFromKubeConfig(kubeConfig, options);
  const access = await loadClusterAccess(kubeConfig, options);
  if ('needsClientNode' in access) {
    const conn = await connectionFromKubeConfig(await loadKubeConfig(access.file), options);
    return { ...conn, via: `client-node (${access.needsClientNode})` };
  }
  return connectionFromAccess(access, options);
}

/** A connection configured by client-node's KubeConfig (its auth and TLS helpers). */
async function connectionFromKubeConfig(kc: KubeConfig, options: ConnectionOptions = {}): Promise<ApiConnection> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new KubeConfigError('kubeconfig has no current cluster');
  const baseUrl = baseUrlOf(options.server ?? cluster.server);
  const first = await requestOptions(kc);
  if (first.pfx !== undefined || first.passphrase !== undefined)
    throw new KubeConfigError('a PKCS#12 client certificate (pfx) is not supported');
  const tls = {
    rejectUnauthorized: first.rejectUnauthorized !== false,
    ...(first.ca ? { ca: first.ca as Buffer } : {}),
    ...(first.cert ? { cert: first.cert as Buffer } : {}),
    ...(first.key ? { key: first.key as Buffer } : {}),
    ...(first.servername ? { servername: first.servername } : {}),
  };
  // client-node builds its own proxy agent, which we do not use: honour proxy-url here.
  const client = buildHttpClient(tls, {
    ...(cluster.proxyUrl ? { proxyUrl: cluster.proxyUrl, proxyUrlField: 'cluster.proxy-url' } : {}),
    ...(options.env ? { env: options.env } : {}),
    keepAliveTimeoutMs: options.keepAliveTimeoutMs,
  });
  const wait = limiter(options);
  let fresh: Record<string, string> | undefined = headersOf(first);
  return {
    baseUrl,
    client,
    via: 'client-node',
    async headers() {
      await wait();
      // The first call reuses what we computed while building the agent.
      if (fresh) {
        const h = fresh;
        fresh = undefined;
        return h;
      }
      return headersOf(await requestOptions(kc));
    },
    close: () => client.close(),
  };
}

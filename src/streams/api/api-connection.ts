// How we reach the API server: base URL, an undici Agent carrying the TLS
// material, and the request headers (bearer token, basic auth) computed on
// every request, so tokens that rotate (projected service-account tokens,
// exec plugins) stay fresh.
//
// Two ways to get there (see src/streams/api/kubeconfig.ts for why):
// - our own loader, for in-cluster and plain kubeconfig files: no
//   @kubernetes/client-node at all;
// - client-node's KubeConfig (its authentication/TLS helpers), imported
//   lazily and only for what our loader hands over (exec, auth providers,
//   impersonation, proxies, merged KUBECONFIG lists) or when an embedder
//   passes a KubeConfig object. Loading it costs ~80 MiB RSS.
// Requests are plain undici either way (client-node's generated client and
// watch are slower and less resilient, see FACTS.md).

import type { KubeConfig } from '@kubernetes/client-node';
import type https from 'node:https';
import { Agent, type Dispatcher } from 'undici';
import { authHeaders, KubeConfigError, loadClusterAccess, type ClusterAccess, type LoadOptions } from './kubeconfig.ts';

export { KubeConfigError };

export interface ApiConnection {
  /** Origin plus any path prefix, without a trailing slash. */
  readonly baseUrl: string;
  readonly dispatcher: Dispatcher;
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
function connectionFromAccess(access: ClusterAccess, options: ConnectionOptions = {}): ApiConnection {
  const connect: Record<string, unknown> = { rejectUnauthorized: !access.insecureSkipTLSVerify };
  if (access.ca) connect.ca = access.ca;
  if (access.cert) connect.cert = access.cert;
  if (access.key) connect.key = access.key;
  if (access.servername) connect.servername = access.servername;
  const dispatcher = new Agent({ connect, keepAliveTimeout: options.keepAliveTimeoutMs ?? 30_000 });
  return {
    baseUrl: baseUrlOf(access.server),
    dispatcher,
    async headers() {
      return { accept: 'application/json', ...(await authHeaders(access.credentials)) };
    },
    close: () => dispatcher.close(),
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
  const baseUrl = baseUrlOf(cluster.server);
  const first = await requestOptions(kc);
  const connect: Record<string, unknown> = {};
  for (const k of ['ca', 'cert', 'key', 'pfx', 'passphrase', 'servername', 'rejectUnauthorized'] as const) {
    if (first[k] !== undefined) connect[k] = first[k];
  }
  const dispatcher = new Agent({ connect, keepAliveTimeout: options.keepAliveTimeoutMs ?? 30_000 });
  let fresh: Record<string, string> | undefined = headersOf(first);
  return {
    baseUrl,
    dispatcher,
    via: 'client-node',
    async headers() {
      // The first call reuses what we computed while building the agent.
      if (fresh) {
        const h = fresh;
        fresh = undefined;
        return h;
      }
      return headersOf(await requestOptions(kc));
    },
    close: () => dispatcher.close(),
  };
}

// How we reach the API server: base URL, an undici Agent carrying the
// KubeConfig's TLS material, and the request headers (bearer token, basic
// auth, impersonation) asked of the KubeConfig on every request, so tokens
// that rotate (projected service-account tokens, exec plugins) stay fresh.
//
// @kubernetes/client-node is used only for configuration and authentication;
// requests are plain undici (its generated client and watch are slower and
// less resilient, see FACTS.md). It is imported lazily: loading it costs
// ~83 MiB RSS (it pulls in its whole generated API client), which the
// manifest source and the pure parts of the agent should not pay.

import type { KubeConfig } from '@kubernetes/client-node';
import type https from 'node:https';
import { Agent, type Dispatcher } from 'undici';

export interface ApiConnection {
  /** Origin plus any path prefix, without a trailing slash. */
  readonly baseUrl: string;
  readonly dispatcher: Dispatcher;
  headers(): Promise<Record<string, string>>;
  close(): Promise<void>;
}

export class KubeConfigError extends Error {
  readonly code = 'ERR_KUBECONFIG';
  constructor(message: string) {
    super(message);
    this.name = 'KubeConfigError';
  }
}

/** Loads a kubeconfig: an explicit file, else in-cluster, else the default chain. */
export async function loadKubeConfig(file?: string): Promise<KubeConfig> {
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

export async function connectionFromKubeConfig(kc: KubeConfig, options: ConnectionOptions = {}): Promise<ApiConnection> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new KubeConfigError('kubeconfig has no current cluster');
  const base = new URL(cluster.server);
  if (base.protocol !== 'https:' && base.protocol !== 'http:') throw new KubeConfigError(`unsupported server URL ${cluster.server}`);
  const first = await requestOptions(kc);
  const connect: Record<string, unknown> = {};
  for (const k of ['ca', 'cert', 'key', 'pfx', 'passphrase', 'servername', 'rejectUnauthorized'] as const) {
    if (first[k] !== undefined) connect[k] = first[k];
  }
  const dispatcher = new Agent({ connect, keepAliveTimeout: options.keepAliveTimeoutMs ?? 30_000 });
  let fresh: Record<string, string> | undefined = headersOf(first);
  return {
    baseUrl: `${base.origin}${base.pathname.replace(/\/+$/, '')}`,
    dispatcher,
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

// The HTTP client that carries every request to the API server, built from
// what we were given and honouring all of it, as client-go does:
// - a kubeconfig `proxy-url` (http, https or socks5): through it;
// - otherwise HTTPS_PROXY / HTTP_PROXY / NO_PROXY from the environment
//   (client-go's http.ProxyFromEnvironment);
// - otherwise directly, over Node's http and https (http-client.ts).
// TLS material read from files (client certificate, key, CA: kubeadm's and
// cert-manager's rotation rewrites them in place) is re-read when a file
// changes, and later requests use a client built from the new material;
// requests in flight finish on the old one.

import { readFile, stat } from 'node:fs/promises';
import { type HttpClient, NodeHttpClient, type TlsMaterial } from './http-client.ts';
import { KubeConfigError } from './kubeconfig.ts';
import { proxyClient } from './proxy-client.ts';

/** Files the TLS material came from; each is watched for rotation. */
export interface TlsFiles {
  ca?: string;
  cert?: string;
  key?: string;
}

export interface ClientOptions {
  /** The kubeconfig's cluster.proxy-url. */
  proxyUrl?: string;
  /** Where proxy-url came from, for the error that refuses it. */
  proxyUrlField?: string;
  /** Environment for HTTPS_PROXY/HTTP_PROXY/NO_PROXY (default process.env). */
  env?: Record<string, string | undefined>;
  keepAliveTimeoutMs?: number;
}

const PROXY_SCHEMES = new Set(['http:', 'https:', 'socks5:', 'socks:']);

function envValue(env: Record<string, string | undefined>, name: string): string | undefined {
  const v = env[name.toLowerCase()] ?? env[name];
  return v === undefined || v === '' ? undefined : v;
}

/** A client for this TLS material and proxy setting; throws KubeConfigError for a proxy URL we cannot use. */
export function buildHttpClient(tls: TlsMaterial, o: ClientOptions = {}): HttpClient {
  const keepAliveTimeout = o.keepAliveTimeoutMs ?? 30_000;
  if (o.proxyUrl !== undefined) {
    let url: URL;
    try {
      url = new URL(o.proxyUrl);
    } catch {
      throw new KubeConfigError(`${o.proxyUrlField ?? 'proxy-url'}: ${JSON.stringify(o.proxyUrl)} is not a URL`);
    }
    if (!PROXY_SCHEMES.has(url.protocol)) {
      throw new KubeConfigError(`${o.proxyUrlField ?? 'proxy-url'}: scheme ${url.protocol} is not supported (http, https or socks5)`);
    }
    return proxyClient(tls, { kind: 'url', uri: o.proxyUrl }, keepAliveTimeout);
  }
  const env = o.env ?? process.env;
  const httpsProxy = envValue(env, 'HTTPS_PROXY');
  const httpProxy = envValue(env, 'HTTP_PROXY');
  if (httpsProxy !== undefined || httpProxy !== undefined) {
    const noProxy = envValue(env, 'NO_PROXY') ?? '';
    return proxyClient(
      tls,
      {
        kind: 'environment',
        ...(httpProxy !== undefined ? { httpProxy } : {}),
        ...(httpsProxy !== undefined ? { httpsProxy } : {}),
        noProxy,
      },
      keepAliveTimeout,
    );
  }
  return new NodeHttpClient(tls, keepAliveTimeout);
}

async function signature(files: TlsFiles): Promise<string> {
  const parts: string[] = [];
  for (const path of [files.ca, files.cert, files.key]) {
    if (path === undefined) continue;
    try {
      const s = await stat(path);
      parts.push(`${path}:${s.ino}:${s.size}:${s.mtimeMs}`);
    } catch {
      parts.push(`${path}:missing`);
    }
  }
  return parts.join('|');
}

/**
 * The current client, rebuilt when a TLS file changes. `current()` checks
 * the files at most once per `checkEveryMs` (requests are few: a list and a
 * watch per resource), so a rotation is picked up by the next request.
 */
export class RotatingHttpClient {
  #client: HttpClient;
  #signature: Promise<string>;
  #checkedAt = 0;
  readonly #tls: TlsMaterial;
  readonly #files: TlsFiles;
  readonly #options: ClientOptions;
  readonly #checkEveryMs: number;
  /** How many times the material was re-read (for logs and tests). */
  rotations = 0;

  constructor(tls: TlsMaterial, files: TlsFiles, options: ClientOptions = {}, checkEveryMs = 1000) {
    this.#tls = { ...tls };
    this.#files = files;
    this.#options = options;
    this.#checkEveryMs = checkEveryMs;
    this.#client = buildHttpClient(this.#tls, options);
    this.#signature = signature(files);
  }

  get client(): HttpClient {
    return this.#client;
  }

  async current(): Promise<HttpClient> {
    const watched = this.#files.ca !== undefined || this.#files.cert !== undefined || this.#files.key !== undefined;
    const now = Date.now();
    if (!watched || now - this.#checkedAt < this.#checkEveryMs) return this.#client;
    this.#checkedAt = now;
    const [before, after] = await Promise.all([this.#signature, signature(this.#files)]);
    if (before === after) return this.#client;
    try {
      const next = { ...this.#tls };
      if (this.#files.ca) next.ca = await readFile(this.#files.ca);
      if (this.#files.cert) next.cert = await readFile(this.#files.cert);
      if (this.#files.key) next.key = await readFile(this.#files.key);
      const old = this.#client;
      this.#client = buildHttpClient(next, this.#options);
      this.#signature = Promise.resolve(after);
      this.rotations++;
      // Watches in flight keep the old connection until they end; then it closes.
      void old.close().catch(() => {});
    } catch {
      // Half-written (a rotation in progress): keep the old material and look again next time.
    }
    return this.#client;
  }

  close(): Promise<void> {
    return this.#client.close();
  }
}

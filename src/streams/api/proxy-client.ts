// Requests through a proxy (a kubeconfig's proxy-url: http, https or socks5;
// or HTTPS_PROXY / HTTP_PROXY / NO_PROXY from the environment, as client-go's
// http.ProxyFromEnvironment): undici's ProxyAgent and EnvHttpProxyAgent.
// Loaded only when a proxy is configured; direct connections, the common
// case, go over Node's own http (http-client.ts).
//
// Only the parts used are loaded, by their own paths: undici's index loads
// all of it (fetch, websockets, caches, mocks...), 109 modules and 1.2 MB of
// source that V8 keeps for the life of the process, where these need 35.

import { createRequire } from 'node:module';
import type { Readable } from 'node:stream';
import type * as Undici from 'undici';
import type { HttpClient, HttpRequest, HttpResponse, TlsMaterial } from './http-client.ts';

interface UndiciParts {
  ProxyAgent: typeof Undici.ProxyAgent;
  EnvHttpProxyAgent: typeof Undici.EnvHttpProxyAgent;
}

let parts: UndiciParts | undefined;

function undiciParts(): UndiciParts {
  if (parts) return parts;
  const load = createRequire(import.meta.url);
  // As undici's index does first: its dispatchers reach each other through these methods (a proxy's CONNECT, for one).
  const api = load('undici/lib/api/index.js') as Pick<Undici.Dispatcher, 'request' | 'stream' | 'pipeline' | 'connect' | 'upgrade'>;
  Object.assign((load('undici/lib/dispatcher/dispatcher.js') as typeof Undici.Dispatcher).prototype, api);
  parts = {
    ProxyAgent: load('undici/lib/dispatcher/proxy-agent.js') as typeof Undici.ProxyAgent,
    EnvHttpProxyAgent: load('undici/lib/dispatcher/env-http-proxy-agent.js') as typeof Undici.EnvHttpProxyAgent,
  };
  return parts;
}

export type ProxySetting = { kind: 'url'; uri: string } | { kind: 'environment'; httpProxy?: string; httpsProxy?: string; noProxy: string };

/** A client whose requests go through the proxy (the TLS material is for the API server, beyond it). */
export function proxyClient(tls: TlsMaterial, proxy: ProxySetting, keepAliveTimeoutMs: number): HttpClient {
  const { ProxyAgent, EnvHttpProxyAgent } = undiciParts();
  const { kind, ...setting } = proxy;
  const dispatcher =
    kind === 'url'
      ? new ProxyAgent({ uri: proxy.uri, requestTls: tls, keepAliveTimeout: keepAliveTimeoutMs })
      : new EnvHttpProxyAgent({ ...setting, connect: tls, requestTls: tls, keepAliveTimeout: keepAliveTimeoutMs });
  return new DispatcherClient(dispatcher);
}

class DispatcherClient implements HttpClient {
  readonly #dispatcher: Undici.Dispatcher;

  constructor(dispatcher: Undici.Dispatcher) {
    this.#dispatcher = dispatcher;
  }

  async request(url: string, r: HttpRequest): Promise<HttpResponse> {
    const u = new URL(url);
    const res = await this.#dispatcher.request({
      origin: u.origin,
      path: u.search ? `${u.pathname}${u.search}` : u.pathname,
      method: r.method ?? 'GET',
      headers: r.headers,
      body: r.body,
      signal: r.signal,
      headersTimeout: r.headersTimeoutMs,
      bodyTimeout: r.bodyTimeoutMs,
    });
    return { statusCode: res.statusCode, headers: res.headers, body: res.body as unknown as Readable };
  }

  close(): Promise<void> {
    return this.#dispatcher.close();
  }
}

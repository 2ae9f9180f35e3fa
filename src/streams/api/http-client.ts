// The HTTP requests the agent makes to the API server (lists, watches,
// Events), over Node's own http and https: an agent with keep-alive carrying
// the TLS material. Node's HTTP parser is native code that ships with the
// binary, where undici's is WebAssembly compiled at each start-up, and its
// modules are in Node's own snapshot: at 1,000 Services a start-up loaded
// and made its first requests ~65 ms sooner (ten alternated cold processes,
// two lists against the fake API server over TLS). undici stays for proxies
// only (proxy-client.ts), which Node's agents do not speak.

import type { Agent as HttpAgent, IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { HttpTimeoutError } from './errors.ts';

export interface HttpRequest {
  method?: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  /** No response headers within this: the request hangs. */
  headersTimeoutMs: number;
  /** No body bytes for this long: the connection hangs. */
  bodyTimeoutMs: number;
}

export interface HttpResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  /** Read it to its end or destroy it: a kept-alive connection is reused only once its body is done. */
  body: Readable;
}

export interface HttpClient {
  request(url: string, request: HttpRequest): Promise<HttpResponse>;
  /** Closes idle connections; requests in flight finish. */
  close(): Promise<void>;
}

export interface TlsMaterial {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  servername?: string;
  rejectUnauthorized: boolean;
}

// Not `import from 'node:http'`: see limited-http.ts (an ES module import of it loads Node's own undici).
const http = process.getBuiltinModule('node:http');
const https = process.getBuiltinModule('node:https');

/** Requests over Node's http (http: URLs) and https (https: URLs, with the TLS material) agents. */
export class NodeHttpClient implements HttpClient {
  readonly #tls: TlsMaterial;
  readonly #keepAliveTimeoutMs: number;
  #http: HttpAgent | undefined;
  #https: HttpAgent | undefined;
  #closed = false;

  constructor(tls: TlsMaterial, keepAliveTimeoutMs: number) {
    this.#tls = tls;
    this.#keepAliveTimeoutMs = keepAliveTimeoutMs;
  }

  request(url: string, r: HttpRequest): Promise<HttpResponse> {
    if (r.signal?.aborted) return Promise.reject(abortError(r.signal));
    const u = new URL(url);
    const secure = u.protocol === 'https:';
    const req = (secure ? https : http).request(u, {
      agent: secure ? this.#httpsAgent() : this.#httpAgent(),
      method: r.method ?? 'GET',
      headers: r.body === undefined ? r.headers : { ...r.headers, 'content-length': String(Buffer.byteLength(r.body)) },
    });
    return new Promise<HttpResponse>((resolve, reject) => {
      const headersTimer = setTimeout(() => req.destroy(new HttpTimeoutError('headers', r.headersTimeoutMs)), r.headersTimeoutMs);
      let response: IncomingMessage | undefined;
      const onAbort = () => {
        const reason = abortError(r.signal!);
        if (response) response.destroy(reason);
        else req.destroy(reason);
      };
      const done = () => {
        clearTimeout(headersTimer);
        r.signal?.removeEventListener('abort', onAbort);
      };
      r.signal?.addEventListener('abort', onAbort, { once: true });
      req.on('error', (e) => {
        done();
        reject(e);
      });
      req.once('response', (res) => {
        clearTimeout(headersTimer);
        response = res;
        // Its reader gets its error (a stream's iterator rethrows it); one that has not started reading yet must not crash the process.
        res.on('error', () => {});
        // A body that sends nothing for this long is destroyed with the timeout, which its reader then throws.
        req.setTimeout(r.bodyTimeoutMs, () => res.destroy(new HttpTimeoutError('body', r.bodyTimeoutMs)));
        res.once('close', done);
        resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body: res });
      });
      req.end(r.body);
    });
  }

  /**
   * Idle connections close now, the others once their response is done:
   * after a TLS rotation, watches in flight finish on the old material.
   */
  async close(): Promise<void> {
    this.#closed = true;
    for (const agent of [this.#http, this.#https])
      for (const sockets of Object.values(agent?.freeSockets ?? {})) for (const s of sockets ?? []) s.destroy();
  }

  #httpAgent(): HttpAgent {
    this.#http ??= this.#keptAlive(new http.Agent({ keepAlive: true, timeout: this.#keepAliveTimeoutMs }));
    return this.#http;
  }

  #httpsAgent(): HttpAgent {
    this.#https ??= this.#keptAlive(new https.Agent({ keepAlive: true, timeout: this.#keepAliveTimeoutMs, ...this.#tls }));
    return this.#https;
  }

  /** The agent keeps a finished request's connection only while the client is open (Node's documented hook). */
  #keptAlive(agent: HttpAgent): HttpAgent {
    const keep = agent.keepSocketAlive.bind(agent);
    agent.keepSocketAlive = (socket) => !this.#closed && keep(socket);
    return agent;
  }
}

function abortError(signal: AbortSignal): Error {
  return new DOMException('This operation was aborted', { name: 'AbortError', cause: signal.reason });
}

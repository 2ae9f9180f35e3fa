// The API client's direct HTTP client (Node's http and https) against a real
// server on loopback: connections kept alive, closed gracefully after a TLS
// rotation, requests aborted before and during their body, bodies posted.
// Timeouts and dropped connections are in apiserver-faults.test.ts, TLS and
// client certificates in api-client.test.ts.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type HttpClient, NodeHttpClient } from '../../src/streams/api/http-client.ts';

const T = { headersTimeoutMs: 5000, bodyTimeoutMs: 5000 };

interface Loopback {
  url: string;
  server: Server;
  /** Every connection the server accepted, open or closed. */
  sockets: Socket[];
}

const servers: Server[] = [];
const clients: HttpClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<Loopback> {
  const server = createServer(handler);
  const sockets: Socket[] = [];
  server.on('connection', (s) => sockets.push(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, sockets };
}

function client(): HttpClient {
  const c = new NodeHttpClient({ rejectUnauthorized: true }, 30_000);
  clients.push(c);
  return c;
}

async function text(body: AsyncIterable<unknown>): Promise<string> {
  let s = '';
  for await (const c of body) s += String(c);
  return s;
}

const closed = (s: Socket) => new Promise<void>((r) => (s.closed ? r() : s.once('close', () => r())));

describe('NodeHttpClient', () => {
  it('reuses one kept-alive connection for requests one after another', async () => {
    const l = await serve((_req, res) => res.end('ok'));
    const c = client();
    for (let i = 0; i < 3; i++) expect(await text((await c.request(`${l.url}/x`, { headers: {}, ...T })).body)).toBe('ok');
    expect(l.sockets).toHaveLength(1);
  });

  it('posts a body with its length', async () => {
    let got: { method?: string; length?: string; body: string } = { body: '' };
    const l = await serve(async (req, res) => {
      got = { method: req.method, length: req.headers['content-length'], body: await text(req) };
      res.writeHead(201).end();
    });
    const res = await client().request(`${l.url}/events`, { method: 'POST', headers: {}, body: '{"é":1}', ...T });
    expect(res.statusCode).toBe(201);
    // Its length in bytes, not in characters.
    expect(got).toEqual({ method: 'POST', length: '8', body: '{"é":1}' });
  });

  it('closes idle connections at close(), and one in use once its response is done', async () => {
    let finish: (() => void) | undefined;
    const l = await serve((req, res) => {
      if (req.url === '/idle') return void res.end('idle');
      res.write('first ');
      finish = () => res.end('last');
    });
    const c = client();
    const watch = await c.request(`${l.url}/watch`, { headers: {}, ...T });
    await text((await c.request(`${l.url}/idle`, { headers: {}, ...T })).body);
    expect(l.sockets).toHaveLength(2);
    const [inUse, idle] = l.sockets as [Socket, Socket];
    await c.close();
    await closed(idle);
    expect(inUse.closed).toBe(false);
    const reading = text(watch.body);
    finish!();
    expect(await reading).toBe('first last');
    await closed(inUse);
  });

  it('rejects a request aborted before its response headers', async () => {
    const l = await serve(() => {});
    const abort = new AbortController();
    const pending = client().request(`${l.url}/hang`, { headers: {}, signal: abort.signal, ...T });
    setTimeout(() => abort.abort(new Error('stopping')), 50);
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('ends a body aborted while it streams with an AbortError for its reader, and drops the connection', async () => {
    const l = await serve((_req, res) => res.write('{"type":"ADDED"}\n'));
    const abort = new AbortController();
    const res = await client().request(`${l.url}/watch`, { headers: {}, signal: abort.signal, ...T });
    const chunks: string[] = [];
    const reading = (async () => {
      for await (const c of res.body) {
        chunks.push(String(c));
        abort.abort(new Error('stopping'));
      }
    })();
    await expect(reading).rejects.toMatchObject({ name: 'AbortError' });
    expect(chunks).toEqual(['{"type":"ADDED"}\n']);
    await closed(l.sockets[0]!);
  });

  it('does not send a request whose signal is already aborted', async () => {
    const l = await serve((_req, res) => res.end());
    const abort = new AbortController();
    abort.abort();
    await expect(client().request(`${l.url}/x`, { headers: {}, signal: abort.signal, ...T })).rejects.toMatchObject({
      name: 'AbortError',
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(l.sockets).toHaveLength(0);
  });
});

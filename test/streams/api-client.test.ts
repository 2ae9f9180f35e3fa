// The API client honours or refuses what it is given (issue #11, item 8):
// proxies from the kubeconfig and the environment, rotated TLS files, kubeconfig
// fields it cannot honour, and bounded error bodies and list pages. Against the
// fake API server over HTTPS and a tiny CONNECT proxy on loopback.

import { createServer, type Server } from 'node:http';
import { connect as netConnect, type AddressInfo } from 'node:net';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connect, RateLimiter, type ApiConnection } from '../../src/streams/api/api-connection.ts';
import { ApiStatusError } from '../../src/streams/api/errors.ts';
import { KubeConfigError } from '../../src/streams/api/kubeconfig.ts';
import { listPage, MAX_ERROR_BODY_BYTES } from '../../src/streams/api/list-watch.ts';
import { FakeApiServer, fixtures } from '../fake-apiserver/index.ts';
import { generateSelfSignedCert } from '../fake-apiserver/tls.ts';

const T = { headersTimeoutMs: 5000, bodyTimeoutMs: 5000 };
const list = (c: ApiConnection, maxBytes?: number) =>
  listPage(c, '/api/v1/services', { limit: 500 }, T, new AbortController().signal, undefined, maxBytes);

/** A CONNECT proxy on loopback that records where it was asked to go. */
async function startProxy(): Promise<{ server: Server; url: string; targets: string[] }> {
  const targets: string[] = [];
  const server = createServer((_req, res) => res.writeHead(405).end());
  server.on('connect', (req, client, head) => {
    targets.push(req.url ?? '');
    const [host, port] = (req.url ?? '').split(':');
    const upstream = netConnect(Number(port), host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, targets };
}

let dir = '';
const opened: ApiConnection[] = [];
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'knp-apiclient-'));
});
afterEach(async () => {
  for (const c of opened.splice(0)) await c.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function kubeconfigFile(name: string, doc: Record<string, unknown>): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(doc));
  return path;
}

async function open(path: string, env: Record<string, string | undefined> = {}): Promise<ApiConnection> {
  const c = await connect(path, { env });
  opened.push(c);
  return c;
}

describe('proxies', () => {
  let api: FakeApiServer;
  let proxy: Awaited<ReturnType<typeof startProxy>>;
  beforeAll(async () => {
    api = await FakeApiServer.start({ tls: true, token: 't' });
    api.create('services', fixtures.service('demo', 'web'));
    proxy = await startProxy();
  });
  afterAll(async () => {
    await api.close();
    proxy.server.close();
  });
  afterEach(() => void proxy.targets.splice(0));

  it("goes through the kubeconfig's proxy-url", async () => {
    const doc = api.kubeconfig('t') as { clusters: Array<{ cluster: Record<string, unknown> }> };
    doc.clusters[0]!.cluster['proxy-url'] = proxy.url;
    const c = await open(kubeconfigFile('proxy-url.json', doc));
    expect((await list(c)).items).toHaveLength(1);
    expect(proxy.targets).toEqual([new URL(api.url).host]);
  });

  it('goes through HTTPS_PROXY, and not for a host in NO_PROXY', async () => {
    const path = kubeconfigFile('plain.json', api.kubeconfig('t'));
    const viaProxy = await open(path, { HTTPS_PROXY: proxy.url });
    expect((await list(viaProxy)).items).toHaveLength(1);
    expect(proxy.targets).toEqual([new URL(api.url).host]);
    const direct = await open(path, { HTTPS_PROXY: proxy.url, NO_PROXY: '127.0.0.1' });
    expect((await list(direct)).items).toHaveLength(1);
    expect(proxy.targets).toHaveLength(1);
  });

  it('refuses a proxy-url it cannot use, naming the field', async () => {
    const doc = api.kubeconfig('t') as { clusters: Array<{ cluster: Record<string, unknown> }> };
    doc.clusters[0]!.cluster['proxy-url'] = 'ftp://127.0.0.1:21';
    await expect(connect(kubeconfigFile('ftp.json', doc))).rejects.toThrow(/cluster.proxy-url: scheme ftp: is not supported/);
  });
});

describe('kubeconfig fields', () => {
  it.each([
    ['cluster', 'clusters[fake].cluster.certificate-authority-file'],
    ['user', 'users[fake].user.client-cert'],
    ['context', 'contexts[fake].context.namespaces'],
  ])('refuses an unknown %s field at start-up, with its path', async (where, path) => {
    const doc = {
      clusters: [{ name: 'fake', cluster: { server: 'https://127.0.0.1:6443' } }],
      users: [{ name: 'fake', user: {} }],
      contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'fake' } }],
      'current-context': 'fake',
    } as Record<string, any>;
    const field = path.split('.').at(-1)!;
    if (where === 'cluster') doc.clusters[0].cluster[field] = '/x';
    if (where === 'user') doc.users[0].user[field] = '/x';
    if (where === 'context') doc.contexts[0].context[field] = 'x';
    const err = await connect(kubeconfigFile(`unknown-${where}.json`, doc)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeConfigError);
    expect((err as Error).message).toContain(`${path}: not a kubeconfig field this client can honour`);
  });
});

describe('client certificate rotation', () => {
  it('re-reads the certificate and key files when they change', async () => {
    const trusted = generateSelfSignedCert('client-b');
    const untrusted = generateSelfSignedCert('client-a');
    const api = await FakeApiServer.start({ tls: true, clientCA: trusted.cert });
    try {
      api.create('services', fixtures.service('demo', 'web'));
      const certFile = join(dir, 'client.crt');
      const keyFile = join(dir, 'client.key');
      const install = (c: { cert: string; key: string }) => {
        // As a rotation does: write aside, rename over.
        writeFileSync(`${certFile}.new`, c.cert);
        writeFileSync(`${keyFile}.new`, c.key);
        renameSync(`${keyFile}.new`, keyFile);
        renameSync(`${certFile}.new`, certFile);
      };
      install(untrusted);
      const doc = api.kubeconfig() as { users: Array<{ user: Record<string, unknown> }> };
      doc.users[0]!.user = { 'client-certificate': certFile, 'client-key': keyFile };
      const c = await open(kubeconfigFile('mtls.json', doc));
      await expect(list(c)).rejects.toThrow();
      install(trusted);
      await new Promise((r) => setTimeout(r, 1100)); // the files are looked at once a second at most
      expect((await list(c)).items).toHaveLength(1);
    } finally {
      await api.close();
    }
  });
});

describe('bounds', () => {
  it('reads at most 64 KiB of an error body', async () => {
    let sent = 0;
    const server = createServer((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const more = () => {
        while (sent < 64 * 2 ** 20) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end();
      };
      more();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const c = await open(
        kubeconfigFile('big-error.json', {
          clusters: [{ name: 'x', cluster: { server: url } }],
          users: [{ name: 'x', user: {} }],
          contexts: [{ name: 'x', context: { cluster: 'x', user: 'x' } }],
          'current-context': 'x',
        }),
      );
      const err = await list(c).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiStatusError);
      expect((err as ApiStatusError).status).toBe(500);
      // The client stopped reading: far less than the 64 MiB the server had to send went out.
      expect(sent).toBeLessThan(64 * 2 ** 20);
      expect(MAX_ERROR_BODY_BYTES).toBe(65536);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('refuses a list page over the bound', async () => {
    const api = await FakeApiServer.start();
    try {
      for (let i = 0; i < 50; i++) api.create('services', fixtures.service('demo', `web-${i}`));
      const c = await open(kubeconfigFile('plain-http.json', api.kubeconfig()));
      expect((await list(c)).items).toHaveLength(50);
      await expect(list(c, 4096)).rejects.toThrow(/list page larger than 4096 bytes refused/);
    } finally {
      await api.close();
    }
  });
});

describe('--master', () => {
  it("overrides the kubeconfig's server", async () => {
    const api = await FakeApiServer.start();
    try {
      api.create('services', fixtures.service('demo', 'web'));
      const doc = api.kubeconfig() as { clusters: Array<{ cluster: Record<string, unknown> }> };
      doc.clusters[0]!.cluster.server = 'http://192.0.2.1:1'; // nothing answers there
      const c = await connect(kubeconfigFile('master.json', doc), { server: api.url, env: {} });
      opened.push(c);
      expect(c.baseUrl).toBe(api.url);
      expect((await list(c)).items).toHaveLength(1);
    } finally {
      await api.close();
    }
  });
});

describe('rate limit', () => {
  it('lets a burst through, then one request per 1/qps s, as client-go', () => {
    const b = new RateLimiter(5, 2);
    const t0 = 1_000_000;
    expect([b.take(t0), b.take(t0)]).toEqual([0, 0]);
    expect(b.take(t0)).toBe(200);
    expect(b.take(t0 + 1000)).toBe(0);
  });
});

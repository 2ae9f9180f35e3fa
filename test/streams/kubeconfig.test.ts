// Our own kubeconfig/in-cluster loader (src/streams/api/kubeconfig.ts) against the
// fake API server over real HTTPS: CA by file and by data, bearer token,
// token file re-read on rotation, in-cluster service account, client
// certificates (mutual TLS), basic auth, insecure-skip-tls-verify; and the
// hand-over to client-node for an exec plugin.

import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { connect, type ApiConnection } from '../../src/streams/api/api-connection.ts';
import { KubeConfigError, loadClusterAccess } from '../../src/streams/api/kubeconfig.ts';
import { listPage } from '../../src/streams/api/list-watch.ts';
import { createClusterStreams, type ClusterStreams } from '../../src/streams/cluster-streams.ts';
import { FakeApiServer, fixtures as f, type FakeApiServerOptions } from '../fake-apiserver/index.ts';
import { generateSelfSignedCert } from '../fake-apiserver/tls.ts';
import { fastTuning } from './apiserver-setup.ts';
import { recordingLogger, waitFor } from './helpers.ts';

let dir: string;
let api: FakeApiServer | undefined;
let streams: ClusterStreams | undefined;
let conn: ApiConnection | undefined;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'kubeconfig-test-'));
});
afterEach(async () => {
  await streams?.stop();
  await conn?.close();
  await api?.close();
  streams = conn = api = undefined;
  rmSync(dir, { recursive: true, force: true });
});

async function server(o: FakeApiServerOptions): Promise<FakeApiServer> {
  api = await FakeApiServer.start(o);
  api.create('services', f.service('default', 'web'));
  api.create('nodes', f.node('node-a'));
  return api;
}

function kubeconfig(name: string, cluster: Record<string, unknown>, user: Record<string, unknown>): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster }],
      users: [{ name: 'u', user }],
      contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'ctx',
    }),
  );
  return path;
}

async function start(kubeConfig: string | ApiConnection) {
  const log = recordingLogger();
  streams = await createClusterStreams({
    source: 'apiserver',
    ...(typeof kubeConfig === 'string' ? { kubeConfig } : { connection: kubeConfig }),
    nodeName: 'node-a',
    logger: log.logger,
    tuning: fastTuning,
  });
  await streams.whenSynced();
  return log;
}

/** Rotates the server's token and the one on disk, cuts the watches, and waits for a change made after. */
async function rotate(a: FakeApiServer, tokenPath: string, name: string) {
  writeFileSync(tokenPath, 'rotated-token\n');
  a.setToken('rotated-token');
  a.dropWatches();
  a.create('services', f.service('default', name));
  await waitFor(() => streams!.services.has(`default/${name}`), 5000, `${name} after the rotation`);
  expect(a.requests.at(-1)!.authorization).toBe('Bearer rotated-token');
}

describe('kubeconfig file (no client-node)', () => {
  it('YAML, CA and token files by relative path: syncs, and a rotated token file is read again', async () => {
    const a = await server({ tls: true, token: 'first-token' });
    writeFileSync(join(dir, 'ca.pem'), a.ca!);
    writeFileSync(join(dir, 'token'), 'first-token\n');
    const path = kubeconfig('config.yaml', { server: a.url, 'certificate-authority': 'ca.pem' }, { tokenFile: 'token' });
    const log = await start(path);
    expect(log.find('API server')[0]).toMatchObject({ via: path, server: a.url });
    expect(streams!.services.has('default/web')).toBe(true);
    await rotate(a, join(dir, 'token'), 'after-rotation');
  });

  it('client certificate and key (files and inline data) for mutual TLS; refused without them', async () => {
    const client = generateSelfSignedCert('kube-nft-proxy');
    const a = await server({ tls: true, clientCA: client.cert });
    writeFileSync(join(dir, 'client.crt'), client.cert);
    writeFileSync(join(dir, 'client.key'), client.key);
    const ca = { server: a.url, 'certificate-authority-data': Buffer.from(a.ca!).toString('base64') };
    await start(kubeconfig('files.yaml', ca, { 'client-certificate': join(dir, 'client.crt'), 'client-key': 'client.key' }));
    expect(streams!.services.size).toBe(1);
    await streams!.stop();
    streams = undefined;

    const b64 = (s: string) => Buffer.from(s).toString('base64');
    await start(kubeconfig('data.yaml', ca, { 'client-certificate-data': b64(client.cert), 'client-key-data': b64(client.key) }));
    expect(streams!.services.size).toBe(1);

    conn = await connect(kubeconfig('none.yaml', ca, {}));
    await expect(
      listPage(conn, '/api/v1/services', {}, { headersTimeoutMs: 2000, bodyTimeoutMs: 2000 }, new AbortController().signal),
    ).rejects.toThrow();
    expect(a.count({ resource: 'services', status: 200 })).toBeGreaterThan(0);
  });

  it('basic auth', async () => {
    const a = await server({ tls: true, basic: { username: 'admin', password: 'pw:with:colons' } });
    await start(
      kubeconfig(
        'basic.yaml',
        { server: a.url, 'certificate-authority-data': Buffer.from(a.ca!).toString('base64') },
        { username: 'admin', password: 'pw:with:colons' },
      ),
    );
    expect(streams!.services.size).toBe(1);
    expect(a.count({ status: 401 })).toBe(0);
  });

  it('insecure-skip-tls-verify trusts an unknown certificate; without it (and no CA) TLS fails', async () => {
    const a = await server({ tls: true, token: 't' });
    await start(kubeconfig('insecure.yaml', { server: a.url, 'insecure-skip-tls-verify': true }, { token: 't' }));
    expect(streams!.services.size).toBe(1);
    conn = await connect(kubeconfig('strict.yaml', { server: a.url }, { token: 't' }));
    await expect(
      listPage(conn, '/api/v1/services', {}, { headersTimeoutMs: 2000, bodyTimeoutMs: 2000 }, new AbortController().signal),
    ).rejects.toMatchObject({
      code: expect.stringMatching(/SELF_SIGNED|UNABLE_TO_VERIFY|DEPTH_ZERO/),
    });
  });

  it('bad kubeconfigs are KubeConfigErrors with what is wrong', async () => {
    const bad = async (text: string) => {
      const p = join(dir, `bad-${Math.random()}.yaml`);
      writeFileSync(p, text);
      return loadClusterAccess(p);
    };
    await expect(loadClusterAccess(join(dir, 'missing'))).rejects.toMatchObject({
      code: 'ERR_KUBECONFIG',
      message: expect.stringContaining('cannot read'),
    });
    await expect(bad('clusters: []\n')).rejects.toThrow(/no current-context/);
    await expect(bad(stringify({ 'current-context': 'x', contexts: [] }))).rejects.toThrow(/no context named "x"/);
    await expect(
      bad(
        stringify({
          'current-context': 'x',
          contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
          clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:1' } }],
          users: [{ name: 'u', user: { 'client-certificate-data': 'eA==' } }],
        }),
      ),
    ).rejects.toThrow(/without a key/);
    await expect(bad('[unterminated')).rejects.toBeInstanceOf(KubeConfigError);
  });
});

describe('in-cluster (no client-node)', () => {
  it('service account CA and token from the mounted directory; the token is re-read after rotation', async () => {
    const a = await server({ tls: true, token: 'sa-token' });
    const sa = join(dir, 'serviceaccount');
    mkdirSync(sa);
    writeFileSync(join(sa, 'ca.crt'), a.ca!);
    writeFileSync(join(sa, 'token'), 'sa-token');
    const port = new URL(a.url).port;
    conn = await connect(undefined, {
      env: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: port },
      serviceAccountDir: sa,
    });
    expect(conn.via).toBe('in-cluster');
    expect(conn.baseUrl).toBe(`https://127.0.0.1:${port}`);
    await start(conn);
    expect(streams!.services.has('default/web')).toBe(true);
    await rotate(a, join(sa, 'token'), 'after-sa-rotation');
  });

  it('an IPv6 service host is bracketed; a missing CA is a KubeConfigError', async () => {
    const sa = join(dir, 'sa');
    mkdirSync(sa);
    await expect(
      loadClusterAccess(undefined, { env: { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' }, serviceAccountDir: sa }),
    ).rejects.toMatchObject({
      code: 'ERR_KUBECONFIG',
    });
    writeFileSync(join(sa, 'ca.crt'), 'x');
    const access = await loadClusterAccess(undefined, {
      env: { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' },
      serviceAccountDir: sa,
    });
    expect(access).toMatchObject({
      server: 'https://[fd00::1]:443',
      source: 'in-cluster',
      credentials: { kind: 'token-file', path: join(sa, 'token') },
    });
  });
});

describe('handed over to client-node', () => {
  it('an exec credential plugin: loaded through client-node, which runs the plugin', async () => {
    const a = await server({ tls: true, token: 'from-exec' });
    const plugin = join(dir, 'credential-plugin.sh');
    writeFileSync(
      plugin,
      `#!/bin/sh\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-exec"}}'\n`,
    );
    chmodSync(plugin, 0o755);
    const path = kubeconfig(
      'exec.yaml',
      { server: a.url, 'certificate-authority-data': Buffer.from(a.ca!).toString('base64') },
      { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin, interactiveMode: 'Never' } },
    );
    expect(await loadClusterAccess(path)).toEqual({ needsClientNode: 'user.exec', file: path });
    const log = await start(path);
    expect(log.find('API server')[0]).toMatchObject({ via: 'client-node (user.exec)' });
    expect(streams!.services.has('default/web')).toBe(true);
    expect(a.requests.at(-1)!.authorization).toBe('Bearer from-exec');
  });
});

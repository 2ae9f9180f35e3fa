// bench:sync's floor child (bench/list-floor.cjs through bench/sync-floor.ts):
// it reads the agent's three WatchLists to their end and nothing more, finds
// the end even when its marker is cut between two chunks, and fails loudly
// rather than report a floor for lists it did not read.

import { once } from 'node:events';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { measureListFloor } from '../../bench/sync-floor.ts';
import { NODE_NAME, nodeObject, serviceObject, sliceObject } from '../../bench/sync-cluster.ts';
import { serviceProxySelector } from '../../src/k8s/well-known.ts';
import { FakeApiServer } from '../fake-apiserver/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'knp-list-floor-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function kubeconfigFor(server: string, token?: string): string {
  const path = join(dir, `kubeconfig-${Math.random().toString(36).slice(2)}.json`);
  const config = {
    clusters: [{ name: 'c', cluster: { server } }],
    users: [{ name: 'u', user: token ? { token } : {} }],
  };
  writeFileSync(path, JSON.stringify(config));
  return path;
}

/** A WatchList up to and including its initial-events-end bookmark, read line by line. */
function initialEvents(url: URL, token: string, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    https
      .get(url, { ca, headers: { authorization: `Bearer ${token}` } }, (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => {
          text += d;
          const lines = text.split('\n');
          const end = lines.findIndex((l) => l.includes('"k8s.io/initial-events-end"'));
          if (end < 0) return;
          res.destroy();
          resolve(`${lines.slice(0, end + 1).join('\n')}\n`);
        });
      })
      .on('error', reject);
  });
}

describe('the list floor against the fake API server (TLS, token)', () => {
  let api: FakeApiServer;
  let kubeconfig: string;
  beforeAll(async () => {
    api = await FakeApiServer.start({ tls: true, token: 'floor-token' });
    api.create('nodes', nodeObject());
    api.create('nodes', { ...nodeObject(), metadata: { name: 'another-node' } });
    for (let i = 0; i < 3; i++) {
      const svc = serviceObject(i);
      // The third is another proxy's: the agent's selector, and so the floor's, leaves it out.
      if (i === 2) (svc.metadata as { labels: Record<string, string> }).labels['service.kubernetes.io/service-proxy-name'] = 'other';
      api.create('services', svc);
      api.create('endpointslices', sliceObject(i, undefined, 4));
    }
    kubeconfig = join(dir, 'fake.json');
    api.writeKubeconfig(kubeconfig);
  });
  afterAll(() => api.close());

  it("reads the agent's three WatchLists, with its selectors, to their ends", async () => {
    const before = api.requests.length;
    const floor = await measureListFloor(kubeconfig, 2, 30_000);
    const watches = api.requests.slice(before);
    expect(watches).toHaveLength(6);
    for (const w of watches) {
      expect(w.watch).toBe(true);
      expect(w.status).toBe(200);
      expect(w.query).toMatchObject({ sendInitialEvents: 'true', resourceVersionMatch: 'NotOlderThan', allowWatchBookmarks: 'true' });
      expect(w.authorization).toBe('Bearer floor-token');
    }
    expect(new Set(watches.map((w) => `${w.path} ${w.query.labelSelector ?? w.query.fieldSelector}`))).toEqual(
      new Set([
        `/api/v1/services ${serviceProxySelector()}`,
        `/apis/discovery.k8s.io/v1/endpointslices ${serviceProxySelector()}`,
        `/api/v1/nodes metadata.name=${NODE_NAME}`,
      ]),
    );
    const ca = api.ca!;
    let expected = 0;
    for (const w of watches.slice(0, 3)) {
      const url = new URL(w.path, api.url);
      for (const [k, v] of Object.entries(w.query)) url.searchParams.set(k, v);
      const events = await initialEvents(url, 'floor-token', ca);
      if (w.path === '/api/v1/services') {
        expect(events).toContain('"svc-1"');
        expect(events).not.toContain('"svc-2"');
      }
      expected += Buffer.byteLength(events);
    }
    expect(floor.bytes).toBe(expected);
    expect(floor.runs).toBe(2);
    expect(floor.bootMs).toBeGreaterThan(0);
    expect(floor.listedMs).toBeGreaterThanOrEqual(floor.bootMs);
  });

  it('fails on a refused request instead of reporting a floor', async () => {
    const wrong = join(dir, 'wrong-token.json');
    api.writeKubeconfig(wrong, 'not-the-token');
    await expect(measureListFloor(wrong, 1, 30_000)).rejects.toThrow(/HTTP 401/);
  });
});

describe('the list floor against a hand-written stream', () => {
  let server: Server;
  let url: string;
  let mode: 'split' | 'cut' | 'stall' | 'stall-once' = 'split';
  let requests = 0;
  const marker = '{"type":"BOOKMARK","object":{"metadata":{"annotations":{"k8s.io/initial-events-end":"true"}}}}\n';
  const body = `${'{"type":"ADDED","object":{"metadata":{"name":"x"}}}\n'.repeat(50)}`;
  beforeAll(async () => {
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(body);
      requests++;
      if (mode === 'cut') return void res.end();
      // Never the marker: for every request, or for the first child's three.
      if (mode === 'stall' || (mode === 'stall-once' && requests <= 3)) return;
      // The marker in three writes far enough apart to arrive as three chunks, the middle one tiny.
      const cut = marker.indexOf('initial-events') + 3;
      res.write(marker.slice(0, cut));
      setTimeout(() => res.write(marker.slice(cut, cut + 4)), 50);
      setTimeout(() => res.write(marker.slice(cut + 4)), 100);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  it('finds the end of the initial events when its marker is cut across chunks', async () => {
    mode = 'split';
    const floor = await measureListFloor(kubeconfigFor(url), 1, 10_000);
    expect(floor.bytes).toBe(3 * Buffer.byteLength(body + marker));
    expect(floor.listedMs).toBeGreaterThanOrEqual(100);
  });

  it('starts a child stalled at its timeout again, and says where each stalled when every attempt does', async () => {
    mode = 'stall-once';
    requests = 0;
    const floor = await measureListFloor(kubeconfigFor(url), 1, 1_500);
    expect(floor.retried).toBe(1);
    expect(floor.bytes).toBe(3 * Buffer.byteLength(body + marker));
    mode = 'stall';
    const failed = measureListFloor(kubeconfigFor(url), 1, 1_000);
    await expect(failed).rejects.toThrow(/exit 2.*stopped: \/api\/v1\/services \d+ bytes, waiting/s);
  }, 20_000);

  it('takes a child at its result when it then hangs in exit, and kills one deaf to SIGTERM at its timeout', async () => {
    const child = (name: string) => fileURLToPath(new URL(`./children/${name}.cjs`, import.meta.url));
    const t0 = Date.now();
    const floor = await measureListFloor(kubeconfigFor(url), 2, 60_000, child('hangs-after-its-result'));
    expect(floor).toMatchObject({ bytes: 42, retried: 0, runs: 2 });
    expect(Date.now() - t0).toBeLessThan(30_000);
    const failed = measureListFloor(kubeconfigFor(url), 1, 300, child('hangs-silent'));
    await expect(failed).rejects.toThrow(/signal SIGKILL, after \d+ ms, stopped at its timeout/);
  }, 20_000);

  it('fails on a stream that ends before its initial events do', async () => {
    mode = 'cut';
    await expect(measureListFloor(kubeconfigFor(url), 1, 10_000)).rejects.toThrow(/ended before its initial-events-end bookmark/);
  });
});

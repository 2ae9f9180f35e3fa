// List/watch semantics against the fake API server over HTTP.

import { afterEach, describe, expect, it } from 'vitest';
import { fixtures as f } from '../fake-apiserver/index.ts';
import { setup, type Setup } from './apiserver-setup.ts';
import { delay, waitFor } from './helpers.ts';

let s: Setup | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

function seedServices(n: number) {
  return (api: Setup['api']) => {
    for (let i = 0; i < n; i++) api.create('services', f.service('default', `svc-${i}`));
    api.create('nodes', f.node('node-a', { 'topology.kubernetes.io/zone': 'z1' }));
  };
}

describe('initial list', () => {
  it('uses WatchList when the server supports it, ending at the initial-events-end bookmark', async () => {
    s = await setup({ seed: seedServices(3) });
    expect(s.api.count({ watch: false })).toBe(0);
    const first = s.api.requests.find((r) => r.resource === 'services')!;
    expect(first.query).toMatchObject({ sendInitialEvents: 'true', resourceVersionMatch: 'NotOlderThan', allowWatchBookmarks: 'true' });
    expect(s.streams.services.size).toBe(3);
    expect(s.svcLog().sort()).toEqual(['upsert default/svc-0', 'upsert default/svc-1', 'upsert default/svc-2']);
    // The same stream continues as the live watch.
    s.api.create('services', f.service('default', 'late'));
    await waitFor(() => s!.streams.services.has('default/late'));
    expect(s.api.count({ resource: 'services' })).toBe(1);
  });

  it('falls back to paged lists when the server rejects WatchList, then watches from the list rv', async () => {
    s = await setup({ server: { watchList: false }, tuning: { pageSize: 3 }, seed: seedServices(7) });
    expect(s.streams.services.size).toBe(7);
    const svcReqs = s.api.requests.filter((r) => r.resource === 'services');
    expect(svcReqs[0]).toMatchObject({ watch: true, status: 422 });
    const lists = svcReqs.filter((r) => !r.watch);
    expect(lists.map((r) => [r.query.limit, Boolean(r.query.continue)])).toEqual([
      ['3', false],
      ['3', true],
      ['3', true],
    ]);
    await waitFor(() => s!.api.activeWatches('services') === 1);
    const watch = s.api.requests.filter((r) => r.resource === 'services' && r.watch && r.status === 200)[0]!;
    expect(watch.query.resourceVersion).toBe(String(s.api.store.resourceVersion));
    expect(s.log.find('server rejects WatchList; using paged lists')).toHaveLength(3);
  });

  it(
    "says how far a list has got while it runs (a big cluster lists for a long time), with the server's estimate of " + 'what is left',
    async () => {
      s = await setup({ server: { watchList: false }, tuning: { pageSize: 2, progressIntervalMs: 0 }, seed: seedServices(7) });
      const services = s.log.lines.filter((l) => l.resource === 'services');
      const listing = services.filter((l) => l.msg === 'listing').map((l) => [l.items, l.pages, l.remaining]);
      expect(listing).toEqual([
        [2, 1, 5],
        [4, 2, 3],
        [6, 3, 1],
      ]);
      expect(services.find((l) => l.msg === 'listed')).toMatchObject({ items: 7, pages: 4 });
    },
  );

  it('says so for WatchList initial events too, and not at all for a list quicker than the interval', async () => {
    s = await setup({ tuning: { progressIntervalMs: 0 }, seed: seedServices(3) });
    const services = s.log.lines.filter((l) => l.resource === 'services');
    expect(services.filter((l) => l.msg === 'listing').map((l) => l.items)).toEqual([1, 2, 3]);
    expect(services.find((l) => l.msg === 'listed (WatchList)')).toMatchObject({ items: 3 });
    await s.close();
    s = await setup({ server: { watchList: false }, tuning: { pageSize: 2 }, seed: seedServices(7) });
    expect(s.log.find('listing')).toEqual([]);
    expect(s.log.find('listed').find((l) => l.resource === 'services')).toMatchObject({ items: 7, pages: 4 });
  });

  it('never emits a partial list: a failed page retries the whole list', async () => {
    s = await setup({
      server: { watchList: false },
      tuning: { pageSize: 2 },
      seed: (api) => {
        seedServices(5)(api);
        api.injectFault({ kind: '500', resource: 'services', on: 'list', skip: 1 });
      },
    });
    expect(s.svcLog()).toHaveLength(5);
    expect(s.api.count({ resource: 'services', watch: false, status: 500 })).toBe(1);
    expect(s.api.count({ resource: 'services', watch: false })).toBe(5); // 1 ok + 1 failed + 3 pages
  });

  it('is not synced until services, slices and the node have all listed', async () => {
    s = await setup({
      wait: false,
      seed: (api) => {
        seedServices(1)(api);
        api.injectFault({ kind: 'slow', resource: 'nodes', delayMs: 600 });
      },
    });
    const states: boolean[] = [];
    s.streams.synced$.subscribe((v) => states.push(v));
    await waitFor(() => s!.streams.services.size === 1);
    expect(states).toEqual([false]);
    await s.streams.whenSynced();
    expect(states).toEqual([false, true]);
    expect(s.streams.node()?.zone).toBe('z1');
  });
});

describe('watch', () => {
  it('re-watches from the last resourceVersion when timeoutSeconds expires', async () => {
    s = await setup({ tuning: { watchTimeoutSeconds: [1, 1] }, seed: seedServices(1) });
    await waitFor(() => s!.api.count({ resource: 'services', watch: true }) >= 3, 5000, 'two re-watches');
    const rewatches = s.api.requests.filter((r) => r.resource === 'services' && r.watch).slice(1);
    for (const r of rewatches) {
      expect(r.query.timeoutSeconds).toBe('1');
      expect(r.query.resourceVersion).toMatch(/^\d+$/);
      expect(r.query.sendInitialEvents).toBeUndefined();
    }
    s.api.create('services', f.service('default', 'after'));
    await waitFor(() => s!.streams.services.has('default/after'));
    expect(s.svcLog()).toEqual(['upsert default/svc-0', 'upsert default/after']);
  });

  it('follows bookmarks, so a quiet resource resumes after compaction without relisting', async () => {
    s = await setup({ server: { bookmarkIntervalMs: 100 }, seed: seedServices(1) });
    for (let i = 0; i < 5; i++) s.api.patchLabels('services', 'default/svc-0', { n: String(i) });
    await delay(300); // bookmarks carry the newer rv to the endpointslices watcher
    const compactedAt = s.api.compact();
    s.api.dropWatches('endpointslices');
    await waitFor(() => s!.api.count({ resource: 'endpointslices', watch: true, status: 200 }) >= 2);
    const rewatch = s.api.requests.filter((r) => r.resource === 'endpointslices' && r.watch).at(-1)!;
    expect(Number(rewatch.query.resourceVersion)).toBeGreaterThanOrEqual(compactedAt);
    await delay(200);
    expect(s.log.find('resourceVersion expired (410); relisting').filter((l) => l.resource === 'endpointslices')).toHaveLength(0);
  });

  it('on 410 relists and emits only the real differences', async () => {
    s = await setup({ seed: seedServices(5) });
    s.services.length = 0;
    s.api.stallWatches('services');
    const svc1 = s.api.store.get('services', 'default/svc-1')!.obj;
    s.api.update('services', { ...svc1, spec: { ...(svc1.spec as object), ports: [{ name: 'http', protocol: 'TCP', port: 81 }] } });
    const svc2 = s.api.store.get('services', 'default/svc-2')!.obj;
    s.api.update('services', { ...svc2, status: { loadBalancer: {} } }); // new rv, same projection
    s.api.delete('services', 'default/svc-3');
    s.api.create('services', f.service('default', 'svc-new'));
    s.api.compact();
    s.api.dropWatches('services');
    await waitFor(() => s!.log.find('resourceVersion expired (410); relisting').length > 0);
    await waitFor(() => s!.services.length >= 3);
    await delay(100);
    expect(s.svcLog().sort()).toEqual(['delete default/svc-3', 'upsert default/svc-1', 'upsert default/svc-new']);
    expect(s.streams.services.get('default/svc-2')!.resourceVersion).toBe(
      s.api.store.get('services', 'default/svc-2')!.obj.metadata.resourceVersion,
    );
  });
});

describe('selectors and topology', () => {
  it('KEP-31: a Service that gains the proxy-name or headless label disappears, and reappears when it loses it', async () => {
    s = await setup({ seed: seedServices(1) });
    s.api.create('endpointslices', f.endpointSlice('default', 'svc-0-x', 'svc-0', [{ ip: '10.244.1.1' }]));
    await waitFor(() => s!.streams.endpointSlices.size === 1);
    s.api.patchLabels('services', 'default/svc-0', { 'service.kubernetes.io/service-proxy-name': 'other' });
    s.api.patchLabels('endpointslices', 'default/svc-0-x', { 'service.kubernetes.io/service-proxy-name': 'other' });
    await waitFor(() => !s!.streams.services.has('default/svc-0') && s!.streams.endpointSlices.size === 0);
    s.api.patchLabels('services', 'default/svc-0', {
      'service.kubernetes.io/service-proxy-name': null,
      'service.kubernetes.io/headless': '',
    });
    await delay(100);
    expect(s.streams.services.has('default/svc-0')).toBe(false);
    s.api.patchLabels('services', 'default/svc-0', { 'service.kubernetes.io/headless': null });
    await waitFor(() => s!.streams.services.has('default/svc-0'));
    expect(s.svcLog()).toEqual(['upsert default/svc-0', 'delete default/svc-0', 'upsert default/svc-0']);
    expect([...s.streams.endpointSlices.values()].filter((x) => x.serviceName === 'svc-0')).toEqual([]);
  });

  it('KEP-31 with --service-proxy-name: only Services labelled for us', async () => {
    s = await setup({
      serviceProxyName: 'mine',
      seed: (api) => {
        seedServices(2)(api);
        api.patchLabels('services', 'default/svc-1', { 'service.kubernetes.io/service-proxy-name': 'mine' });
      },
    });
    expect([...s.streams.services.entries()].map(([k]) => k)).toEqual(['default/svc-1']);
    const q = s.api.requests.find((r) => r.resource === 'services')!.query;
    expect(q.labelSelector).toBe('service.kubernetes.io/service-proxy-name=mine,!service.kubernetes.io/headless');
    s.api.patchLabels('services', 'default/svc-0', { 'service.kubernetes.io/service-proxy-name': 'mine' });
    await waitFor(() => s!.streams.services.size === 2);
  });

  it('follows the node topology labels live, only for this node', async () => {
    s = await setup({ seed: seedServices(0) });
    expect(s.nodes.at(-1)?.zone).toBe('z1');
    expect(s.api.requests.find((r) => r.resource === 'nodes')!.query.fieldSelector).toBe('metadata.name=node-a');
    s.api.create('nodes', f.node('node-b', { 'topology.kubernetes.io/zone': 'z9' }));
    s.api.patchLabels('nodes', 'node-a', { 'topology.kubernetes.io/zone': 'z2', 'topology.kubernetes.io/region': 'r1' });
    await waitFor(() => s!.nodes.at(-1)?.zone === 'z2');
    expect(s.streams.node()).toMatchObject({ name: 'node-a', zone: 'z2', region: 'r1' });
    expect(s.nodes.some((n) => n?.name === 'node-b')).toBe(false);
    s.api.delete('nodes', 'node-a');
    await waitFor(() => s!.streams.node() === undefined);
  });
});

// Every injected fault, bad input, and HTTPS with a token, against the fake API server.

import { afterEach, describe, expect, it } from 'vitest';
import { fixtures as f } from '../fake-apiserver/index.ts';
import { setup, type Setup } from './apiserver-setup.ts';
import { delay, waitFor } from './helpers.ts';

let s: Setup | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

const seed = (api: Setup['api']) => {
  api.create('services', f.service('default', 'web'));
  api.create('nodes', f.node('node-a'));
};

const failures = (x: Setup) => x.log.find('list/watch failed; retrying after backoff').filter((l) => l.resource === 'services');
/** Failures after the first one, which is the watch we cut ourselves to make the client reconnect. */
const faultFailures = (x: Setup) => {
  const all = failures(x);
  expect(all[0]).toMatchObject({ code: 'ECONNRESET' });
  return all.slice(1);
};

/** Cuts the services watch and checks the stream recovers: a later change still arrives. */
async function recovers(x: Setup, name: string, timeoutMs = 5000) {
  x.api.create('services', f.service('default', name));
  await waitFor(() => x.streams.services.has(`default/${name}`), timeoutMs, `${name} to arrive`);
}

describe('faults', () => {
  it('connection dropped: reconnects with backoff', async () => {
    s = await setup({ seed });
    s.api.injectFault({ kind: 'drop', resource: 'services', on: 'watch', times: 2 });
    s.api.dropWatches('services');
    await recovers(s, 'after-drop');
    expect(s.api.count({ resource: 'services', fault: 'drop' })).toBe(2);
    expect(faultFailures(s).map((l) => l.attempt)).toEqual([2, 3]);
    expect(s.log.find('resourceVersion expired (410); relisting')).toHaveLength(0);
  });

  it('hung request (no response headers): caught by the timeout, retried', async () => {
    s = await setup({ seed, tuning: { headersTimeoutMs: 300 } });
    s.api.injectFault({ kind: 'hang', resource: 'services', on: 'watch' });
    s.api.dropWatches('services');
    await recovers(s, 'after-hang');
    expect(faultFailures(s)[0]!.code).toBe('ERR_API_HEADERS_TIMEOUT');
  });

  it('hung watch (silent after headers): caught by the read timeout, re-watched', async () => {
    s = await setup({ seed, tuning: { readTimeoutMs: 300 } });
    const t0 = Date.now();
    s.api.stallWatches('services');
    s.api.create('services', f.service('default', 'during-stall'));
    await waitFor(() => s!.streams.services.has('default/during-stall'));
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    expect(failures(s)[0]!.code).toBe('ERR_API_BODY_TIMEOUT');
  });

  it('429 with Retry-After: waits at least that long', async () => {
    s = await setup({ seed });
    s.api.injectFault({ kind: '429', resource: 'services', on: 'watch', retryAfterSeconds: 1 });
    s.api.dropWatches('services');
    await waitFor(() => s!.api.count({ resource: 'services', status: 429 }) === 1);
    await recovers(s, 'after-429');
    const reqs = s.api.requests.filter((r) => r.resource === 'services');
    const i = reqs.findIndex((r) => r.status === 429);
    expect(reqs[i + 1]!.at - reqs[i]!.at).toBeGreaterThanOrEqual(950);
    expect(faultFailures(s)[0]).toMatchObject({ status: 429, delayMs: 1000 });
  });

  it('500s: retried with growing backoff, forever', async () => {
    s = await setup({ seed });
    s.api.injectFault({ kind: '500', resource: 'services', on: 'watch', times: 4 });
    s.api.dropWatches('services');
    await recovers(s, 'after-500');
    const delays = faultFailures(s).map((l) => l.delayMs as number);
    expect(delays).toHaveLength(4);
    expect(delays[3]!).toBeGreaterThan(delays[0]!);
  });

  it('failed list: retried until it succeeds, then synced', async () => {
    s = await setup({
      server: { watchList: false },
      seed: (api) => {
        seed(api);
        api.injectFault({ kind: '500', resource: 'services', on: 'list', times: 2 });
      },
    });
    expect(s.streams.services.size).toBe(1);
    expect(s.api.count({ resource: 'services', watch: false, status: 500 })).toBe(2);
  });

  it('slow server: a slow list still completes', async () => {
    const t0 = Date.now();
    s = await setup({
      server: { watchList: false },
      seed: (api) => {
        seed(api);
        api.injectFault({ kind: 'slow', resource: 'services', on: 'list', delayMs: 400 });
      },
    });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(400);
    expect(s.streams.services.size).toBe(1);
    expect(failures(s)).toHaveLength(0);
  });

  it('a malformed watch line restarts the watch (not skipped), from the last resourceVersion', async () => {
    s = await setup({ seed });
    const watchesBefore = s.api.count({ resource: 'services', watch: true });
    s.api.writeToWatches('{"type":"ADDED","object":{"metadata":\n', 'services');
    await waitFor(() => s!.api.count({ resource: 'services', watch: true }) > watchesBefore);
    expect(failures(s)[0]).toMatchObject({ code: 'ERR_MALFORMED_WATCH_EVENT' });
    const rewatch = s.api.requests.filter((r) => r.resource === 'services' && r.watch).at(-1)!;
    expect(rewatch.query.resourceVersion).toMatch(/^\d+$/);
    await recovers(s, 'after-garbage');
    s.api.writeToWatches('{"type":"WHATEVER","object":{}}\n', 'services');
    await waitFor(() => failures(s!).length === 2);
    expect(s.svcLog()).toEqual(['upsert default/web', 'upsert default/after-garbage']);
  });
});

describe('bad input', () => {
  it('an invalid object is logged once with key and reason and left out; the stream goes on', async () => {
    s = await setup({ seed });
    const bad = f.service('default', 'bad', { spec: { clusterIP: '10.96.0.300', clusterIPs: ['10.96.0.300'] } });
    s.api.create('services', bad);
    s.api.patchLabels('services', 'default/bad', { touched: '1' });
    s.api.patchLabels('services', 'default/bad', { touched: '2' });
    await recovers(s, 'good');
    expect(s.streams.services.has('default/bad')).toBe(false);
    const warns = s.log.find('invalid object left out');
    expect(warns).toHaveLength(1);
    expect(warns[0]).toMatchObject({ key: 'default/bad', reason: 'spec.clusterIPs[0] is not an IP: "10.96.0.300"' });
  });

  it('a valid object that turns invalid is removed; fixed, it comes back', async () => {
    s = await setup({ seed });
    const web = s.api.store.get('services', 'default/web')!.obj;
    s.api.update('services', { ...web, spec: { ...(web.spec as object), ports: [{ name: 'http', port: 70000 }] } });
    await waitFor(() => !s!.streams.services.has('default/web'));
    s.api.update('services', web);
    await waitFor(() => s!.streams.services.has('default/web'));
    expect(s.svcLog()).toEqual(['upsert default/web', 'delete default/web', 'upsert default/web']);
    expect(s.log.find('invalid object left out')[0]).toMatchObject({
      key: 'default/web',
      reason: 'spec.ports[0].port out of range: 70000',
    });
  });

  it('bad parts of an EndpointSlice are dropped, the rest kept', async () => {
    s = await setup({ seed });
    s.api.create(
      'endpointslices',
      f.endpointSlice(
        'default',
        'web-1',
        'web',
        [{ ip: '10.244.1.1' }, { ip: '255.255.255.255' }, { ip: '010.244.1.2' }],
        {},
        {
          ports: [
            { name: 'http', port: 0 },
            { name: 'alt', port: 8443 },
          ],
        },
      ),
    );
    await waitFor(() => s!.streams.endpointSlices.size === 1);
    const sl = s.streams.endpointSlices.get('default/web-1')!;
    expect(sl.ports.map((p) => p.port)).toEqual([8443]);
    expect(sl.endpoints.map((e) => e.address)).toEqual(['10.244.1.1', '010.244.1.2']);
    expect(s.log.find('invalid part left out').map((l) => l.reason)).toEqual([
      'ports[0].port out of range: 0',
      'endpoints[1] address 255.255.255.255 is not routable',
    ]);
  });
});

describe('HTTPS', () => {
  it('authenticates with the token and trusts the CA from a generated kubeconfig', async () => {
    s = await setup({ server: { tls: true, token: 's3cret' }, seed });
    expect(s.api.url).toMatch(/^https:/);
    expect(s.streams.services.size).toBe(1);
    await recovers(s, 'over-tls');
    expect(s.api.count({ status: 401 })).toBe(0);
  });

  it('a wrong token is refused (401) and retried, never synced', async () => {
    s = await setup({ server: { tls: true, token: 's3cret' }, token: 'wrong', seed, wait: false });
    await waitFor(() => s!.api.count({ resource: 'services', status: 401 }) >= 3);
    let synced = false;
    s.streams.synced$.subscribe((v) => (synced = v));
    await delay(50);
    expect(synced).toBe(false);
    expect(s.streams.services.size).toBe(0);
  });
});

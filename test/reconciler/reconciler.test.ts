import { firstValueFrom, filter, Subject, take, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { FakeKernel } from '../../src/nft/fake/fake-kernel.ts';
import { Reconciler, SyncError } from '../../src/reconciler/reconciler.ts';
import { syncRunner } from '../../src/reconciler/sync-runner.ts';
import type { ServicePort } from '../../src/model/service-port.ts';
import { config, ep, modelReads, sp, V4 } from './fixtures.ts';
import { afterFreshFullSync, listingWithoutHandles } from './kernel-listing.ts';

const cfg = config({ families: { IPv4: V4 } });
const web = sp({ nodePort: 30080, endpoints: [ep('10.244.1.5')] });
const api = sp({ serviceName: 'api', clusterIP: '10.96.0.20', endpoints: [ep('10.244.3.3')] });

function setup(initial: ServicePort[]) {
  const kernel = new FakeKernel();
  let ports = initial;
  let now = 0;
  const r = new Reconciler({ dataplane: kernel, config: cfg, servicePorts: modelReads(() => ports), now: () => now });
  return {
    kernel,
    r,
    set: (p: ServicePort[]) => {
      ports = p;
    },
    advance: (ms: number) => {
      now += ms;
    },
  };
}

const expected = (ports: ServicePort[]) => afterFreshFullSync(ports, cfg);

const strip = listingWithoutHandles;

describe('Reconciler', () => {
  it('lets only the first commit be staged, and only when the kernel holds none of our tables', async () => {
    const staged = async (tablesAbsent: boolean, failFirst = false) => {
      const kernel = new FakeKernel();
      const seen: number[] = [];
      const commit = kernel.commit.bind(kernel);
      kernel.commit = async (tx) => {
        seen.push(tx.stageable);
        if (failFirst && seen.length === 1) throw new Error('the kernel went away');
        return commit(tx);
      };
      const r = new Reconciler({ dataplane: kernel, config: cfg, servicePorts: modelReads(() => [web, api]), now: () => 0, tablesAbsent });
      await r.sync({ kind: 'full', mode: 'replace' }).catch(() => undefined);
      await r.sync({ kind: 'full', mode: 'replace' });
      return seen;
    };
    const [first, ...later] = await staged(true);
    // Everything but the base chains and their rules.
    expect(first).toBeGreaterThan(10);
    expect(later).toEqual([0]);
    expect(await staged(false)).toEqual([0, 0]);
    const afterFailure = await staged(true, true);
    expect(afterFailure[0]).toBeGreaterThan(10);
    expect(afterFailure.slice(1).every((n) => n === 0)).toBe(true);
  });

  it('first sync is a full replace even when asked for an incremental one; then incremental', async () => {
    const t = setup([web]);
    const first = await t.r.sync({ kind: 'incremental' });
    expect(first).toMatchObject({ kind: 'full', mode: 'replace', servicePorts: 1, endpointChains: 1, problems: [] });
    t.set([web, api]);
    const second = await t.r.sync({ kind: 'incremental' });
    expect(second.kind).toBe('incremental');
    expect(second.stats.chainsAdded).toBe(2);
    expect(strip(t.kernel)).toEqual(expected([web, api]));
  });

  it('tells onPlanned what it is about to commit, before the commit, and nothing when there is nothing to commit', async () => {
    const kernel = new FakeKernel();
    const seen: string[] = [];
    const commit = kernel.commit.bind(kernel);
    kernel.commit = async (ops) => {
      seen.push(`commit ${ops.length}`);
      return commit(ops);
    };
    let ports = [web];
    const r = new Reconciler({
      dataplane: kernel,
      config: cfg,
      servicePorts: modelReads(() => ports),
      now: () => 0,
      onPlanned: (p) => {
        expect(p.planMs).toBeGreaterThanOrEqual(0);
        seen.push(`planned ${p.kind} ${p.servicePorts} ${p.ops}`);
      },
    });
    const first = await r.sync({ kind: 'incremental' });
    ports = [web, api];
    const second = await r.sync({ kind: 'incremental' });
    await r.sync({ kind: 'incremental' });
    expect(seen).toEqual([
      `planned full 1 ${first.ops}`,
      `commit ${first.ops}`,
      `planned incremental 2 ${second.ops}`,
      `commit ${second.ops}`,
    ]);
  });

  it("tells onPlanned when the full sync is a restart's adoption of the tables it found", async () => {
    const kernel = new FakeKernel();
    const over = (ports: ServicePort[], adopt: boolean, seen: string[]) =>
      new Reconciler({
        dataplane: kernel,
        config: cfg,
        servicePorts: modelReads(() => ports),
        now: () => 0,
        adopt,
        onPlanned: (p) => seen.push(`${p.kind} adoption=${p.adoption}`),
      });
    const first: string[] = [];
    await over([web], false, first).sync({ kind: 'full', mode: 'replace' });
    const restart: string[] = [];
    const report = await over([web, api], true, restart).sync({ kind: 'full', mode: 'replace' });
    expect(report.mode).toBe('adopt');
    expect(first).toEqual(['full adoption=false']);
    expect(restart).toEqual(['full adoption=true']);
  });

  it('nothing to do: no commit at all', async () => {
    const t = setup([web]);
    await t.r.sync({ kind: 'incremental' });
    const commits = t.kernel.commits;
    const again = await t.r.sync({ kind: 'incremental' });
    expect(again.ops).toBe(0);
    expect(t.kernel.commits).toBe(commits);
  });

  it('a refused commit throws SyncError and keeps the last applied state; the retry applies the same diff', async () => {
    const t = setup([web]);
    await t.r.sync({ kind: 'incremental' });
    const applied = t.r.state.applied;
    t.set([web, api]);
    t.kernel.faults.push({ code: 'ENOMEM', index: 3 });
    const err = await t.r.sync({ kind: 'incremental' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SyncError);
    expect((err as SyncError).code).toBe('ERR_SYNC');
    expect((err as SyncError).report.ops).toBeGreaterThan(0);
    expect(t.r.state.applied).toBe(applied);
    const retry = await t.r.sync({ kind: 'incremental' });
    expect(retry.ops).toBe((err as SyncError).report.ops);
    expect(strip(t.kernel)).toEqual(expected([web, api]));
  });

  it('reports stale chains and when to come back for them', async () => {
    const t = setup([web, api]);
    await t.r.sync({ kind: 'incremental' });
    t.set([web]);
    t.advance(10);
    const removed = await t.r.sync({ kind: 'incremental' });
    expect(removed).toMatchObject({ staleChains: 2, followUpMs: 1000 });
    t.advance(1000);
    const cleanup = await t.r.sync({ kind: 'incremental' });
    expect(cleanup).toMatchObject({ staleChains: 0, ops: 2 });
    expect(cleanup.followUpMs).toBeUndefined();
    expect(strip(t.kernel)).toEqual(expected([web]));
  });

  it('passes render problems through without failing the sync', async () => {
    const t = setup([web, sp({ serviceName: 'bad', clusterIP: '10.96.0.300', endpoints: [] })]);
    const rep = await t.r.sync({ kind: 'incremental' });
    expect(rep.problems.map((p) => p.code)).toEqual(['ERR_SERVICE_PORT_RENDER']);
    expect(rep.servicePorts).toBe(1);
  });

  it('a config change (new node address) re-renders and converges', async () => {
    const t = setup([web]);
    await t.r.sync({ kind: 'incremental' });
    t.r.setConfig(config({ families: { IPv4: { ...V4, nodePortAddresses: ['192.0.2.10', '192.0.2.99'] } } }));
    const rep = await t.r.sync({ kind: 'incremental' });
    expect(rep.stats.elementsAdded).toBe(1);
    expect(
      t.kernel
        .listSync('ip', 'kube-nft-proxy')!
        .elements.filter((e) => e.set === 'nodeport-ips')
        .map((e) => e.key[0]),
    ).toEqual(['192.0.2.10', '192.0.2.99']);
  });
});

describe('sync runner driving a Reconciler on the fake kernel (real time, short periods)', () => {
  it('waits for synced, syncs, follows changes, cleans up stale chains', async () => {
    const kernel = new FakeKernel();
    let ports: ServicePort[] = [web, api];
    const r = new Reconciler({
      dataplane: kernel,
      config: cfg,
      servicePorts: modelReads(() => ports),
      now: () => Date.now(),
      staleChainDelayMs: 30,
    });
    const changes = new Subject<void>();
    const synced = new Subject<boolean>();
    const results = firstValueFrom(
      syncRunner({ changes$: changes, synced$: synced, sync: (req) => r.sync(req), minSyncPeriodMs: 10, syncPeriodMs: 0 }).pipe(
        filter((x) => x.ok),
        take(3),
        toArray(),
      ),
    );
    changes.next();
    await new Promise((res) => setTimeout(res, 30));
    expect(kernel.commits).toBe(0);
    synced.next(true);
    await new Promise((res) => setTimeout(res, 30));
    ports = [web];
    changes.next();
    const out = await results;
    expect(out.map((x) => x.reason)).toEqual(['startup', 'change', 'stale-chains']);
    expect(out[2]!.report?.stats.chainsDeleted).toBe(2);
    expect(strip(kernel)).toEqual(expected([web]));
  });
});

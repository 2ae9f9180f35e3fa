// A ServicePort whose rules the kernel refuses is set aside: the rest of the
// ruleset keeps syncing, its last applied version stays programmed, and it is
// tried again when it changes or a full sync runs.

import { describe, expect, it } from 'vitest';
import { NftCommitError, type Dataplane } from '../../src/nft/dataplane.ts';
import { FakeKernel } from '../../src/nft/fake/fake-kernel.ts';
import type { Family } from '../../src/nft/objects.ts';
import type { Transaction } from '../../src/nft/transaction.ts';
import type { ServicePort } from '../../src/model/service-port.ts';
import { Reconciler, SyncError } from '../../src/reconciler/reconciler.ts';
import { config, ep, modelReads, sp, V4 } from './fixtures.ts';
import { afterFreshFullSync, listingWithoutHandles } from './kernel-listing.ts';

const cfg = config({ families: { IPv4: V4 } });

/**
 * The fake kernel, refusing (EINVAL, nothing applied, every failing operation
 * named, as the kernel reports them) any transaction that adds a rule DNATing
 * to a refused address — a stand-in for rules this kernel cannot take.
 */
class RefusingKernel implements Dataplane {
  readonly inner = new FakeKernel();
  refusedAddresses = new Set<string>();
  errno = { code: 'EINVAL', errno: 22 };
  refusals = 0;
  begin(): Transaction {
    return this.inner.begin();
  }
  async commit(tx: Transaction): Promise<void> {
    const ops = tx.ops();
    const failures = ops.flatMap((op, index) => {
      if (op.verb !== 'add' || op.object.kind !== 'rule') return [];
      const text = JSON.stringify(op.object.exprs);
      return [...this.refusedAddresses].some((a) => text.includes(`"${a}"`))
        ? [{ index, ...this.errno, message: 'refused by the test kernel' }]
        : [];
    });
    if (failures.length > 0) {
      this.refusals++;
      throw new NftCommitError(failures, ops);
    }
    this.inner.commitSync(ops);
  }
  list(family: Family, table: string) {
    return this.inner.list(family, table);
  }
}

const web = sp({ serviceName: 'web', clusterIP: '10.96.0.10', endpoints: [ep('10.244.1.5')] });
const api = sp({ serviceName: 'api', clusterIP: '10.96.0.20', endpoints: [ep('10.244.3.3')] });
const db = sp({ serviceName: 'db', clusterIP: '10.96.0.30', endpoints: [ep('10.244.4.4')] });

function setup(initial: ServicePort[]) {
  const kernel = new RefusingKernel();
  let ports = initial;
  let now = 0;
  const r = new Reconciler({ dataplane: kernel, config: cfg, servicePorts: modelReads(() => ports), now: () => now });
  /** Past the stale-chain delay, and a sync to delete what went stale: then the kernel can equal a fresh full sync. */
  const settle = async () => {
    now += 5000;
    await r.sync({ kind: 'incremental' });
  };
  return { kernel, r, set: (p: ServicePort[]) => (ports = p), settle };
}

const expected = (ports: ServicePort[]) => afterFreshFullSync(ports, cfg);
const strip = listingWithoutHandles;

describe('a ServicePort the kernel refuses', () => {
  it('a new one is left out and reported; the others of the same sync are programmed', async () => {
    const t = setup([web]);
    await t.r.sync({ kind: 'incremental' });
    t.kernel.refusedAddresses.add('10.244.3.3');
    t.set([web, api, db]);
    const rep = await t.r.sync({ kind: 'incremental' });
    expect(rep.rejected).toEqual([
      {
        servicePortId: api.id,
        namespace: 'default',
        serviceName: 'api',
        portName: 'http',
        keptLastApplied: false,
        stage: 'dataplane',
        errno: 22,
        code: 'EINVAL',
        message: 'refused by the test kernel',
      },
    ]);
    expect(rep.setAside).toBe(1);
    expect(strip(t.kernel.inner)).toEqual(expected([web, db]));
  });

  it('a changed one keeps its last applied version in force', async () => {
    const t = setup([web, api]);
    await t.r.sync({ kind: 'incremental' });
    t.kernel.refusedAddresses.add('10.244.3.99');
    const apiMoved = sp({ serviceName: 'api', clusterIP: '10.96.0.20', endpoints: [ep('10.244.3.99')] });
    const webMoved = sp({ serviceName: 'web', clusterIP: '10.96.0.10', endpoints: [ep('10.244.1.6')] });
    t.set([webMoved, apiMoved]);
    const rep = await t.r.sync({ kind: 'incremental' });
    expect(rep.rejected.map((x) => [x.servicePortId, x.keptLastApplied])).toEqual([[api.id, true]]);
    await t.settle();
    expect(strip(t.kernel.inner)).toEqual(expected([webMoved, api]));
    // Nothing more to do while it stays as it is: no commit, no new report.
    const refusals = t.kernel.refusals;
    const again = await t.r.sync({ kind: 'incremental' });
    expect(again).toMatchObject({ ops: 0, rejected: [], setAside: 1 });
    expect(t.kernel.refusals).toBe(refusals);
  });

  it('is tried again when it changes, and by a full sync', async () => {
    const t = setup([web]);
    await t.r.sync({ kind: 'incremental' });
    t.kernel.refusedAddresses.add('10.244.3.3');
    t.set([web, api]);
    expect((await t.r.sync({ kind: 'incremental' })).setAside).toBe(1);
    // The kernel would take it now, but it did not change: still aside.
    t.kernel.refusedAddresses.clear();
    expect((await t.r.sync({ kind: 'incremental' })).ops).toBe(0);
    expect(strip(t.kernel.inner)).toEqual(expected([web]));
    const full = await t.r.sync({ kind: 'full', mode: 'replace' });
    expect(full.setAside).toBe(0);
    expect(strip(t.kernel.inner)).toEqual(expected([web, api]));

    t.kernel.refusedAddresses.add('10.244.3.4');
    const api2 = sp({ serviceName: 'api', clusterIP: '10.96.0.20', endpoints: [ep('10.244.3.4')] });
    t.set([web, api2]);
    expect((await t.r.sync({ kind: 'incremental' })).rejected.map((x) => x.servicePortId)).toEqual([api.id]);
    t.kernel.refusedAddresses.clear();
    const api3 = sp({ serviceName: 'api', clusterIP: '10.96.0.20', endpoints: [ep('10.244.3.5')] });
    t.set([web, api3]);
    const rep = await t.r.sync({ kind: 'incremental' });
    expect(rep).toMatchObject({ rejected: [], setAside: 0 });
    await t.settle();
    expect(strip(t.kernel.inner)).toEqual(expected([web, api3]));
  });

  it('the model is read once per sync, however many passes set ports aside (reading it drains it)', async () => {
    const kernel = new RefusingKernel();
    kernel.refusedAddresses = new Set(['10.244.3.3', '10.244.4.4']);
    let reads = 0;
    const r = new Reconciler({
      dataplane: kernel,
      config: cfg,
      servicePorts: modelReads(() => {
        reads++;
        return [web, api, db];
      }),
      now: () => 0,
    });
    const rep = await r.sync({ kind: 'incremental' });
    expect(rep.setAside).toBe(2);
    expect(reads).toBe(1);
  });

  it('several refused at once are all set aside in one sync', async () => {
    const t = setup([web]);
    await t.r.sync({ kind: 'incremental' });
    t.kernel.refusedAddresses = new Set(['10.244.3.3', '10.244.4.4']);
    t.set([web, api, db]);
    const rep = await t.r.sync({ kind: 'incremental' });
    expect(rep.rejected.map((x) => x.servicePortId).sort()).toEqual([api.id, db.id].sort());
    expect(strip(t.kernel.inner)).toEqual(expected([web]));
  });

  it('a transient error (ENOMEM) sets nothing aside: the sync fails and is retried whole', async () => {
    const t = setup([web]);
    await t.r.sync({ kind: 'incremental' });
    t.kernel.refusedAddresses.add('10.244.3.3');
    t.kernel.errno = { code: 'ENOMEM', errno: 12 };
    t.set([web, api]);
    const err = await t.r.sync({ kind: 'incremental' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SyncError);
    t.kernel.refusedAddresses.clear();
    const retry = await t.r.sync({ kind: 'incremental' });
    expect(retry).toMatchObject({ rejected: [], setAside: 0 });
    expect(strip(t.kernel.inner)).toEqual(expected([web, api]));
  });

  it('a refusal of a skeleton object is not pinned on any ServicePort', async () => {
    const t = setup([]);
    t.kernel.refusedAddresses.add('0x4000');
    const err = await t.r.sync({ kind: 'incremental' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SyncError);
  });
});

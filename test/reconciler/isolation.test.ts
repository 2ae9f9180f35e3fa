// Every kind of failure of a ServicePort's operations sets that port aside
// and lets the rest of the sync commit: the transaction's own checks, a batch
// builder error, and kernel refusals that name no operation of the port
// (bisected over the ports in O(log n) commits). Only a skeleton that cannot
// be programmed fails the sync.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Dataplane, NftCommitError } from '../../src/nft/dataplane.ts';
import { FakeKernel } from '../../src/nft/fake/fake-kernel.ts';
import type { Family, Operation } from '../../src/nft/objects.ts';
import type { Transaction } from '../../src/nft/transaction.ts';
import type { Endpoint, ServicePort } from '../../src/model/service-port.ts';
import { Reconciler, SyncError } from '../../src/reconciler/reconciler.ts';
import { config, ep, modelReads, type PortSpec, sp, V4 } from './fixtures.ts';
import { afterFreshFullSync, listingWithoutHandles } from './kernel-listing.ts';

const cfg = config({ families: { IPv4: V4 } });

type Refuse = (ops: readonly Operation[]) => Error | undefined;

/** The fake kernel behind a refusal the test chooses: how a kernel or a batch builder fails, with or without an operation named. */
class ChoosyKernel implements Dataplane {
  readonly inner = new FakeKernel();
  refuse: Refuse = () => undefined;
  attempts = 0;
  begin(): Transaction {
    return this.inner.begin();
  }
  async commit(tx: Transaction): Promise<void> {
    this.attempts++;
    const err = this.refuse(tx.ops());
    if (err) throw err;
    await this.inner.commit(tx);
  }
  list(family: Family, table: string) {
    return this.inner.list(family, table);
  }
}

const mentions = (op: Operation, text: string) => op.verb === 'add' && JSON.stringify(op.object).includes(`"${text}"`);

/** An error like the addon's when it cannot build a message: no operation named. */
const plainErrorFor =
  (...addresses: string[]): Refuse =>
  (ops) =>
    ops.some((op) => op.object.kind === 'rule' && addresses.some((a) => mentions(op, a)))
      ? Object.assign(new Error('netlink: message too long'), { errno: 90 })
      : undefined;

const port = (i: number, extra: PortSpec & { endpoints?: Endpoint[] } = {}) =>
  sp({ serviceName: `s${i}`, clusterIP: `10.96.1.${i}`, endpoints: [ep(`10.244.1.${i}`)], ...extra });

function setup(ports: ServicePort[]) {
  const kernel = new ChoosyKernel();
  let current = ports;
  const r = new Reconciler({ dataplane: kernel, config: cfg, servicePorts: modelReads(() => current), now: () => 0 });
  return { kernel, r, set: (p: ServicePort[]) => (current = p) };
}

const strip = listingWithoutHandles;
const expected = (ports: ServicePort[]) => afterFreshFullSync(ports, cfg);

describe('failure isolation', () => {
  it(
    "a port whose operations fail the transaction's checks is set aside before anything is sent; the rest commits in " + 'one commit',
    async () => {
      const t = setup([port(1)]);
      await t.r.sync({ kind: 'incremental' });
      // A session affinity timeout of 0 renders a set the checks refuse (the API never allows it; the model is bypassed here).
      const bad = port(2, { sessionAffinityTimeout: 0 });
      const attempts = t.kernel.attempts;
      t.set([port(1), bad, port(3)]);
      const rep = await t.r.sync({ kind: 'incremental' });
      expect(rep.rejected).toEqual([
        expect.objectContaining({
          servicePortId: bad.id,
          serviceName: 's2',
          keptLastApplied: false,
          stage: 'validation',
          code: 'ERR_NFT_INVALID',
          message: expect.stringContaining('timeout'),
        }),
      ]);
      expect(t.kernel.attempts - attempts).toBe(1);
      expect(strip(t.kernel.inner)).toEqual(expected([port(1), port(3)]));
    },
  );

  it("a full sync's port that fails the checks, found as the dataplane encodes it, is set aside before anything is sent", async () => {
    const bad = port(2, { sessionAffinityTimeout: 0 });
    const t = setup([port(1), bad, port(3)]);
    const rep = await t.r.sync({ kind: 'full', mode: 'replace' });
    expect(rep.rejected).toEqual([
      expect.objectContaining({
        servicePortId: bad.id,
        keptLastApplied: false,
        stage: 'validation',
        code: 'ERR_NFT_INVALID',
        message: expect.stringContaining('timeout'),
      }),
    ]);
    // The invalid full sync reached no kernel: the one attempt there is the sync without the port.
    expect(t.kernel.inner.attempts).toBe(1);
    expect(strip(t.kernel.inner)).toEqual(expected([port(1), port(3)]));
  });

  it('a changed port that fails the checks keeps its last applied version in force', async () => {
    const t = setup([port(1), port(2)]);
    await t.r.sync({ kind: 'incremental' });
    t.set([port(1, { port: 8080 }), port(2, { sessionAffinityTimeout: 0 })]);
    const rep = await t.r.sync({ kind: 'incremental' });
    expect(rep.rejected.map((x) => [x.serviceName, x.keptLastApplied, x.stage])).toEqual([['s2', true, 'validation']]);
    expect(rep.setAside).toBe(1);
    expect(strip(t.kernel.inner)).toEqual(expected([port(1, { port: 8080 }), port(2)]));
  });

  it('an error that names no operation is bisected to the port that causes it: the others commit, in O(log n) extra commits', async () => {
    const ports = Array.from({ length: 32 }, (_, i) => port(i + 1));
    const t = setup([]);
    await t.r.sync({ kind: 'incremental' });
    t.kernel.refuse = plainErrorFor('10.244.1.23');
    t.set(ports);
    const attempts = t.kernel.attempts;
    const rep = await t.r.sync({ kind: 'incremental' });
    expect(rep.rejected).toEqual([
      expect.objectContaining({
        servicePortId: ports[22]!.id,
        keptLastApplied: false,
        stage: 'bisection',
        errno: 90,
        message: 'netlink: message too long',
      }),
    ]);
    // The failed one, everything but the suspects, then halves: log2(32) = 5.
    expect(t.kernel.attempts - attempts).toBeLessThanOrEqual(2 + 5 + 1);
    expect(strip(t.kernel.inner)).toEqual(expected(ports.filter((_, i) => i !== 22)));
    // It stays aside while unchanged: nothing to do, no commit.
    const quiet = t.kernel.attempts;
    expect(await t.r.sync({ kind: 'incremental' })).toMatchObject({ ops: 0, rejected: [], setAside: 1 });
    expect(t.kernel.attempts).toBe(quiet);
    // A full sync tries it again: the kernel takes it now.
    t.kernel.refuse = () => undefined;
    expect(await t.r.sync({ kind: 'full', mode: 'reassert' })).toMatchObject({ rejected: [], setAside: 0 });
    expect(strip(t.kernel.inner)).toEqual(expected(ports));
  });

  it('several culprits, and a refusal the kernel pins on a skeleton operation, are bisected the same way', async () => {
    const ports = Array.from({ length: 20 }, (_, i) => port(i + 1));
    const t = setup(ports);
    // As the kernel does for a loop or a bad reference: the error lands on the skeleton's chain that leads there (or on nothing).
    t.kernel.refuse = (ops) => {
      if (!ops.some((op) => mentions(op, '10.244.1.5') || mentions(op, '10.244.1.17'))) return undefined;
      const index = ops.findIndex((op) => op.object.kind === 'chain' && op.object.name === 'nat-prerouting');
      return new NftCommitError(index < 0 ? [] : [{ index, errno: 40, code: 'ELOOP', message: 'loop detected' }], ops);
    };
    const rep = await t.r.sync({ kind: 'full', mode: 'replace' });
    expect(rep.rejected.map((x) => [x.serviceName, x.stage, x.code]).sort()).toEqual([
      ['s17', 'bisection', 'ERR_NFT_COMMIT'],
      ['s5', 'bisection', 'ERR_NFT_COMMIT'],
    ]);
    expect(strip(t.kernel.inner)).toEqual(expected(ports.filter((p) => p.serviceName !== 's5' && p.serviceName !== 's17')));
  });

  it('an NftCommitError that names no operation is bisected too', async () => {
    const ports = Array.from({ length: 6 }, (_, i) => port(i + 1));
    const t = setup([]);
    await t.r.sync({ kind: 'incremental' });
    t.kernel.refuse = (ops) => (ops.some((op) => mentions(op, '10.244.1.2')) ? new NftCommitError([], ops) : undefined);
    t.set(ports);
    const rep = await t.r.sync({ kind: 'incremental' });
    expect(rep.rejected.map((x) => x.serviceName)).toEqual(['s2']);
    expect(strip(t.kernel.inner)).toEqual(expected(ports.filter((p) => p.serviceName !== 's2')));
  });

  it('a full replace that fails for one port commits the rest (the replace first, the port left out)', async () => {
    const ports = Array.from({ length: 8 }, (_, i) => port(i + 1));
    const t = setup(ports);
    t.kernel.refuse = plainErrorFor('10.244.1.4');
    const rep = await t.r.sync({ kind: 'full', mode: 'replace' });
    expect(rep).toMatchObject({ kind: 'full', mode: 'replace', setAside: 1 });
    expect(rep.rejected.map((x) => x.serviceName)).toEqual(['s4']);
    expect(strip(t.kernel.inner)).toEqual(expected(ports.filter((p) => p.serviceName !== 's4')));
  });

  it('a set-aside port whose last applied version fails too is left out, and said once', async () => {
    const t = setup([port(1), port(2)]);
    await t.r.sync({ kind: 'incremental' });
    // The kernel now refuses the old and the new rules of s2 alike (naming the operation), in a full replace.
    t.kernel.refuse = (ops) => {
      const index = ops.findIndex((op) => op.object.kind === 'rule' && (mentions(op, '10.244.1.2') || mentions(op, '10.244.7.7')));
      return index < 0 ? undefined : new NftCommitError([{ index, errno: 22, code: 'EINVAL', message: 'refused' }], ops);
    };
    t.set([port(1), port(2, { endpoints: [ep('10.244.7.7')] })]);
    const rep = await t.r.sync({ kind: 'full', mode: 'replace' });
    expect(rep.rejected.map((x) => [x.serviceName, x.keptLastApplied, x.stage])).toEqual([['s2', false, 'dataplane']]);
    expect(rep.setAside).toBe(1);
    expect(strip(t.kernel.inner)).toEqual(expected([port(1)]));
    // Fixed and changed: back in.
    t.kernel.refuse = () => undefined;
    t.set([port(1), port(2, { endpoints: [ep('10.244.7.8')] })]);
    expect(await t.r.sync({ kind: 'incremental' })).toMatchObject({ rejected: [], setAside: 0 });
    expect(strip(t.kernel.inner)).toEqual(expected([port(1), port(2, { endpoints: [ep('10.244.7.8')] })]));
  });

  it(
    'any culprits among any ports, refused without a name: exactly they are set aside, the rest is programmed, in about ' +
      'log2(n) + 2 commits each',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc
            .integer({ min: 1, max: 24 })
            .chain((n) => fc.tuple(fc.constant(n), fc.uniqueArray(fc.integer({ min: 1, max: n }), { maxLength: 3 }), fc.boolean())),
          async ([n, culprits, fromScratch]) => {
            const ports = Array.from({ length: n }, (_, i) => port(i + 1));
            const t = setup(fromScratch ? ports : []);
            if (!fromScratch) {
              await t.r.sync({ kind: 'incremental' });
              t.set(ports);
            }
            t.kernel.refuse = plainErrorFor(...culprits.map((c) => `10.244.1.${c}`));
            const before = t.kernel.attempts;
            const rep = await t.r.sync({ kind: 'incremental' });
            expect(rep.rejected.map((x) => x.serviceName).sort()).toEqual(culprits.map((c) => `s${c}`).sort());
            expect(strip(t.kernel.inner)).toEqual(expected(ports.filter((_, i) => !culprits.includes(i + 1))));
            const perCulprit = Math.ceil(Math.log2(n)) + 2;
            expect(t.kernel.attempts - before).toBeLessThanOrEqual(1 + culprits.length * perCulprit + 1);
          },
        ),
        { numRuns: 60 },
      );
    },
  );

  it(
    'more culprits than one sync may bisect: the sync fails with ' + 'what it found set aside, and the next ones go on from there',
    async () => {
      const ports = Array.from({ length: 40 }, (_, i) => port(i + 1));
      const t = setup([port(41)]);
      await t.r.sync({ kind: 'incremental' });
      t.kernel.refuse = plainErrorFor(...ports.map((_, i) => `10.244.1.${i + 1}`));
      t.set([port(41), ...ports]);
      const asideAfter: number[] = [];
      let ended = false;
      for (let i = 0; i < 10 && !ended; i++) {
        const outcome = await t.r.sync({ kind: 'incremental' }).catch((e: unknown) => e);
        if (outcome instanceof SyncError) asideAfter.push(outcome.report.setAside);
        else {
          expect(outcome).toMatchObject({ setAside: 40 });
          ended = true;
        }
      }
      // It failed at least once (64 commits do not find 40 culprits), each failure set more aside, and it ended.
      expect(ended).toBe(true);
      expect(asideAfter.length).toBeGreaterThan(0);
      expect(asideAfter).toEqual([...asideAfter].sort((a, b) => a - b));
      expect(new Set(asideAfter).size).toBe(asideAfter.length);
      expect(strip(t.kernel.inner)).toEqual(expected([port(41)]));
    },
  );

  it('a skeleton that cannot be programmed fails the sync after one more commit, without blaming a port', async () => {
    const t = setup([port(1), port(2)]);
    t.kernel.refuse = (ops) => (ops.some((op) => mentions(op, 'nat-prerouting')) ? new Error('netlink: the skeleton') : undefined);
    const err = await t.r.sync({ kind: 'incremental' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SyncError);
    expect((err as SyncError).report.rejected).toEqual([]);
    expect(t.kernel.attempts).toBe(2);
    expect(t.kernel.inner.tableNames()).toEqual([]);
  });
});

// A full sync's operations are made on demand (Transaction.queueGenerated):
// once the dataplane has taken the transaction, while the kernel works,
// nothing of the reconciler holds them or the renderings behind them (an
// adoption's neither), and a refusal that comes back afterwards is still
// traced to its owner through the very same operations made again.

import { describe, expect, it, vi } from 'vitest';
import { collectGarbage } from '../../src/agent/memory-release.ts';
import { NftCommitError, type Dataplane, type OperationFailure } from '../../src/nft/dataplane.ts';
import { FakeKernel } from '../../src/nft/fake/fake-kernel.ts';
import type { Family } from '../../src/nft/objects.ts';
import type { Transaction } from '../../src/nft/transaction.ts';
import type { ServicePort } from '../../src/model/service-port.ts';
import { Reconciler, type ReconcilerOptions, SMALL_FULL_SYNC_SERVICES } from '../../src/reconciler/reconciler.ts';
import { config, ep, modelReads, sp, V4 } from './fixtures.ts';
import { afterFreshFullSync, listingWithoutHandles } from './kernel-listing.ts';

/** Every fragment rendered since it was last emptied, weakly (renderServicePort, wrapped). */
const renderings = vi.hoisted(() => [] as WeakRef<object>[]);
vi.mock('../../src/reconciler/service-rules.ts', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/reconciler/service-rules.ts')>();
  return {
    ...original,
    renderServicePort: (...args: Parameters<typeof original.renderServicePort>) => {
      const fragment = original.renderServicePort(...args);
      renderings.push(new WeakRef(fragment));
      return fragment;
    },
  };
});

const cfg = config({ families: { IPv4: V4 } });
const ports: ServicePort[] = Array.from({ length: 20 }, (_, i) =>
  sp({ serviceName: `svc-${i}`, clusterIP: `10.96.0.${10 + i}`, endpoints: [ep(`10.244.1.${10 + i}`), ep(`10.244.2.${10 + i}`)] }),
);

/**
 * A dataplane that takes the batch at once, as the addon does (here: the
 * operations as text and the failures it will answer), and answers, applying
 * the batch to a fake kernel, only when `answer` is called.
 */
class SlowKernel implements Dataplane {
  readonly inner = new FakeKernel();
  refusedAddress: string | undefined;
  taken: string[] = [];
  /** The operations of a refused batch as the refusal found them, after the release. */
  remade: string[] = [];
  /** Weak holds on the last batch taken: its last operation, and every element its service ports rendered. */
  watched: WeakRef<object>[] = [];
  #answer: (() => void) | undefined;
  begin(): Transaction {
    return this.inner.begin();
  }
  async commit(tx: Transaction): Promise<void> {
    const failures = this.#take(tx);
    await new Promise<void>((resolve) => (this.#answer = resolve));
    if (failures.length > 0) {
      this.remade.push(JSON.stringify(tx.ops()));
      throw new NftCommitError(failures, tx.ops());
    }
    // Applied from the batch as taken: the fake kernel keeps the objects it is given.
    this.inner.commitSync(JSON.parse(this.taken.at(-1)!));
  }
  /** What the addon does before it returns: reads the batch (made one operation at a time, as the encoder does) and keeps its own copy. */
  #take(tx: Transaction): OperationFailure[] {
    const ops = Array.from(tx.operations());
    this.taken.push(JSON.stringify(ops));
    this.watched = [new WeakRef(ops[ops.length - 1]!)];
    for (const { object: o } of ops) if (o.kind === 'element' && o.set !== 'nodeport-ips') this.watched.push(new WeakRef(o));
    const failures: OperationFailure[] = [];
    ops.forEach((op, index) => {
      if (
        op.verb === 'add' &&
        op.object.kind === 'rule' &&
        this.refusedAddress &&
        JSON.stringify(op.object.exprs).includes(`"${this.refusedAddress}"`)
      )
        failures.push({ index, errno: 22, code: 'EINVAL', message: 'refused by the test kernel' });
    });
    return failures;
  }
  answer(): void {
    this.#answer?.();
  }
  list(family: Family, table: string) {
    return this.inner.list(family, table);
  }
}

/**
 * A reconciler over `kernel` for `servicePorts`, told of each hand-off; `adopt`: its first sync adopts the kernel's tables;
 * `services`: how many Services its reads say the model holds (ModelRead.services; unsaid by default).
 */
function reconcilerOver(
  kernel: SlowKernel,
  servicePorts: ServicePort[],
  onReleased: ReconcilerOptions['onReleased'],
  { adopt = false, services }: { adopt?: boolean; services?: number } = {},
): Reconciler {
  return new Reconciler({
    dataplane: kernel,
    config: cfg,
    servicePorts: modelReads(() => servicePorts, { services }),
    now: () => 0,
    onReleased,
    adopt,
  });
}

describe("a full sync's operations while the kernel works", () => {
  it('are held by nothing once handed over: the collector takes them, and the sync still lands', async () => {
    const kernel = new SlowKernel();
    const collected: boolean[] = [];
    const r = reconcilerOver(kernel, ports, (n, adoption) => {
      expect(n).toBe(JSON.parse(kernel.taken.at(-1)!).length);
      expect(adoption).toBe(false);
      // In a later task, as the agent collects: the sync's own job keeps what it touched weakly.
      setImmediate(() => {
        collectGarbage();
        collected.push(kernel.watched.length > ports.length && kernel.watched.every((w) => w.deref() === undefined));
        kernel.answer();
      });
    });
    const report = await r.sync({ kind: 'full', mode: 'replace' });
    expect(collected).toEqual([true]);
    expect(report.ops).toBe(JSON.parse(kernel.taken[0]!).length);
    expect(listingWithoutHandles(kernel.inner)).toEqual(afterFreshFullSync(ports, cfg));
  });

  it('come from renderings made for them and kept by nothing: each port rendered twice, to be claimed and to be encoded', async () => {
    const kernel = new SlowKernel();
    renderings.length = 0;
    const r = reconcilerOver(kernel, ports, () => setImmediate(() => kernel.answer()));
    await r.sync({ kind: 'full', mode: 'replace' });
    expect(renderings).toHaveLength(2 * ports.length);
    expect(r.state.applied?.unkept).toBeDefined();
    expect(listingWithoutHandles(kernel.inner)).toEqual(afterFreshFullSync(ports, cfg));
  });

  it('a refusal answered after the release names its owner through the same operations made again', async () => {
    const kernel = new SlowKernel();
    kernel.refusedAddress = '10.244.2.13';
    let released = 0;
    const r = reconcilerOver(kernel, ports, () => {
      released++;
      setImmediate(() => {
        collectGarbage();
        // Answered once, then the next attempt (without the culprit) is accepted.
        kernel.refusedAddress = undefined;
        kernel.answer();
      });
    });
    const report = await r.sync({ kind: 'full', mode: 'replace' });
    // Each attempt is a full sync of its own: the retry without the culprit too.
    expect(released).toBe(2);
    expect(kernel.remade).toEqual([kernel.taken[0]]);
    expect(report.rejected.map((x) => [x.serviceName, x.stage, x.code])).toEqual([['svc-3', 'dataplane', 'EINVAL']]);
    expect(kernel.taken).toHaveLength(2);
    const rest = ports.filter((p) => p.serviceName !== 'svc-3');
    expect(listingWithoutHandles(kernel.inner)).toEqual(afterFreshFullSync(rest, cfg));
  });

  it.each([
    ['at most', SMALL_FULL_SYNC_SERVICES, 1],
    ['more than', SMALL_FULL_SYNC_SERVICES + 1, 2],
  ])('of a model of %s SMALL_FULL_SYNC_SERVICES Services (%i) come from renderings made %i time(s) each', async (_, services, times) => {
    const kernel = new SlowKernel();
    renderings.length = 0;
    const r = reconcilerOver(kernel, ports, () => setImmediate(() => kernel.answer()), { services });
    await r.sync({ kind: 'full', mode: 'replace' });
    expect(renderings).toHaveLength(times * ports.length);
    expect(r.state.applied?.unkept === undefined).toBe(times === 1);
    expect(listingWithoutHandles(kernel.inner)).toEqual(afterFreshFullSync(ports, cfg));
  });

  it("an adoption's renderings are held by nothing once its batch is handed over", async () => {
    const kernel = new SlowKernel();
    const answerLater = () => setImmediate(() => kernel.answer());
    // The rules a previous run left behind.
    await reconcilerOver(kernel, ports, answerLater).sync({ kind: 'full', mode: 'replace' });
    renderings.length = 0;
    // One service changed since: the adoption has a batch to commit.
    const now = [
      sp({ serviceName: 'svc-0', clusterIP: '10.96.0.10', endpoints: [ep('10.244.1.10'), ep('10.244.2.10'), ep('10.244.3.10')] }),
      ...ports.slice(1),
    ];
    const collected: boolean[] = [];
    const r = reconcilerOver(
      kernel,
      now,
      (_, adoption) => {
        expect(adoption).toBe(true);
        setImmediate(() => {
          collectGarbage();
          collected.push(renderings.length >= now.length && renderings.every((w) => w.deref() === undefined));
          kernel.answer();
        });
      },
      { adopt: true },
    );
    const report = await r.sync({ kind: 'full', mode: 'replace' });
    expect(report.mode).toBe('adopt');
    expect(collected).toEqual([true]);
    expect(listingWithoutHandles(kernel.inner)).toEqual(afterFreshFullSync(now, cfg));
  });
});

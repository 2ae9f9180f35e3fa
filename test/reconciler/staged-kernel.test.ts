// A first sync where the kernel holds none of our tables, committed in stages
// (ReconcilerOptions.tablesAbsent) through the netlink dataplane into a real
// kernel: it leaves what a one-transaction replace leaves, and when a port
// fails the checks late in the stream, the stages already sent are emptied by
// the retry's replace, which commits every other port.

import { describe, expect, it } from 'vitest';
import { NetlinkDataplane } from '../../src/nft/netlink/netlink-dataplane.ts';
import type { Transaction } from '../../src/nft/transaction.ts';
import type { ServicePort } from '../../src/model/service-port.ts';
import { Reconciler } from '../../src/reconciler/reconciler.ts';
import { holding, kernel } from '../native/kernel-helpers.ts';
import { config, ep, modelReads, sp, V4 } from './fixtures.ts';

const cfg = config({ families: { IPv4: V4 }, endpointShape: 'map' });
const TABLE = 'kube-nft-proxy';

/** The netlink dataplane, and what each commit was let stage. */
class RecordingDataplane extends NetlinkDataplane {
  readonly stageable: number[] = [];
  override commit(tx: Transaction): Promise<void> {
    this.stageable.push(tx.stageable);
    return super.commit(tx);
  }
}

/** kernel-helpers' namespace (deleted after the test), programmed through a RecordingDataplane. */
function recordingKernel(): { dp: RecordingDataplane } {
  return { dp: new RecordingDataplane({ netns: kernel().ns.path }) };
}

const portAt = (i: number, extra: { sessionAffinityTimeout?: number } = {}): ServicePort =>
  sp({
    serviceName: `s${i}`,
    clusterIP: `10.96.${i >> 8}.${i & 255}`,
    endpoints: [ep(`10.244.${i >> 7}.${(i & 127) * 2}`), ep(`10.244.${i >> 7}.${(i & 127) * 2 + 1}`)],
    ...extra,
  });

/** 6,000 ports of two endpoints each: a batch of several 1 MiB pieces. */
const ports: ServicePort[] = Array.from({ length: 6_000 }, (_, i) => portAt(i));

async function synced(dp: NetlinkDataplane, model: ServicePort[], tablesAbsent: boolean) {
  const r = new Reconciler({ dataplane: dp, config: cfg, servicePorts: modelReads(() => model), now: () => 0, tablesAbsent });
  return r.sync({ kind: 'full', mode: 'replace' });
}

describe('a first sync committed in stages, in the kernel', () => {
  it('leaves what one transaction leaves', async () => {
    const one = recordingKernel();
    await synced(one.dp, ports, false);
    expect(one.dp.lastCommit!.transactions).toBe(1);
    const staged = recordingKernel();
    const before = await staged.dp.generation();
    await synced(staged.dp, ports, true);
    const stages = staged.dp.lastCommit!.transactions;
    expect(stages).toBeGreaterThan(2);
    expect((await staged.dp.generation()) - before).toBe(stages);
    expect(await holding(staged.dp, TABLE)).toEqual(await holding(one.dp, TABLE));
  }, 120_000);

  it('a port that fails the checks late: the stages sent are emptied by the retry, which commits every other port', async () => {
    const bad = ports.length - 10;
    const model = ports.map((p, i) => (i === bad ? portAt(i, { sessionAffinityTimeout: 0 }) : p));
    const { dp } = recordingKernel();
    const report = await synced(dp, model, true);
    expect(report.rejected.map((x) => x.serviceName)).toEqual([`s${bad}`]);
    // The first attempt was staged; the retry is a replace in one transaction (what stages had landed went with the table).
    expect(dp.stageable[0]).toBeGreaterThan(0);
    expect(dp.stageable.slice(1)).toEqual([0]);
    expect(dp.lastCommit!.transactions).toBe(1);
    const fresh = recordingKernel();
    await synced(
      fresh.dp,
      ports.filter((_, i) => i !== bad),
      false,
    );
    expect(await holding(dp, TABLE)).toEqual(await holding(fresh.dp, TABLE));
  }, 120_000);
});

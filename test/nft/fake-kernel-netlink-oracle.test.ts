// The same scenarios as fake-kernel-oracle.test.ts, replayed through the netlink
// dataplane (the addon) instead of `nft -f`: no nft userspace checks in the
// way, and `destroy`, which nft 1.0.6 cannot say, is checked too.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NftCommitError } from '../../src/nft/dataplane.ts';
import { FakeKernel } from '../../src/nft/fake/fake-kernel.ts';
import type { Operation } from '../../src/nft/objects.ts';
import { NetlinkDataplane } from '../../src/nft/netlink/netlink-dataplane.ts';
import { NftInvalidError } from '../../src/nft/transaction.ts';
import { createNetns, type NetNs } from '../helpers/netns.ts';
import { F, T } from './fixtures.ts';
import { scenarios, type HandleOf, type Scenario } from './fake-kernel-scenarios.ts';
import { sortListing } from './nft-json.ts';

interface Outcome {
  code: string;
  index?: number;
}

let ns: NetNs;
beforeAll(() => {
  ns = createNetns('knp-fakenl');
});
afterAll(() => ns?.destroy());

async function outcome(commit: Promise<void>): Promise<Outcome> {
  try {
    await commit;
    return { code: 'ok' };
  } catch (e) {
    if (e instanceof NftInvalidError) return { code: 'invalid', index: e.index };
    if (!(e instanceof NftCommitError)) throw e;
    return { code: e.failures[0]!.code, index: e.failures[0]!.index };
  }
}

describe('FakeKernel against the kernel through the netlink dataplane (oracle)', () => {
  // An element of a set the dataplane has never seen cannot be encoded (its key
  // types are unknown), so that one scenario is for the fake and nft only.
  const cases = scenarios.filter((s) => s.netlink !== false);
  it('covers the scenarios', () => expect(cases.length).toBe(scenarios.length - 1));

  it.each(cases.map((s) => [s.name, s] as const))('%s', async (_n, s: Scenario) => {
    ns.exec('nft', ['flush', 'ruleset']);
    const kernel = new NetlinkDataplane({ netns: ns.path });
    const fake = new FakeKernel({ flowtables: s.flowtables ?? false });
    await kernel.commit(kernel.begin().queueAll(s.setup));
    fake.commitSync(s.setup);
    const before = await kernel.list(F, T);
    const hk: HandleOf = (c, i) => before!.rules.filter((r) => r.chain === c)[i]!.handle!;
    const hf: HandleOf = (c, i) => fake.listSync(F, T)!.rules.filter((r) => r.chain === c)[i]!.handle!;
    const k = await outcome(kernel.commit(kernel.begin().queueAll(s.tx(hk) as Operation[])));
    const m = await outcome(fake.commit(fake.begin().queueAll(s.tx(hf))));
    expect(m.code).toBe(k.code);
    expect(k.code).toBe(s.expect);
    if (s.index !== undefined) {
      expect(k.index).toBe(s.index);
      expect(m.index).toBe(s.index);
    }
    // Element order is not part of the contract the two listings share.
    const strip = (l: Awaited<ReturnType<FakeKernel['list']>>) =>
      l && sortListing({ ...l, rules: l.rules.map(({ handle: _h, ...r }) => r) });
    expect(strip(await kernel.list(F, T))).toEqual(strip(fake.listSync(F, T)));
  });
});

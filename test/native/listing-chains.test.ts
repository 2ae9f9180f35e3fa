// A table's rules are listed chain by chain (a dump of the whole table is
// quadratic in the kernel: native/libnftnl-glue/list.cc). What that must keep:
// every chain's rules in the chain's order, chains without rules, and a reading
// that meets a commit deleting a chain between its two dumps is read again,
// never given back torn: the kernel answers the rule dump of a chain that is
// gone with no rules and no error, so only the generation check can tell.

import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { Operation, Rule, TableListing } from '../../src/nft/objects.ts';
import { kernel } from './kernel-helpers.ts';

const T = 'chains';
/** Between the churn's commits, so that most readings fall between two (a reading takes a few ms). */
const GAP_MS = 5;
const CHAINS = 300;

const chainName = (i: number): string => `c${i}`;
/** Chain i holds i % 4 rules (some none), each told apart by its comment. */
const rulesOf = (i: number): Rule[] =>
  Array.from({ length: i % 4 }, (_, r) => ({
    kind: 'rule',
    family: 'ip',
    table: T,
    chain: chainName(i),
    exprs: [{ kind: 'counter' }],
    comment: `${chainName(i)} rule ${r}`,
  }));
const chainOps = (i: number): Operation[] => [
  { verb: 'add', object: { kind: 'chain', family: 'ip', table: T, name: chainName(i) } },
  ...rulesOf(i).map((object) => ({ verb: 'add' as const, object })),
];

/** Chain name → its rules' comments, in the order listed. */
function rulesByChain(listing: TableListing): Map<string, string[]> {
  const out = new Map<string, string[]>(listing.chains.map((c) => [c.name, []]));
  for (const r of listing.rules) {
    const list = out.get(r.chain);
    if (list === undefined) throw new Error(`rule "${r.comment}" of chain ${r.chain}, which the listing does not hold`);
    list.push(r.comment ?? '');
  }
  return out;
}

function wanted(chains: number[]): Map<string, string[]> {
  return new Map(chains.map((i) => [chainName(i), rulesOf(i).map((r) => r.comment!)]));
}

const all = Array.from({ length: CHAINS }, (_, i) => i);
const odd = all.filter((i) => i % 2 === 1);
const evens = all.filter((i) => i % 2 === 0);
/** The table and every chain with its rules. */
const everyChain: Operation[] = [{ verb: 'add', object: { kind: 'table', family: 'ip', name: T } }, ...all.flatMap(chainOps)];

describe('listing a table chain by chain', () => {
  it("gives every chain's rules in the chain's order, and chains that hold none", async () => {
    const { dp } = kernel();
    await dp.commit(dp.begin().queueAll(everyChain));
    const listing = (await dp.list('ip', T))!;
    expect(listing.chains).toHaveLength(CHAINS);
    expect(listing.rules).toHaveLength(all.reduce((n, i) => n + (i % 4), 0));
    expect(rulesByChain(listing)).toEqual(wanted(all));
  });

  it('is read again, never torn, when commits delete and add chains while it is read', async () => {
    const { dp } = kernel();
    await dp.commit(dp.begin().queueAll(everyChain));
    // The even chains go and come back, over and over, while the table is listed.
    const deleteEvens: Operation[] = evens.map((i) => ({
      verb: 'delete',
      object: { kind: 'chain', family: 'ip', table: T, name: chainName(i) },
    }));
    let stop = false;
    let commits = 0;
    const churn = (async () => {
      while (!stop) {
        await dp.commit(dp.begin().queueAll(deleteEvens));
        await sleep(GAP_MS);
        await dp.commit(dp.begin().queueAll(evens.flatMap(chainOps)));
        await sleep(GAP_MS);
        commits += 2;
      }
    })();
    const seen = { whole: 0, odd: 0 };
    try {
      for (let round = 0; round < 60; round++) {
        const listing = await dp.list('ip', T).catch((e: Error) => {
          if (!/kept changing/.test(e.message)) throw e;
        });
        if (!listing) continue;
        const got = rulesByChain(listing);
        if (got.size === CHAINS) {
          expect(got).toEqual(wanted(all));
          seen.whole++;
        } else {
          expect(got).toEqual(wanted(odd));
          seen.odd++;
        }
      }
    } finally {
      stop = true;
      await churn;
    }
    // Both states were read, between many commits, and a reading that met
    // commit after commit (it is retried 8 times) is the only other answer.
    expect(commits).toBeGreaterThan(10);
    expect(seen.whole).toBeGreaterThan(0);
    expect(seen.odd).toBeGreaterThan(0);
    expect(seen.whole + seen.odd).toBeGreaterThan(40);
  }, 60_000);
});

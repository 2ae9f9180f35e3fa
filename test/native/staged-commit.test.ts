// A transaction whose first operations hook nothing (Transaction.stageable),
// committed in stages against the real kernel in a namespace: the kernel
// ends up holding what one transaction leaves, each stage is a transaction
// of its own, and a refusal in a late stage names its operation in the
// whole, sends nothing after it and leaves nothing hooked.

import { describe, expect, it } from 'vitest';
import { NetlinkDataplane } from '../../src/nft/netlink/netlink-dataplane.ts';
import type { Operation } from '../../src/nft/objects.ts';
import { NftInvalidError } from '../../src/nft/transaction.ts';
import { commitError, holding, kernel, nftList, verdictMapOps } from './kernel-helpers.ts';

/** verdictMapOps, then what hooks it: a base chain whose rule jumps to its chain. */
function hookedOps(table: string, n: number): { ops: Operation[]; hookedFrom: number } {
  const ops = verdictMapOps(table, n, '80');
  const hookedFrom = ops.length;
  ops.push({
    verb: 'add',
    object: { kind: 'chain', family: 'ip', table, name: 'in', base: { type: 'filter', hook: 'input', priority: 0, policy: 'accept' } },
  });
  ops.push({
    verb: 'add',
    object: { kind: 'rule', family: 'ip', table, chain: 'in', exprs: [{ kind: 'verdict', verdict: 'jump', chain: 'c' }] },
  });
  return { ops, hookedFrom };
}

function staged(dp: NetlinkDataplane, ops: readonly Operation[], stageable: number) {
  return dp.begin().queueGenerated(() => ops, ops.length, { stageable });
}

/** A staging dataplane over a fresh namespace: stages of 256 KiB (a ~10th of 60k elements). */
function stagingKernel() {
  const k = kernel();
  return { ...k, dp: new NetlinkDataplane({ netns: k.ns.path, stageBytes: 256 << 10 }) };
}

describe('a staged commit', () => {
  it('lands as several transactions what one transaction lands', async () => {
    const { ops, hookedFrom } = hookedOps('a', 60_000);
    const one = kernel();
    await one.dp.commit(staged(one.dp, ops, 0));
    expect(one.dp.lastCommit!.transactions).toBe(1);

    const { dp } = stagingKernel();
    const before = await dp.generation();
    await dp.commit(staged(dp, ops, hookedFrom));
    const stages = dp.lastCommit!.transactions;
    expect(stages).toBeGreaterThan(2);
    expect((await dp.generation()) - before).toBe(stages);
    expect(dp.lastCommit!.sendMs).toBeGreaterThan(0);
    expect(await holding(dp, 'a')).toEqual(await holding(one.dp, 'a'));
  }, 60_000);

  it('a kernel refusal in a late stage names its operation in the whole; nothing after it is sent, nothing is hooked', async () => {
    const { ops, hookedFrom } = hookedOps('a', 60_000);
    const good = ops.slice();
    const bad = 3 + 50_000;
    const el = ops[bad]!.object as Extract<Operation['object'], { kind: 'element' }>;
    ops[bad] = { verb: 'add', object: { ...el, value: { verdict: 'goto', chain: 'no-such-chain' } } };
    const { ns, dp } = stagingKernel();
    const before = await dp.generation();
    const err = await commitError(() => dp.commit(staged(dp, ops, hookedFrom)));
    expect(err.failures).toEqual([expect.objectContaining({ index: bad, code: 'ENOENT' })]);
    const landed = dp.lastCommit!.transactions - 1;
    expect(landed).toBeGreaterThan(1);
    // Those before it landed, in a table that hooks nothing; none after it is sent later.
    await new Promise((r) => setTimeout(r, 50));
    expect((await dp.generation()) - before).toBe(landed);
    expect(nftList(ns, 'chain').filter((c) => c.hook !== undefined)).toEqual([]);
    expect((await holding(dp, 'a'))!.elements.length).toBeLessThan(50_000);
    // The next replace, one transaction, empties them with the table.
    const replace: Operation[] = [good[0]!, { verb: 'delete', object: good[0]!.object }, ...good];
    await dp.commit(staged(dp, replace, 0));
    const fresh = kernel();
    await fresh.dp.commit(staged(fresh.dp, good, 0));
    expect(await holding(dp, 'a')).toEqual(await holding(fresh.dp, 'a'));
  }, 60_000);

  it('an invalid operation is told once no stage is being sent, and nothing after it is sent', async () => {
    const { ops, hookedFrom } = hookedOps('a', 60_000);
    const bad = 3 + 50_000;
    const el = ops[bad]!.object as Extract<Operation['object'], { kind: 'element' }>;
    ops[bad] = { verb: 'add', object: { ...el, key: ['10.0.0.300', 'tcp', '80'] } };
    const { ns, dp } = stagingKernel();
    const before = await dp.generation();
    const tx = staged(dp, ops, hookedFrom);
    await expect(dp.commit(tx)).rejects.toBeInstanceOf(NftInvalidError);
    expect(tx.errors.map((e) => e.index)).toEqual([bad]);
    // Those the stream's thread had sent by then (how many depends on the machine's speed), no more, hooking nothing.
    const landed = (await dp.generation()) - before;
    await new Promise((r) => setTimeout(r, 50));
    expect((await dp.generation()) - before).toBe(landed);
    expect(nftList(ns, 'chain').filter((c) => c.hook !== undefined)).toEqual([]);
    expect((await holding(dp, 'a'))?.elements.length ?? 0).toBeLessThan(50_000);
  }, 60_000);
});

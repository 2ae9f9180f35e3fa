// The addon keeps its commit socket open between commits (closing one waits
// for the kernel's deferred destruction of the last transaction). A reused
// socket must still program the namespace its path names now, and a failed
// commit must not leave answers behind for the next one.

import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { NftCommitError } from '../../src/nft/dataplane.ts';
import type { Operation } from '../../src/nft/objects.ts';
import { kernel, nftList } from './kernel-helpers.ts';

const T = 'knp';
const table = (comment?: string): Operation => ({
  verb: 'add',
  object: { kind: 'table', family: 'ip', name: T, ...(comment ? { comment } : {}) },
});
const chain = (name: string): Operation => ({ verb: 'add', object: { kind: 'chain', family: 'ip', table: T, name } });

// kernel() deletes its namespace once; one re-created under the same name is
// this file's to delete.
const recreated: string[] = [];
afterEach(() => {
  for (const name of recreated.splice(0)) execFileSync('ip', ['netns', 'del', name], { stdio: 'ignore' });
});

describe('commit socket reuse', () => {
  it('many commits to one namespace all land, failed ones in between change nothing', async () => {
    const { ns, dp } = kernel();
    await dp.commit(dp.begin().queueAll([table()]));
    for (let i = 0; i < 20; i++) {
      await dp.commit(dp.begin().queueAll([chain(`c${i}`)]));
      // An operation the kernel refuses: its error must be read with this commit, not the next.
      const bad: Operation[] = [chain(`never${i}`), { verb: 'delete', object: { kind: 'chain', family: 'ip', table: T, name: 'missing' } }];
      await expect(dp.commit(dp.begin().queueAll(bad))).rejects.toBeInstanceOf(NftCommitError);
    }
    expect(
      nftList(ns, 'chain')
        .map((c) => c.name)
        .sort(),
    ).toEqual(Array.from({ length: 20 }, (_, i) => `c${i}`).sort());
  });

  it('a namespace deleted and re-created under the same path is programmed, not the old one', async () => {
    const { ns, dp } = kernel();
    await dp.commit(dp.begin().queueAll([table(), chain('old')]));
    ns.destroy();
    execFileSync('ip', ['netns', 'add', ns.name]);
    recreated.push(ns.name);
    await dp.commit(dp.begin().queueAll([table(), chain('new')]));
    // ns lists by name, so this is the re-created namespace.
    expect(nftList(ns, 'chain').map((c) => c.name)).toEqual(['new']);
  });

  it('commits to several namespaces in turn each land in their own', async () => {
    const spaces = Array.from({ length: 6 }, () => kernel());
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < spaces.length; i++)
        await spaces[i]!.dp.commit(
          spaces[i]!.dp.begin().queueAll(round === 0 ? [table(), chain(`ns${i}-r0`)] : [chain(`ns${i}-r${round}`)]),
        );
    }
    spaces.forEach(({ ns }, i) => {
      expect(
        nftList(ns, 'chain')
          .map((c) => c.name)
          .sort(),
      ).toEqual([`ns${i}-r0`, `ns${i}-r1`, `ns${i}-r2`]);
    });
  });
});

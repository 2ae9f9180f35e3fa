// The addon keeps its commit socket open between commits (closing one waits
// for the kernel's deferred destruction of the last transaction). A reused
// socket must still program the namespace its path names now, and a failed
// commit must not leave answers behind for the next one.

import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { NftCommitError } from '../../src/nft/dataplane.ts';
import { NetlinkDataplane } from '../../src/nft/netlink-dataplane.ts';
import type { Operation } from '../../src/nft/objects.ts';
import { createNetns, type NetNs } from '../helpers/netns.ts';

const T = 'knp';
const table = (comment?: string): Operation => ({ verb: 'add', object: { kind: 'table', family: 'ip', name: T, ...(comment ? { comment } : {}) } });
const chain = (name: string): Operation => ({ verb: 'add', object: { kind: 'chain', family: 'ip', table: T, name } });
const chainsIn = (ns: NetNs): string[] =>
  ns.nftJson().nftables.filter((o) => 'chain' in o).map((o) => o.chain.name as string).sort();

const made: NetNs[] = [];
afterEach(() => {
  for (const ns of made.splice(0)) ns.destroy();
  for (const name of recreated.splice(0)) execFileSync('ip', ['netns', 'del', name], { stdio: 'ignore' });
});
const recreated: string[] = [];

describe('commit socket reuse', () => {
  it('many commits to one namespace all land, failed ones in between change nothing', async () => {
    const ns = createNetns('knp-sock');
    made.push(ns);
    const dp = new NetlinkDataplane({ netns: ns.path });
    await dp.commit([table()]);
    for (let i = 0; i < 20; i++) {
      await dp.commit([chain(`c${i}`)]);
      // An operation the kernel refuses: its error must be read with this commit, not the next.
      const bad: Operation[] = [chain(`never${i}`), { verb: 'delete', object: { kind: 'chain', family: 'ip', table: T, name: 'missing' } }];
      await expect(dp.commit(bad)).rejects.toBeInstanceOf(NftCommitError);
    }
    expect(chainsIn(ns)).toEqual(Array.from({ length: 20 }, (_, i) => `c${i}`).sort());
  });

  it('a namespace deleted and re-created under the same path is programmed, not the old one', async () => {
    const ns = createNetns('knp-sock');
    made.push(ns);
    const dp = new NetlinkDataplane({ netns: ns.path });
    await dp.commit([table(), chain('old')]);
    ns.destroy();
    execFileSync('ip', ['netns', 'add', ns.name]);
    recreated.push(ns.name);
    await dp.commit([table(), chain('new')]);
    const listed = JSON.parse(execFileSync('ip', ['netns', 'exec', ns.name, 'nft', '-j', 'list', 'ruleset'], { encoding: 'utf8' }));
    const names = listed.nftables.filter((o: Record<string, any>) => 'chain' in o).map((o: Record<string, any>) => o.chain.name);
    expect(names).toEqual(['new']);
  });

  it('commits to several namespaces in turn each land in their own', async () => {
    const spaces = Array.from({ length: 6 }, () => createNetns('knp-sock'));
    made.push(...spaces);
    const planes = spaces.map((ns) => new NetlinkDataplane({ netns: ns.path }));
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < spaces.length; i++) await planes[i]!.commit(round === 0 ? [table(), chain(`ns${i}-r0`)] : [chain(`ns${i}-r${round}`)]);
    }
    spaces.forEach((ns, i) => expect(chainsIn(ns)).toEqual([`ns${i}-r0`, `ns${i}-r1`, `ns${i}-r2`]));
  });
});

// The addon reads a batch where JS encoded it, until the commit settles (no
// copy: a full sync's batch is tens of MiB). So the bytes must stay alive
// without any JS reference, and the dataplane must not encode another commit
// into a buffer a worker is still reading.

import { describe, expect, it } from 'vitest';
import { collectGarbage } from '../../src/agent/memory-release.ts';
import { loadAddon } from '../../src/native/addon.ts';
import { encodeOperations } from '../../src/nft/netlink/encode.ts';
import { ByteWriter } from '../../src/nft/netlink/wire.ts';
import { kernel, verdictMapOps } from './kernel-helpers.ts';

/** The map's elements as "addr . proto . port" strings, from nft -j. */
function mapKeys(ns: ReturnType<typeof kernel>['ns'], table: string): string[] {
  // Only this map, with time to spare: nft prints 200k elements slowly on a busy machine (20 s was not enough once).
  const out = JSON.parse(ns.exec('nft', ['-j', 'list', 'map', 'ip', table, 'm'], { timeoutMs: 120_000 })) as { nftables: Array<Record<string, any>> };
  const map = out.nftables.find((o) => 'map' in o)!.map;
  return (map.elem ?? []).map((e: [{ concat: unknown[] }, unknown]) => e[0].concat.join(' . '));
}

describe('the batch handed to the addon', () => {
  it('stays alive while the worker reads it, with no JS reference left to it, and is let go after', async () => {
    const { ns } = kernel();
    const addon = loadAddon();
    let bytes: Uint8Array | undefined = encodeOperations(verdictMapOps('a', 200_000, '80'), undefined, new ByteWriter(1024)).bytes;
    const batch = new WeakRef(bytes);
    const pending = addon.commit(bytes, { netns: ns.path });
    bytes = undefined;
    // A WeakRef keeps its target until the current job ends; the commit takes far longer than a tick.
    await new Promise<void>((r) => setImmediate(r));
    collectGarbage();
    expect(batch.deref()).toBeDefined();
    const result = await pending;
    expect(result.failures).toEqual([]);
    await new Promise<void>((r) => setImmediate(r));
    collectGarbage();
    expect(batch.deref()).toBeUndefined();
    const keys = mapKeys(ns, 'a');
    expect(keys).toHaveLength(200_000);
    expect(keys).toContain('10.0.195.79 . tcp . 80');
  }, 120_000);

  it('is not overwritten by a commit that the same dataplane starts meanwhile', async () => {
    const { ns, dp } = kernel();
    // Not awaited: the second commit is encoded while the first one's worker reads its batch.
    const first = dp.commit(dp.begin().queueAll(verdictMapOps('a', 100_000, '80')));
    const second = dp.commit(dp.begin().queueAll(verdictMapOps('b', 2_000, '443')));
    await Promise.all([first, second]);
    const a = mapKeys(ns, 'a');
    expect(a).toHaveLength(100_000);
    expect(a.every((k) => k.endsWith(' . tcp . 80'))).toBe(true);
    const b = mapKeys(ns, 'b');
    expect(b).toHaveLength(2_000);
    expect(b.every((k) => k.endsWith(' . tcp . 443'))).toBe(true);
    // And routine commits still share one writer afterwards.
    await dp.commit(dp.begin().queueAll([{ verb: 'delete', object: { kind: 'element', family: 'ip', table: 'b', set: 'm', key: ['10.0.0.1', 'tcp', '443'] } }]));
    expect(mapKeys(ns, 'b')).toHaveLength(1_999);
  }, 120_000);
});

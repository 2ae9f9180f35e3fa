// The addon copies a batch before commit() returns and checks and reads only
// its copy: JS may overwrite or drop its buffer at once, and the dataplane
// reuses its writer for the next commit while a worker still sends the last.

import { describe, expect, it } from 'vitest';
import { loadAddon } from '../../src/native/addon.ts';
import { encodeOperations } from '../../src/nft/netlink/encode.ts';
import { ByteWriter } from '../../src/nft/netlink/wire.ts';
import { kernel, verdictMapOps } from './kernel-helpers.ts';

/** The map's elements as "addr . proto . port" strings, from nft -j. */
function mapKeys(ns: ReturnType<typeof kernel>['ns'], table: string): string[] {
  // Only this map, with time to spare: nft prints 100k elements slowly on a busy machine.
  const out = JSON.parse(ns.exec('nft', ['-j', 'list', 'map', 'ip', table, 'm'], { timeoutMs: 120_000 })) as {
    nftables: Array<Record<string, any>>;
  };
  const map = out.nftables.find((o) => 'map' in o)!.map;
  return (map.elem ?? []).map((e: [{ concat: unknown[] }, unknown]) => e[0].concat.join(' . '));
}

describe('the batch handed to the addon', () => {
  it('is copied: overwriting the buffer right after commit() returns changes nothing that lands', async () => {
    const { ns } = kernel();
    const addon = loadAddon();
    const bytes = encodeOperations(verdictMapOps('a', 100_000, '80'), undefined, new ByteWriter(1024)).bytes;
    const t0 = performance.now();
    const pending = addon.commit(bytes, { netns: ns.path });
    const handoffMs = performance.now() - t0;
    // Were a worker still reading the caller's memory, it would find zeros past the first record.
    const header = bytes.slice(0, 64);
    bytes.fill(0);
    bytes.set(header);
    const result = await pending;
    console.log(`100k elements: ${(bytes.length / 1e6).toFixed(1)} MB copied and queued in ${handoffMs.toFixed(1)} ms`);
    expect(result.failures).toEqual([]);
    const keys = mapKeys(ns, 'a');
    expect(keys).toHaveLength(100_000);
    expect(keys).toContain('10.1.134.159 . tcp . 80');
  }, 120_000);

  it('the dataplane reuses its writer for a commit started while the last one is still sent', async () => {
    const { ns, dp } = kernel();
    // Not awaited: the second commit is encoded while the first one's worker sends its batch.
    const first = dp.commit(dp.begin().queueAll(verdictMapOps('a', 100_000, '80')));
    const second = dp.commit(dp.begin().queueAll(verdictMapOps('b', 2_000, '443')));
    await Promise.all([first, second]);
    const a = mapKeys(ns, 'a');
    expect(a).toHaveLength(100_000);
    expect(a.every((k) => k.endsWith(' . tcp . 80'))).toBe(true);
    const b = mapKeys(ns, 'b');
    expect(b).toHaveLength(2_000);
    expect(b.every((k) => k.endsWith(' . tcp . 443'))).toBe(true);
    await dp.commit(
      dp
        .begin()
        .queueAll([{ verb: 'delete', object: { kind: 'element', family: 'ip', table: 'b', set: 'm', key: ['10.0.0.1', 'tcp', '443'] } }]),
    );
    expect(mapKeys(ns, 'b')).toHaveLength(1_999);
  }, 120_000);
});

// The addon copies a batch before commit() returns and checks and reads only
// its copy: JS may overwrite or drop its buffer at once, and the dataplane
// reuses its writer for the next commit while a worker still sends the last.
// A batch in a buffer the addon allocated is taken instead: detached from JS
// when commit() returns, never copied (how the dataplane hands over a full sync).

import { describe, expect, it } from 'vitest';
import { loadAddon } from '../../src/native/addon.ts';
import { encodeOperations } from '../../src/nft/netlink/encode.ts';
import { NetlinkDataplane } from '../../src/nft/netlink/netlink-dataplane.ts';
import { ByteWriter } from '../../src/nft/netlink/wire.ts';
import { kernel, verdictMapOps } from './kernel-helpers.ts';

/**
 * The map's elements as "addr . proto . port" strings, from nft -j, once a listing
 * comes back without a key twice. The kernel grows a large set's hash table after
 * the commit, in the background, and dumps a set in pieces, each skipping what
 * the pieces before it sent: a piece dumped after the table was rehashed repeats
 * some keys and skips as many others. Nothing is lost; the next listing is whole.
 */
function mapKeys(ns: ReturnType<typeof kernel>['ns'], table: string): string[] {
  for (let attempt = 1; ; attempt++) {
    // Only this map, with time to spare: nft prints 100k elements slowly on a busy machine.
    const out = JSON.parse(ns.exec('nft', ['-j', 'list', 'map', 'ip', table, 'm'], { timeoutMs: 120_000 })) as {
      nftables: Array<Record<string, any>>;
    };
    const map = out.nftables.find((o) => 'map' in o)!.map;
    const keys: string[] = (map.elem ?? []).map((e: [{ concat: unknown[] }, unknown]) => e[0].concat.join(' . '));
    if (new Set(keys).size === keys.length || attempt === 10) return keys;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
  }
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
    // 10k elements: an incremental sync's size, in the writer the dataplane keeps (and the addon copies).
    const first = dp.commit(dp.begin().queueAll(verdictMapOps('a', 10_000, '80')));
    const second = dp.commit(dp.begin().queueAll(verdictMapOps('b', 2_000, '443')));
    await Promise.all([first, second]);
    const a = mapKeys(ns, 'a');
    expect(a).toHaveLength(10_000);
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

  it('in a buffer from allocateBatch is taken: detached when commit() returns, and what lands is what was written', async () => {
    const { ns } = kernel();
    const addon = loadAddon();
    const encoded = encodeOperations(verdictMapOps('a', 1_000, '80')).bytes;
    // At an offset, as a view into a larger buffer: the view's bytes are what counts.
    const buffer = addon.allocateBatch(encoded.length + 64);
    expect(new Uint8Array(buffer).every((b) => b === 0)).toBe(true);
    const view = new Uint8Array(buffer, 32, encoded.length);
    view.set(encoded);
    const pending = addon.commit(view, { netns: ns.path });
    expect((buffer as ArrayBuffer & { detached: boolean }).detached).toBe(true);
    expect(view.length).toBe(0);
    expect((await pending).failures).toEqual([]);
    expect(mapKeys(ns, 'a')).toHaveLength(1_000);
    // Taken once: what is left of it is an empty batch.
    await expect(addon.commit(view, { netns: ns.path })).rejects.toMatchObject({ code: 'ERR_NFT_BATCH_TRUNCATED' });
  }, 120_000);

  it('allocateBatch refuses sizes that are not a whole number of bytes from 1 to 2^32-1', () => {
    const addon = loadAddon();
    for (const size of [0, -1, 1.5, 2 ** 32, Number.NaN])
      expect(() => addon.allocateBatch(size), String(size)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
    expect(() => addon.allocateBatch('1' as unknown as number)).toThrow(TypeError);
    expect(addon.allocateBatch(3).byteLength).toBe(3);
  });

  it("the dataplane encodes a full sync's batch into the addon's memory, which the commit takes", async () => {
    const { ns } = kernel();
    const native = loadAddon();
    const allocated: number[] = [];
    const addon = {
      ...native,
      allocateBatch: (size: number) => {
        allocated.push(size);
        return native.allocateBatch(size);
      },
    };
    const dp = new NetlinkDataplane({ netns: ns.path, addon });
    await dp.commit(dp.begin().queueAll(verdictMapOps('a', 100_000, '80')));
    // One buffer, sized once from the operations, past the 4 MiB kept for incremental syncs.
    expect(allocated).toHaveLength(1);
    expect(allocated[0]).toBeGreaterThan(4 * 2 ** 20);
    expect(dp.lastCommit!.batchBytes).toBeGreaterThan(4 * 2 ** 20);
    expect(mapKeys(ns, 'a')).toHaveLength(100_000);
    // A small commit afterwards goes through a plain buffer of the dataplane's own.
    await dp.commit(
      dp
        .begin()
        .queueAll([{ verb: 'delete', object: { kind: 'element', family: 'ip', table: 'a', set: 'm', key: ['10.0.0.1', 'tcp', '80'] } }]),
    );
    expect(allocated).toHaveLength(1);
    expect(mapKeys(ns, 'a')).toHaveLength(99_999);
  }, 120_000);

  it('generated operations (a full sync) are encoded as they are made and land as the listed ones do', async () => {
    const { ns, dp } = kernel();
    let made = 0;
    const tx = dp.begin().queueGenerated(() => {
      made++;
      return verdictMapOps('g', 30_000, '443');
    }, 30_003);
    await dp.commit(tx);
    // Made once, checked as it is encoded: never listed.
    expect(made).toBe(1);
    expect(dp.lastCommit).toMatchObject({ operations: 30_003 });
    const keys = mapKeys(ns, 'g');
    expect(keys).toHaveLength(30_000);
    expect(new Set(keys)).toEqual(
      new Set(verdictMapOps('g', 30_000, '443').flatMap(({ object: o }) => (o.kind === 'element' ? [o.key.join(' . ')] : []))),
    );
  }, 120_000);
});

// The addon reads a batch where JS encoded it, until the commit settles (no
// copy: a full sync's batch is tens of MiB). So the bytes must stay alive
// without any JS reference, and the dataplane must not encode another commit
// into a buffer a worker is still reading.

import { describe, expect, it } from 'vitest';
import { collectGarbage } from '../../src/agent/memory-release.ts';
import { loadAddon } from '../../src/native.ts';
import { encodeOperations } from '../../src/nft/encode.ts';
import type { NftMap, Operation } from '../../src/nft/objects.ts';
import { ByteWriter } from '../../src/nft/wire.ts';
import { kernel, nftList } from './kernel-helpers.ts';

const ip = (i: number) => `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`;

/** A table with a verdict map of `n` elements, keys 10.0.0.0 + i . tcp . port. */
function tableWithMap(table: string, n: number, port: string): Operation[] {
  const map: NftMap = { kind: 'map', family: 'ip', table, name: 'm', keyType: ['ipv4_addr', 'inet_proto', 'inet_service'], dataType: 'verdict' };
  const ops: Operation[] = [
    { verb: 'add', object: { kind: 'table', family: 'ip', name: table } },
    { verb: 'add', object: { kind: 'chain', family: 'ip', table, name: 'c' } },
    { verb: 'add', object: map },
  ];
  for (let i = 0; i < n; i++) ops.push({ verb: 'add', object: { kind: 'element', family: 'ip', table, set: 'm', key: [ip(i), 'tcp', port], value: { verdict: 'goto', chain: 'c' } } });
  return ops;
}

/** The map's elements as "addr . proto . port" strings, from nft -j. */
function mapKeys(ns: ReturnType<typeof kernel>['ns'], table: string): string[] {
  const map = nftList(ns, 'map').find((m) => m.table === table)!;
  return (map.elem ?? []).map((e: [{ concat: unknown[] }, unknown]) => e[0].concat.join(' . '));
}

describe('the batch handed to the addon', () => {
  it('stays alive while the worker reads it, with no JS reference left to it, and is let go after', async () => {
    const { ns } = kernel();
    const addon = loadAddon();
    let bytes: Uint8Array | undefined = encodeOperations(tableWithMap('a', 200_000, '80'), undefined, new ByteWriter(1024)).bytes;
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
    const first = dp.commit(tableWithMap('a', 100_000, '80'));
    const second = dp.commit(tableWithMap('b', 2_000, '443'));
    await Promise.all([first, second]);
    const a = mapKeys(ns, 'a');
    expect(a).toHaveLength(100_000);
    expect(a.every((k) => k.endsWith(' . tcp . 80'))).toBe(true);
    const b = mapKeys(ns, 'b');
    expect(b).toHaveLength(2_000);
    expect(b.every((k) => k.endsWith(' . tcp . 443'))).toBe(true);
    // And routine commits still share one writer afterwards.
    await dp.commit([{ verb: 'delete', object: { kind: 'element', family: 'ip', table: 'b', set: 'm', key: ['10.0.0.1', 'tcp', '443'] } }]);
    expect(mapKeys(ns, 'b')).toHaveLength(1_999);
  }, 120_000);
});

// A generated transaction (a full sync) is handed to the addon in pieces as
// it is encoded (BatchStream): each piece is checked and built on the
// stream's thread while the next is encoded, and the whole is sent as one
// transaction. Its failures name operations by their index in the whole, a
// refused piece sends nothing, and an aborted or dropped stream sends nothing.

import { describe, expect, it } from 'vitest';
import { collectGarbage } from '../../src/agent/memory-release.ts';
import { loadAddon, type NativeBatchStream } from '../../src/native/addon.ts';
import { encodeOperationPieces, encodeOperations } from '../../src/nft/netlink/encode.ts';
import type { ElementRun, GeneratedItem } from '../../src/nft/element-run.ts';
import type { Element, NftMap, NftSet, Operation, Statement } from '../../src/nft/objects.ts';
import { HairpinElements } from '../../src/reconciler/element-claims.ts';
import { SlotElements } from '../../src/reconciler/fragment.ts';
import { SET } from '../../src/reconciler/names.ts';
import { ep } from '../reconciler/fixtures.ts';
import { commitError, kernel, nftList, verdictMapOps } from './kernel-helpers.ts';

const addon = loadAddon();
const BatchStream = addon.BatchStream!;

/** `ops` through the dataplane as a generated transaction: the way a full sync is committed. */
function generated(dp: ReturnType<typeof kernel>['dp'], ops: readonly Operation[]) {
  return dp.begin().queueGenerated(() => ops, ops.length);
}

/** `ops` encoded in pieces of `pieceBytes` into `stream`; the pieces' count. */
function pushPieces(stream: NativeBatchStream, ops: readonly Operation[], pieceBytes: number): number {
  let pieces = 0;
  const push = (p: Uint8Array): void => {
    pieces++;
    stream.push(p);
  };
  encodeOperationPieces(
    ops,
    ops.length,
    () => undefined,
    { pieceBytes, push },
    (n) => new Uint8Array(n),
  );
  return pieces;
}

function mapSize(ns: ReturnType<typeof kernel>['ns'], table: string): number {
  return Number(ns.exec('sh', ['-c', `nft list map ip ${table} m | grep -c 'goto c'`]).trim());
}

describe('a transaction committed in pieces', () => {
  it('lands whole, as one transaction, from the dataplane’s pieces', async () => {
    const { ns, dp } = kernel();
    await dp.commit(generated(dp, verdictMapOps('a', 60_000, '80')));
    expect(dp.lastCommit!.pieces).toBeGreaterThan(2);
    expect(dp.lastCommit!.batchReleasedBytes).toBeGreaterThan(0);
    expect(mapSize(ns, 'a')).toBe(60_000);
    console.log(
      `60k elements in ${dp.lastCommit!.pieces} pieces: build ${dp.lastCommit!.buildMs.toFixed(1)} ms on the stream's thread, ` +
        `${dp.lastCommit!.waitMs.toFixed(1)} ms of it after the last piece`,
    );
  }, 60_000);

  it('lands runs of elements (a full sync’s endpoint slots and hairpin addresses) as the elements they stand for', async () => {
    const { dp } = kernel();
    const table = 't';
    const map: NftMap = { kind: 'map', family: 'ip', table, name: 'slots', keyType: ['integer'], dataType: ['ipv4_addr', 'inet_service'] };
    const set: NftSet = { kind: 'set', family: 'ip', table, name: SET.hairpinEndpoints, keyType: ['ipv4_addr', 'ipv4_addr'] };
    const address = (i: number) => `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`;
    const runs: ElementRun[] = [];
    // 20k slots in ports' runs of ten, and their 20k addresses: more than a piece.
    for (let p = 0; p < 2_000; p++) {
      const endpoints = Array.from({ length: 10 }, (_, j) => ep(address(p * 10 + j), 8000 + j));
      runs.push(new SlotElements({ kind: 'slots', family: 'ip', table, set: map.name, offset: 1_000_000 + p * 10, endpoints }));
    }
    const addresses = Array.from({ length: 20_000 }, (_, i) => address(i));
    runs.push(new HairpinElements('IPv4', table, addresses));
    const items: GeneratedItem[] = [
      { verb: 'add', object: { kind: 'table', family: 'ip', name: table } },
      { verb: 'add', object: map },
      { verb: 'add', object: set },
      ...runs,
    ];
    await dp.commit(dp.begin().queueGenerated(() => items, 3 + 40_000));
    expect(dp.lastCommit!.pieces).toBeGreaterThan(1);
    const listed = (await dp.list('ip', table))!.elements;
    const key = (e: Element) => JSON.stringify([e.set, e.key, e.value]);
    const expected = runs.flatMap((r) => Array.from({ length: r.length }, (_, i) => key(r.element(i))));
    expect(listed.map(key).sort()).toEqual(expected.sort());
  }, 60_000);

  it('names a piece’s table and chains in full though the last piece named them before (no bytes copied across pieces)', async () => {
    const { ns, dp } = kernel();
    const ops: Operation[] = [{ verb: 'add', object: { kind: 'table', family: 'ip', name: 't' } }];
    for (let i = 0; i < 15_000; i++) {
      const chain = `chain-${i}`;
      ops.push({ verb: 'add', object: { kind: 'chain', family: 'ip', table: 't', name: chain } });
      ops.push({ verb: 'add', object: { kind: 'rule', family: 'ip', table: 't', chain, exprs: [{ kind: 'counter' }], comment: chain } });
    }
    await dp.commit(generated(dp, ops));
    expect(dp.lastCommit!.pieces).toBeGreaterThan(1);
    const rules = nftList(ns, 'rule');
    expect(rules).toHaveLength(15_000);
    expect(rules.every((r) => r.table === 't' && r.comment === r.chain)).toBe(true);
    expect(new Set(rules.map((r) => r.chain)).size).toBe(15_000);
  }, 60_000);

  it('a kernel refusal in a late piece names its operation in the whole, and nothing applies', async () => {
    const { ns, dp } = kernel();
    const ops = verdictMapOps('a', 30_000, '80');
    const bad = 3 + 25_000;
    const el = ops[bad]!.object as Extract<Operation['object'], { kind: 'element' }>;
    ops[bad] = { verb: 'add', object: { ...el, value: { verdict: 'goto', chain: 'no-such-chain' } } };
    const err = await commitError(() => dp.commit(generated(dp, ops)));
    expect(dp.lastCommit!.pieces).toBeGreaterThan(1);
    expect(err.failures).toEqual([expect.objectContaining({ index: bad, code: 'ENOENT' })]);
    expect(nftList(ns, 'table')).toEqual([]);
  }, 60_000);

  it('a builder refusal in a piece is reported with every other, and nothing is sent', async () => {
    const { ns } = kernel();
    const counters: Statement[] = Array.from({ length: 4000 }, () => ({ kind: 'counter' }));
    const ops: Operation[] = [
      ...verdictMapOps('a', 5_000, '80'),
      { verb: 'add', object: { kind: 'rule', family: 'ip', table: 'a', chain: 'c', exprs: counters } },
    ];
    const stream = new BatchStream({ netns: ns.path });
    expect(pushPieces(stream, ops, 16 << 10)).toBeGreaterThan(2);
    const result = await stream.commit();
    expect(result.failures).toEqual([
      { index: ops.length - 1, errno: 90, origin: 'builder', message: `operation ${ops.length - 1}: the rule's expressions exceed 64 KiB` },
    ]);
    expect(nftList(ns, 'table')).toEqual([]);
  });

  it('a piece outside the allow-list rejects the commit, sends nothing, and leaves the socket usable', async () => {
    const { ns, dp } = kernel();
    const stream = new BatchStream({ netns: ns.path });
    pushPieces(stream, verdictMapOps('a', 2_000, '80'), 8 << 10);
    const forged = encodeOperations(verdictMapOps('b', 10, '80')).bytes.slice();
    forged[12] = 99; // the first record's kind
    stream.push(forged);
    await expect(stream.commit()).rejects.toMatchObject({ name: 'RangeError', code: 'ERR_NFT_BATCH_INVALID' });
    expect(nftList(ns, 'table')).toEqual([]);
    await dp.commit(generated(dp, verdictMapOps('a', 100, '80')));
    expect(mapSize(ns, 'a')).toBe(100);
  });

  it('an aborted stream sends nothing and takes no more; one dropped unfinished is aborted when collected', async () => {
    const { ns, dp } = kernel();
    const aborted = new BatchStream({ netns: ns.path });
    pushPieces(aborted, verdictMapOps('a', 2_000, '80'), 8 << 10);
    aborted.abort();
    aborted.abort();
    expect(() => aborted.push(new Uint8Array(12))).toThrow(expect.objectContaining({ code: 'ERR_NFT_STREAM_CLOSED' }));
    expect(() => aborted.commit()).toThrow(expect.objectContaining({ code: 'ERR_NFT_STREAM_CLOSED' }));
    (() => {
      const dropped = new BatchStream({ netns: ns.path });
      pushPieces(dropped, verdictMapOps('b', 2_000, '80'), 8 << 10);
    })();
    for (let i = 0; i < 3; i++) {
      collectGarbage();
      await new Promise((r) => setImmediate(r));
    }
    expect(nftList(ns, 'table')).toEqual([]);
    // The pool's socket for the namespace still answers in order.
    await dp.commit(generated(dp, verdictMapOps('c', 100, '80')));
    expect(mapSize(ns, 'c')).toBe(100);
  });

  it('cut into transactions, sends each once built, in order, and stops at one the kernel refuses', async () => {
    const { ns, dp } = kernel();
    const before = await dp.generation();
    const stream = new BatchStream({ netns: ns.path });
    const ops = verdictMapOps('a', 20_000, '80');
    let cuts = 0;
    encodeOperationPieces(
      ops,
      ops.length,
      () => undefined,
      {
        pieceBytes: 64 << 10,
        push: (p, encoded) => {
          stream.push(p);
          if (encoded < ops.length) {
            stream.cut();
            cuts++;
          }
        },
      },
      (n) => new Uint8Array(n),
    );
    const result = await stream.commit();
    expect(cuts).toBeGreaterThan(3);
    expect(result).toMatchObject({ failures: [], transactions: cuts + 1 });
    expect((await dp.generation()) - before).toBe(cuts + 1);
    expect(mapSize(ns, 'a')).toBe(20_000);

    // A refusal in the second of three: the first stays, the third is not sent.
    const at = await dp.generation();
    const refused = new BatchStream({ netns: ns.path });
    const b = verdictMapOps('b', 3, '80');
    const badChain = { ...(b[3]!.object as object), value: { verdict: 'goto', chain: 'no-such-chain' } };
    refused.push(encodeOperations(b.slice(0, 3)).bytes.slice());
    refused.cut();
    refused.push(encodeOperations([{ verb: 'add', object: badChain } as Operation], () => b[2]!.object as NftMap).bytes.slice());
    refused.cut();
    refused.push(encodeOperations(b.slice(4), () => b[2]!.object as NftMap).bytes.slice());
    const answer = await refused.commit();
    expect(answer.transactions).toBe(2);
    expect(answer.failures).toEqual([expect.objectContaining({ errno: 2 })]);
    expect((await dp.generation()) - at).toBe(1);
    expect(
      nftList(ns, 'map')
        .map((m) => m.table)
        .sort(),
    ).toEqual(['a', 'b']);
    expect(Number(ns.exec('sh', ['-c', "nft list map ip b m | grep -c 'goto c' || true"]).trim())).toBe(0);
  }, 60_000);

  it('wrong arguments are TypeErrors and RangeErrors with a code', () => {
    expect(() => new BatchStream({ netns: 5 } as never)).toThrow(
      expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }),
    );
    expect(() => new BatchStream({}, -1)).toThrow(expect.objectContaining({ name: 'RangeError', code: 'ERR_INVALID_ARG_VALUE' }));
    const stream = new BatchStream();
    expect(() => stream.push('x' as never)).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }));
    stream.abort();
  });
});

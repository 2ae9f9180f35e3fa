// encodeOperationStream: operations encoded as they come, a window of one
// set's elements at most. Its errors name the operation by its index in the
// whole stream, and a set's long run of elements goes in several records that
// the addon splits into the same messages of 500 as one record.

import { describe, expect, it } from 'vitest';
import { encodeOperationPieces, encodeOperations, encodeOperationStream, NftEncodeError } from '../../src/nft/netlink/encode.ts';
import type { GeneratedItem } from '../../src/nft/element-run.ts';
import type { NftSet, Operation } from '../../src/nft/objects.ts';
import { HairpinElements } from '../../src/reconciler/element-claims.ts';
import { SET } from '../../src/reconciler/names.ts';

const table: Operation = { verb: 'add', object: { kind: 'table', family: 'ip', name: 't' } };
const set: NftSet = { kind: 'set', family: 'ip', table: 't', name: 's', keyType: ['ipv4_addr'] };
const other: NftSet = { ...set, name: 'o' };

function element(i: number, s = set.name): Operation {
  return { verb: 'add', object: { kind: 'element', family: 'ip', table: 't', set: s, key: [`10.0.${i >> 8}.${i & 255}`] } };
}

function* elements(n: number, s = set.name): Generator<Operation> {
  for (let i = 0; i < n; i++) yield element(i, s);
}

/**
 * The operation indexes a batch's records hold (native/libnftnl-glue/batch.h
 * lays them out): each record's, and each element's of an Elements record.
 */
function operationIndexes(batch: Uint8Array): number[] {
  const v = new DataView(batch.buffer, batch.byteOffset, batch.byteLength);
  let p = 12;
  const attrs = (): void => {
    const n = v.getUint16(p, true);
    p += 2;
    for (let i = 0; i < n; i++) p += 7 + v.getUint32(p + 3, true);
  };
  const out: number[] = [];
  for (let r = v.getUint32(8, true); r > 0; r--) {
    const kind = v.getUint8(p);
    const index = v.getUint32(p + 5, true);
    p += 9;
    attrs();
    if (kind === 3) {
      const exprs = v.getUint16(p, true);
      p += 2;
      for (let e = 0; e < exprs; e++) {
        p += 1 + v.getUint8(p);
        attrs();
      }
      out.push(index);
    } else if (kind === 5) {
      const n = v.getUint32(p, true);
      p += 4;
      if (n === 0) out.push(index);
      for (let e = 0; e < n; e++) {
        out.push(v.getUint32(p, true));
        p += 4;
        attrs();
      }
    } else out.push(index);
  }
  expect(p).toBe(batch.length);
  return out;
}

describe('encodeOperationPieces', () => {
  it('tells with each piece how many operations the pieces so far hold, each whole', () => {
    const hairpin: NftSet = { kind: 'set', family: 'ip', table: 't', name: SET.hairpinEndpoints, keyType: ['ipv4_addr', 'ipv4_addr'] };
    const addresses = Array.from({ length: 3000 }, (_, i) => `10.1.${i >> 8}.${i & 255}`);
    const items: GeneratedItem[] = [
      table,
      { verb: 'add', object: set },
      { verb: 'add', object: hairpin },
      ...elements(2500),
      { verb: 'add', object: { kind: 'chain', family: 'ip', table: 't', name: 'c' } },
      new HairpinElements('IPv4', 't', addresses),
      ...elements(700, 's'),
      { verb: 'add', object: { kind: 'rule', family: 'ip', table: 't', chain: 'c', exprs: [{ kind: 'counter' }] } },
    ];
    const count = 3 + 2500 + 1 + 3000 + 700 + 1;
    const told: number[] = [];
    let held = 0;
    encodeOperationPieces(
      items,
      count,
      () => undefined,
      {
        pieceBytes: 4 << 10,
        push: (piece, encoded) => {
          const indexes = operationIndexes(piece);
          expect(indexes).toEqual(Array.from({ length: encoded - held }, (_, i) => held + i));
          held = encoded;
          told.push(encoded);
        },
      },
      (n) => new Uint8Array(n),
    );
    // Cut between the records of one run and between those of listed elements.
    const runFrom = 3 + 2500 + 1;
    expect(told.some((n) => n > runFrom && n < runFrom + 3000)).toBe(true);
    expect(told.some((n) => n > 3 && n < 3 + 2500)).toBe(true);
    expect(told.at(-1)).toBe(count);
  });
});

describe('encodeOperationStream', () => {
  it('writes a set’s long run in records of 2,000 elements, the other set’s in its own', () => {
    const ops = [
      table,
      { verb: 'add', object: set },
      { verb: 'add', object: other },
      ...elements(4500),
      ...elements(10, 'o'),
    ] as Operation[];
    const streamed = encodeOperationStream(ops.values(), ops.length);
    // table, two sets, then 2000 + 2000 + 500 of s and 10 of o.
    expect(streamed.records).toBe(3 + 3 + 1);
    expect(encodeOperations(ops).records).toBe(3 + 2);
    expect(streamed.containerChanges.map((op) => op.object.kind)).toEqual(['table', 'set', 'set']);
  });

  it('names a bad element by its index in the whole stream', () => {
    const ops: Operation[] = [table, { verb: 'add', object: set }, ...elements(4321), element(0)];
    ops[2 + 4321] = { verb: 'add', object: { ...(element(0).object as object), key: ['not an address'] } as Operation['object'] };
    let caught: unknown;
    try {
      encodeOperationStream(ops.values(), ops.length);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(NftEncodeError);
    expect((caught as NftEncodeError).index).toBe(2 + 4321);
  });

  it('refuses a stream that makes another number of operations than it was told', () => {
    const ops = [table, { verb: 'add', object: set }, ...elements(3)] as Operation[];
    expect(() => encodeOperationStream(ops.values(), ops.length + 1)).toThrow(/made 5 operations, not the 6 announced/);
  });
});

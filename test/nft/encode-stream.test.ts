// encodeOperationStream: operations encoded as they come, a window of one
// set's elements at most. Its errors name the operation by its index in the
// whole stream, and a set's long run of elements goes in several records that
// the addon splits into the same messages of 500 as one record.

import { describe, expect, it } from 'vitest';
import { encodeOperations, encodeOperationStream, NftEncodeError } from '../../src/nft/netlink/encode.ts';
import type { NftSet, Operation } from '../../src/nft/objects.ts';

const table: Operation = { verb: 'add', object: { kind: 'table', family: 'ip', name: 't' } };
const set: NftSet = { kind: 'set', family: 'ip', table: 't', name: 's', keyType: ['ipv4_addr'] };
const other: NftSet = { ...set, name: 'o' };

function element(i: number, s = set.name): Operation {
  return { verb: 'add', object: { kind: 'element', family: 'ip', table: 't', set: s, key: [`10.0.${i >> 8}.${i & 255}`] } };
}

function* elements(n: number, s = set.name): Generator<Operation> {
  for (let i = 0; i < n; i++) yield element(i, s);
}

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

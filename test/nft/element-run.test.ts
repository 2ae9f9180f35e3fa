// Runs of element additions in a generated transaction (ElementRun): checked
// once against their set, counted as the operations they stand for, given as
// those operations to whatever lists them, and written by the streamed
// encoder as the very bytes of those operations. A value that is no value of
// its type stops the encoding, naming its element's operation.

import { describe, expect, it } from 'vitest';
import { isElementRun, runOperations, type ElementRun, type GeneratedItem } from '../../src/nft/element-run.ts';
import { encodeOperationStream, NftEncodeError } from '../../src/nft/netlink/encode.ts';
import type { DataType, Element, NftMap, NftSet, Operation } from '../../src/nft/objects.ts';
import { NftInvalidError, Transaction } from '../../src/nft/transaction.ts';

const table: Operation = { verb: 'add', object: { kind: 'table', family: 'ip', name: 't' } };
const pairs: NftSet = { kind: 'set', family: 'ip', table: 't', name: 'pairs', keyType: ['ipv4_addr', 'ipv4_addr'] };
const slots: NftMap = {
  kind: 'map',
  family: 'ip',
  table: 't',
  name: 'slots',
  keyType: ['integer'],
  dataType: ['ipv4_addr', 'inet_service'],
};

/** A run over value lists, its elements as a set's or a concatenated map's. */
function run(set: NftSet | NftMap, values: ReadonlyArray<ReadonlyArray<string | number>>): ElementRun {
  const keyParts = set.keyType.length;
  const dataType = set.kind === 'map' && Array.isArray(set.dataType) ? (set.dataType as readonly DataType[]) : undefined;
  return {
    kind: 'element-run',
    family: set.family,
    table: set.table,
    set: set.name,
    length: values.length,
    keyType: set.keyType,
    dataType,
    value: (i, part) => values[i]![part]!,
    element: (i): Element => {
      const texts = values[i]!.map(String);
      const e: Element = { kind: 'element', family: set.family, table: set.table, set: set.name, key: texts.slice(0, keyParts) };
      if (dataType) e.value = texts.slice(keyParts);
      return e;
    },
  };
}

const address = (i: number) => `10.0.${i >> 8}.${i & 255}`;
const hairpin = (n: number) =>
  run(
    pairs,
    Array.from({ length: n }, (_, i) => [address(i), address(i)]),
  );
const endpointSlots = (n: number, from = 0) =>
  run(
    slots,
    Array.from({ length: n }, (_, i) => [from + i, address(i), 8080 + (i % 3)]),
  );

function generated(items: GeneratedItem[]): Transaction {
  const length = items.reduce((n, item) => n + (isElementRun(item) ? item.length : 1), 0);
  return new Transaction().queueGenerated(() => items, length);
}

const lookup = (sets: Array<NftSet | NftMap>) => (family: string, t: string, name: string) =>
  sets.find((s) => s.family === family && s.table === t && s.name === name);

describe('a run of elements in a generated transaction', () => {
  it('is checked once, counted as its elements and listed as their operations', () => {
    const items: GeneratedItem[] = [table, { verb: 'add', object: pairs }, { verb: 'add', object: slots }, hairpin(3), endpointSlots(2)];
    const tx = generated(items).check();
    expect(tx.errors).toEqual([]);
    expect(tx.length).toBe(8);
    expect(tx.counts()).toContainEqual({ verb: 'add', kind: 'element', count: 5 });
    const ops = tx.ops();
    expect(ops).toHaveLength(8);
    expect(ops[3]).toEqual({
      verb: 'add',
      object: { kind: 'element', family: 'ip', table: 't', set: 'pairs', key: ['10.0.0.0', '10.0.0.0'] },
    });
    expect(ops[7]).toEqual({
      verb: 'add',
      object: { kind: 'element', family: 'ip', table: 't', set: 'slots', key: ['1'], value: ['10.0.0.1', '8081'] },
    });
    expect(Array.from(runOperations(items))).toEqual(ops);
  });

  it('goes into a set added before it, of its types, without intervals: else its first element is the invalid operation', () => {
    const v6: NftSet = { ...pairs, keyType: ['ipv6_addr', 'ipv6_addr'] };
    const interval: NftSet = { ...pairs, flags: ['interval'] };
    const single: NftMap = { ...slots, dataType: 'ipv4_addr' };
    const cases: Array<[Operation[], RegExp]> = [
      [[], /not known/],
      [[{ verb: 'add', object: v6 }], /keyed by ipv6_addr . ipv6_addr, not ipv4_addr . ipv4_addr/],
      [[{ verb: 'add', object: interval }], /intervals/],
    ];
    for (const [before, reason] of cases) {
      const tx = generated([table, ...before, { verb: 'add', object: slots }, hairpin(4), endpointSlots(1)]).check();
      expect(tx.errors).toHaveLength(1);
      const error = tx.errors[0]!;
      expect(error).toBeInstanceOf(NftInvalidError);
      expect(error.reason).toMatch(reason);
      expect(error.index).toBe(2 + before.length);
      expect(error.operation.object).toEqual(hairpin(4).element(0));
    }
    const data = generated([table, { verb: 'add', object: pairs }, { verb: 'add', object: single }, endpointSlots(2)]).check();
    expect(data.errors.map((e) => [e.index, e.reason])).toEqual([[3, 'map slots does not hold ipv4_addr . inet_service values']]);
  });

  it('stands for nothing when it is empty', () => {
    const tx = generated([table, { verb: 'add', object: pairs }, hairpin(0)]).check();
    expect(tx.errors).toEqual([]);
    expect(tx.ops()).toHaveLength(2);
    expect(encodeOperationStream(tx.items(), tx.length, lookup([pairs])).records).toBe(2);
  });
});

describe('the streamed encoding of runs', () => {
  it('is the encoding of the operations they stand for, in records of 2,000 across runs of the same set', () => {
    // 2,500 slots in runs of 10 (one record of 2,000, then 500), 4,100 hairpin elements in one run (three records).
    const items: GeneratedItem[] = [table, { verb: 'add', object: pairs }, { verb: 'add', object: slots }];
    for (let i = 0; i < 250; i++) items.push(endpointSlots(10, i * 10));
    items.push(hairpin(4100));
    const tx = generated(items);
    const fromRuns = encodeOperationStream(tx.items(), tx.length, lookup([pairs, slots]));
    const ops = Array.from(runOperations(items));
    const fromOps = encodeOperationStream(ops, ops.length, lookup([pairs, slots]));
    expect(fromRuns.records).toBe(3 + 2 + 3);
    expect(fromOps.records).toBe(fromRuns.records);
    expect(Buffer.from(fromRuns.bytes).equals(Buffer.from(fromOps.bytes))).toBe(true);
  });

  it('names the operation of a value that is none of its type', () => {
    const bad: Array<[ElementRun, RegExp]> = [
      [
        run(pairs, [
          [address(0), address(0)],
          ['10.0.0.256', '10.0.0.256'],
        ]),
        /operation 4: bad element key.*10\.0\.0\.256/,
      ],
      [
        run(pairs, [
          [address(0), address(0)],
          [address(1), '010.0.0.1'],
        ]),
        /operation 4: bad element key/,
      ],
      [run(slots, [[0, address(0), 70000]]), /operation 3: bad element value.*out of range 0-65535/],
      [run(slots, [[-1, address(0), 80]]), /operation 3: bad element key.*out of range/],
      [run(slots, [[0.5, address(0), 80]]), /operation 3: bad element key/],
    ];
    for (const [r, message] of bad) {
      const items: GeneratedItem[] = [table, { verb: 'add', object: pairs }, { verb: 'add', object: slots }, r];
      const tx = generated(items);
      let thrown: unknown;
      try {
        encodeOperationStream(tx.items(), tx.length, lookup([pairs, slots]));
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(NftEncodeError);
      expect((thrown as Error).message).toMatch(message);
    }
  });
});

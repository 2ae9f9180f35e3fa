// The JS work of a commit grows with its operations, never faster: checking
// (validateOperations) and encoding (encodeOperations) read each operation a
// bounded number of times, however long the transaction. Counted, not timed:
// a pass over the whole list per operation (a look-back, an indexOf, a
// re-scan of a set's elements) would make the reads per operation grow with
// the list and fail here, where a timing would only be noise on a shared
// machine. Both shapes the agent commits: per-endpoint chains with one verdict
// map, and elements of many sets interleaved (the shared endpoint maps).
import { describe, expect, it } from 'vitest';
import { fullRuleset, TABLE } from '../../bench/kube-proxy-ruleset.ts';
import { encodeOperations } from '../../src/nft/netlink/encode.ts';
import type { NftMap, Operation } from '../../src/nft/objects.ts';
import { validateOperations } from '../../src/nft/transaction.ts';

/** ops behind a proxy that counts index reads. */
function counted(ops: Operation[]): { ops: Operation[]; reads: () => number } {
  let reads = 0;
  const proxy = new Proxy(ops, {
    get(target, p, receiver) {
      if (typeof p === 'string' && p.length > 0 && p.charCodeAt(0) >= 48 && p.charCodeAt(0) <= 57) reads++;
      return Reflect.get(target, p, receiver) as unknown;
    },
  });
  return { ops: proxy, reads: () => reads };
}

/** `services` verdict-map chains (2 endpoints each), then 10 elements per service spread over 16 integer-keyed maps, interleaved. */
function interleaved(services: number): Operation[] {
  const ops = fullRuleset(services);
  const maps: NftMap[] = Array.from({ length: 16 }, (_, k) => ({
    kind: 'map',
    family: 'ip',
    table: TABLE,
    name: `endpoints-${k}`,
    keyType: ['integer'],
    dataType: ['ipv4_addr', 'inet_service'],
  }));
  ops.push(...maps.map((object): Operation => ({ verb: 'add', object })));
  for (let i = 0; i < services; i++) {
    for (let j = 0; j < 10; j++) {
      const n = i * 10 + j;
      ops.push({
        verb: 'add',
        object: {
          kind: 'element',
          family: 'ip',
          table: TABLE,
          set: maps[(i * 7 + j) % 16]!.name,
          key: [String(n)],
          value: [`10.${128 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`, '8080'],
        },
      });
    }
  }
  return ops;
}

const STEPS: Array<[string, (ops: Operation[]) => void]> = [
  ['validateOperations', (ops) => validateOperations(ops)],
  [
    'encodeOperations',
    (ops) => {
      const sets = new Map<string, NftMap>();
      for (const { object: o } of ops) if (o.kind === 'map') sets.set(o.name, o);
      encodeOperations(ops, (_f, _t, name) => sets.get(name));
    },
  ],
];

describe('one commit reads each operation a bounded number of times', () => {
  for (const [name, step] of STEPS) {
    for (const [shape, build] of [
      ['chains', fullRuleset],
      ['interleaved maps', interleaved],
    ] as const) {
      it(`${name}, ${shape}: as many reads per operation at 4,000 services as at 500`, () => {
        const perOp = [500, 4000].map((n) => {
          const { ops, reads } = counted(build(n));
          step(ops);
          return reads() / ops.length;
        });
        // A handful each (the element grouping looks at each element twice or three times).
        expect(perOp[0]).toBeLessThanOrEqual(4);
        expect(perOp[1]).toBeLessThanOrEqual(perOp[0]! * 1.05);
      });
    }
  }
});

// Elements listed encoded (ListOptions.elementsEncodedOf), the same checks
// for the kernel (test/native/encoded-elements.test.ts) and the fake kernel
// (test/nft/fake-kernel-encoded-elements.test.ts): the wanted ones are kept
// as a commit writes them, a changed, stray or commented one is not, and what
// nothing kept is the elements the whole listing gives.

import { expect } from 'vitest';
import type { Dataplane } from '../../src/nft/dataplane.ts';
import type { Element, NftMap, NftSet, Operation, WantedElements } from '../../src/nft/objects.ts';

const T = 'knp';
const slots: NftMap = { kind: 'map', family: 'ip', table: T, name: 'slots', keyType: ['integer'], dataType: ['ipv4_addr', 'inet_service'] };
const pairs: NftSet = { kind: 'set', family: 'ip', table: T, name: 'pairs', keyType: ['ipv4_addr', 'ipv4_addr'] };
const cidrs: NftSet = { kind: 'set', family: 'ip', table: T, name: 'cidrs', keyType: ['ipv4_addr'], flags: ['interval'] };

const slot = (k: number, ip: string, port: number, comment?: string): Element => ({
  kind: 'element',
  family: 'ip',
  table: T,
  set: 'slots',
  key: [String(k)],
  value: [ip, String(port)],
  ...(comment ? { comment } : {}),
});
const pair = (ip: string): Element => ({ kind: 'element', family: 'ip', table: T, set: 'pairs', key: [ip, ip] });

/** Wanted elements as a run gives them: a slot's key a number, its port a number. */
function wanted(set: string, values: ReadonlyArray<ReadonlyArray<string | number>>): WantedElements {
  return { set, value: (i, part) => values[i]![part]! };
}

const add = (...objects: (Element | NftSet | NftMap)[]): Operation[] => objects.map((object) => ({ verb: 'add', object }));

/** Each wanted element is kept once, by what a commit writes; those nothing kept are given back as the whole listing gives them. */
export async function keepsWantedElementsOnce(dp: Dataplane): Promise<void> {
  const stored = [
    slot(70000, '10.0.0.1', 80),
    slot(70001, '10.0.0.2', 80),
    slot(70002, '10.0.0.3', 8080),
    slot(70003, '10.0.0.4', 80, 'written by hand'),
    slot(4_000_000_000, '10.0.0.5', 443),
  ];
  await dp.commit(
    dp
      .begin()
      .queueAll([
        { verb: 'add', object: { kind: 'table', family: 'ip', name: T } },
        ...add(slots, pairs, cidrs, ...stored, pair('10.0.0.1'), pair('10.0.0.9')),
        ...add({ kind: 'element', family: 'ip', table: T, set: 'cidrs', key: ['10.0.0.0/8'] }),
      ]),
  );
  const whole = (await dp.list('ip', T))!;
  const l = (await dp.list('ip', T, { elementsEncodedOf: ['slots', 'pairs', 'cidrs', 'no-such-set'] }))!;
  const held = l.encodedElements!;
  expect(held.holds('slots')).toBe(true);
  expect(held.holds('pairs')).toBe(true);
  // An interval set's elements are decoded as before.
  expect(held.holds('cidrs')).toBe(false);
  expect(held.holds('no-such-set')).toBe(false);
  expect(l.elements).toEqual(whole.elements.filter((e) => e.set === 'cidrs'));
  expect(l.sets).toEqual(whole.sets);

  const run = wanted('slots', [
    [70000, '10.0.0.1', 80],
    [70001, '10.0.0.2', 81],
    [70002, '10.0.0.3', 8080],
    [70003, '10.0.0.4', 80],
    [70004, '10.0.0.9', 80],
    [4_000_000_000, '10.0.0.5', 443],
    [70000, '10.0.0.1', 80],
    [70005, 'not an address', 80],
  ]);
  // Same bytes; another port; same; a comment the wanted one lacks; absent; the largest key; kept already; unwritable.
  expect([0, 1, 2, 3, 4, 5, 6, 7].map((i) => held.keep(run, i))).toEqual([true, false, true, false, false, true, false, false]);
  const byKey = (a: Element, b: Element) => a.key[0]!.localeCompare(b.key[0]!);
  const notKept = (set: string) => held.notKept(set).sort(byKey);
  expect(notKept('slots')).toEqual(whole.elements.filter((e) => e.set === 'slots' && ['70001', '70003'].includes(e.key[0]!)).sort(byKey));

  expect(held.keep(wanted('pairs', [['10.0.0.9', '10.0.0.9']]), 0)).toBe(true);
  expect(held.keep(wanted('pairs', [['10.0.0.1', '10.0.0.2']]), 0)).toBe(false);
  expect(notKept('pairs')).toEqual([pair('10.0.0.1')]);
  expect(held.keep(wanted('no-such-set', [[1]]), 0)).toBe(false);
  expect(held.notKept('no-such-set')).toEqual([]);
}

/** A set listed with no elements is held; a listing asked for none holds nothing. */
export async function holdsEmptySets(dp: Dataplane): Promise<void> {
  await dp.commit(dp.begin().queueAll([{ verb: 'add', object: { kind: 'table', family: 'ip', name: T } }, ...add(slots)]));
  const l = (await dp.list('ip', T, { elementsEncodedOf: ['slots'] }))!;
  expect(l.encodedElements!.holds('slots')).toBe(true);
  expect(l.encodedElements!.keep(wanted('slots', [[1, '10.0.0.1', 80]]), 0)).toBe(false);
  expect(l.encodedElements!.notKept('slots')).toEqual([]);
  expect((await dp.list('ip', T))!.encodedElements).toBeUndefined();
}

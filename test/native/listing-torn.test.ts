// A set's listing must hold every element once, even when it is read just as
// the kernel rehashes the set: that happens in the background after a commit
// grows or shrinks a hash set, and a dump torn by it repeats some elements and
// skips as many others, with nothing in the netlink replies to say so. Adoption
// at restart reads the sets this way; an element it never saw is never deleted.

import { describe, expect, it } from 'vitest';
import type { DataType, Element, NftSet, Operation } from '../../src/nft/objects.ts';
import { kernel, verdictMapOps } from './kernel-helpers.ts';

const SIZE = 30_000;
// Whether a reading meets a rehash is a race: against the addon without its
// check, about one run in two of these 40 rounds caught a torn listing here.
const ROUNDS = 40;
const KEPT = 1_000;

function keyOf(op: Operation): string[] {
  return op.object.kind === 'element' ? [op.object.key.join(' . ')] : [];
}

describe('listing a set the kernel is rehashing', () => {
  it('gives each element once and no other, right after commits that grow and shrink it', async () => {
    const { dp } = kernel();
    const ops = verdictMapOps('g', SIZE, '443');
    const elements = ops.filter((op) => op.object.kind === 'element');
    const torn: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Even rounds fill the map (the kernel grows its table), odd ones empty all but KEPT (it shrinks it).
      const growing = round % 2 === 0;
      if (growing) await dp.commit(dp.begin().queueAll(round === 0 ? ops : elements.slice(KEPT)));
      else await dp.commit(dp.begin().queueAll(elements.slice(KEPT).map((op) => ({ ...op, verb: 'delete' as const }))));
      const want = new Set((growing ? elements : elements.slice(0, KEPT)).flatMap(keyOf));
      const listed = (await dp.list('ip', 'g'))!.elements.map((e) => e.key.join(' . '));
      const distinct = new Set(listed);
      const missing = [...want].filter((k) => !distinct.has(k)).length;
      if (listed.length !== want.size || distinct.size !== want.size || missing > 0)
        torn.push(`round ${round}: ${listed.length} listed, ${distinct.size} distinct, ${missing} missing of ${want.size}`);
    }
    expect(torn).toEqual([]);
  }, 120_000);

  it('takes adjacent intervals, whose end and start share a key in the kernel, for what they are', async () => {
    const { dp } = kernel();
    const set = (name: string, keyType: DataType[]): NftSet => ({
      kind: 'set',
      family: 'ip',
      table: 'i',
      name,
      keyType,
      flags: ['interval'],
    });
    const el = (name: string, key: string[]): Element => ({ kind: 'element', family: 'ip', table: 'i', set: name, key });
    const elements = [
      el('cidrs', ['10.0.0.0/24']),
      el('cidrs', ['10.0.1.0/24']),
      el('cidrs', ['10.0.2.0/23']),
      el('ranges', ['198.51.100.0/25', '80']),
      el('ranges', ['198.51.100.128/25', '80']),
    ];
    await dp.commit(
      dp
        .begin()
        .queueAll(
          [
            { kind: 'table', family: 'ip', name: 'i' } as const,
            set('cidrs', ['ipv4_addr']),
            set('ranges', ['ipv4_addr', 'inet_service']),
            ...elements,
          ].map((object) => ({ verb: 'add' as const, object })),
        ),
    );
    const listed = (await dp.list('ip', 'i'))!.elements;
    expect(listed.map((e) => `${e.set} ${e.key.join(' . ')}`).sort()).toEqual(elements.map((e) => `${e.set} ${e.key.join(' . ')}`).sort());
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AddressCounts, canonicalIPv4Value } from '../../src/reconciler/address-counts.ts';
import { OverlayMap } from '../../src/reconciler/overlay-map.ts';

// Few distinct addresses, so that adds and removes meet; some that hash to
// neighbouring slots (consecutive values), some IPv6 and non-canonical ones
// that must stay distinct from the quad they resemble.
const addressArb = fc.oneof(
  fc.integer({ min: 0, max: 40 }).map((i) => `10.0.${i >> 3}.${i}`),
  fc.integer({ min: 0, max: 5 }).map((i) => `0.0.0.${i}`),
  fc.integer({ min: 0, max: 5 }).map((i) => `fd00::${i}`),
  fc.constantFrom('010.0.0.1', '10.0.0.01', '255.255.255.255', '10.0.0.1 '),
);
const opsArb = fc.array(fc.record({ add: fc.boolean(), address: addressArb }), { maxLength: 3000 });

describe('AddressCounts', () => {
  it('counts as a Map of strings does, through growth and removals', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), opsArb, (log2Slots, ops) => {
        const counts = new AddressCounts(2 ** log2Slots);
        const model = new Map<string, number>();
        for (const { add, address } of ops) {
          const n = model.get(address) ?? 0;
          if (add) {
            counts.add(address);
            model.set(address, n + 1);
          } else {
            counts.remove(address);
            if (n > 1) model.set(address, n - 1);
            else model.delete(address);
          }
        }
        expect(counts.size).toBe(model.size);
        expect(new Map(counts)).toEqual(model);
        expect(new Set(counts.keys())).toEqual(new Set(model.keys()));
        expect(counts.keyList()).toEqual([...counts.keys()]);
        for (const [address, n] of model) expect(counts.get(address)).toBe(n);
        expect(counts.get('10.0.9.99')).toBeUndefined();
        // As the base of the next render's derived counts.
        const derived = new OverlayMap(counts);
        expect(new Map(derived)).toEqual(model);
        expect(derived.keyList()).toEqual([...counts.keys()]);
      }),
      { numRuns: 300 },
    );
  });

  it('finds what probed past a freed slot across the end of the table, and what sits at its own slot there', () => {
    // Addresses by their home slot in a table of 16 (the top 4 bits of the hash).
    const home = (a: string) => Math.imul(canonicalIPv4Value(a), 0x9e3779b1) >>> 28;
    const pool = Array.from({ length: 4096 }, (_, i) => `10.0.${i >> 8}.${i & 255}`);
    const [last1, last2, last3] = pool.filter((a) => home(a) === 15);
    const [first] = pool.filter((a) => home(a) === 0);
    for (const [removed, rest] of [
      [last1!, [last2!, first!, last3!]],
      [last2!, [last1!, first!, last3!]],
    ] as const) {
      const counts = new AddressCounts(16);
      // Slots 15, 0 (its own), 1 and 2 (wrapped).
      for (const a of [last1!, first!, last2!, last3!]) counts.add(a);
      counts.remove(removed);
      expect(counts.get(removed)).toBeUndefined();
      for (const a of rest) expect(counts.get(a)).toBe(1);
      expect(counts.size).toBe(3);
    }
  });

  it('keeps 200k distinct addresses and gives back the very strings it was given', () => {
    const counts = new AddressCounts();
    const addresses = Array.from({ length: 200_000 }, (_, i) => `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`);
    for (const a of addresses) counts.add(a);
    for (let i = 0; i < addresses.length; i += 2) counts.remove(addresses[i]!);
    expect(counts.size).toBe(100_000);
    expect(counts.get(addresses[1]!)).toBe(1);
    expect(counts.get(addresses[0]!)).toBeUndefined();
    const kept = new Set(addresses.filter((_, i) => i % 2 === 1));
    const keys = [...counts.keys()];
    expect(keys.length).toBe(100_000);
    expect(keys.every((k) => kept.has(k))).toBe(true);
  });

  it('reads only canonical dotted quads as numbers', () => {
    expect(canonicalIPv4Value('10.0.0.1')).toBe(0x0a000001);
    expect(canonicalIPv4Value('255.255.255.255')).toBe(0xffffffff);
    expect(canonicalIPv4Value('0.0.0.0')).toBe(0);
    for (const bad of ['010.0.0.1', '10.0.0.01', '10.0.0', '10.0.0.1.2', '10.0.0.256', '10..0.1', '10.0.0.1 ', 'fd00::1', ''])
      expect(canonicalIPv4Value(bad)).toBe(-1);
  });
});

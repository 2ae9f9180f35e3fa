import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OverlayMap } from '../../src/reconciler/overlay-map.ts';

type Op = { set: boolean; key: number; value: number };
const opsArb = fc.array(fc.record({ set: fc.boolean(), key: fc.integer({ min: 0, max: 40 }), value: fc.integer() }), { maxLength: 60 });

describe('OverlayMap', () => {
  it('behaves as a copied Map through generations of derivations, and leaves its parents as they were', () => {
    fc.assert(
      fc.property(fc.array(opsArb, { minLength: 1, maxLength: 8 }), (generations) => {
        let model = new Map<number, number>();
        let m = new OverlayMap<number, number>();
        for (const { set, key, value } of generations[0] as Op[]) if (set) model.set(key, value);
        // Half the runs start from a plain Map taken over as the base.
        if (generations.length % 2 === 0) {
          m = new OverlayMap(new Map(model));
          model = new Map(model);
        } else model = new Map();
        const history: Array<{ m: OverlayMap<number, number>; model: Map<number, number> }> = [];
        for (const ops of generations) {
          for (const { set, key, value } of ops as Op[]) {
            if (set) {
              m.set(key, value);
              model.set(key, value);
            } else expect(m.delete(key)).toBe(model.delete(key));
          }
          expect(m.size).toBe(model.size);
          expect(new Map(m)).toEqual(model);
          expect(new Set(m.keyList())).toEqual(new Set(model.keys()));
          expect(m.keyList()).toHaveLength(model.size);
          for (let k = 0; k <= 40; k++) expect(m.get(k)).toBe(model.get(k));
          history.push({ m, model });
          m = new OverlayMap(m);
          model = new Map(model);
        }
        for (const h of history) expect(new Map(h.m)).toEqual(h.model);
      }),
      { numRuns: 200 },
    );
  });

  it('a map others derive from refuses changes', () => {
    const a = new OverlayMap<string, number>().set('x', 1);
    const b = new OverlayMap(a);
    expect(() => a.set('y', 2)).toThrow(/cannot change/);
    expect(() => a.delete('x')).toThrow(/cannot change/);
    b.delete('x');
    expect([...a.keys()]).toEqual(['x']);
    expect(b.size).toBe(0);
  });

  it('folds a large overlay into a new base', () => {
    let m = new OverlayMap<number, number>();
    for (let i = 0; i < 3000; i++) m.set(i, i);
    for (let g = 0; g < 5; g++) {
      m = new OverlayMap(m);
      for (let i = 0; i < 1500; i++) m.set(i, i + g);
      for (let i = 2000; i < 2100; i++) m.delete(i);
    }
    expect(m.size).toBe(2900);
    expect(m.get(10)).toBe(14);
    expect(m.get(2050)).toBeUndefined();
    expect(m.get(2500)).toBe(2500);
  });
});

import { describe, expect, it } from 'vitest';
import type { StoreEvent } from '../../src/k8s/types.ts';
import { KeyedMap } from '../../src/streams/keyed-map.ts';
import { Store } from '../../src/streams/store.ts';

type Obj = { name: string; resourceVersion: string; v: number; tags?: string[] };

function collect<T extends { resourceVersion: string }>(s: Store<T>) {
  const evs: StoreEvent<T>[] = [];
  s.events$.subscribe((e) => evs.push(e));
  return evs;
}

describe('Store', () => {
  it('emits upserts and deletes, not repeats', () => {
    const s = new Store<Obj>();
    const evs = collect(s);
    s.upsert('a', { name: 'a', resourceVersion: '1', v: 1 });
    s.upsert('a', { name: 'a', resourceVersion: '1', v: 1 });
    s.upsert('a', { name: 'a', resourceVersion: '2', v: 1 }); // status-only change: silent
    expect(s.get('a')!.resourceVersion).toBe('2');
    s.upsert('a', { name: 'a', resourceVersion: '3', v: 2 });
    s.delete('a');
    s.delete('a');
    expect(evs.map((e) => `${e.type}:${e.key}:${e.object.resourceVersion}`)).toEqual(['upsert:a:1', 'upsert:a:3', 'delete:a:3']);
  });

  it('replace emits only real differences', () => {
    const s = new Store<Obj>();
    for (let i = 0; i < 5; i++) s.upsert(`k${i}`, { name: `k${i}`, resourceVersion: `${i}`, v: i, tags: ['x'] });
    const evs = collect(s);
    const next = new KeyedMap<Obj>();
    const set = (key: string, o: Obj) => next.set('', key, o);
    set('k0', { name: 'k0', resourceVersion: '0', v: 0, tags: ['x'] }); // same rv
    set('k1', { name: 'k1', resourceVersion: '10', v: 1, tags: ['x'] }); // new rv, same content
    set('k2', { name: 'k2', resourceVersion: '11', v: 99, tags: ['x'] }); // changed
    set('k3', { name: 'k3', resourceVersion: '12', v: 3, tags: ['y'] }); // changed deep
    set('k9', { name: 'k9', resourceVersion: '13', v: 9 }); // new
    const n = s.replace(next);
    expect(evs.map((e) => `${e.type}:${e.key}`).sort()).toEqual(['delete:k4', 'upsert:k2', 'upsert:k3', 'upsert:k9']);
    expect(n).toBe(4);
    expect(s.get('k1')!.resourceVersion).toBe('10');
  });
});

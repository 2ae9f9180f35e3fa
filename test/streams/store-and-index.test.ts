import { describe, expect, it } from 'vitest';
import type { EndpointSliceInfo, StoreEvent } from '../../src/k8s/types.ts';
import { EndpointSliceIndex } from '../../src/streams/endpoint-index.ts';
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

function slice(name: string, svc: string, eps: [string, boolean?][], port = 8080, addressType: 'IPv4' | 'IPv6' = 'IPv4'): EndpointSliceInfo {
  return {
    namespace: 'ns',
    name,
    resourceVersion: '1',
    serviceName: svc,
    addressType,
    ports: [{ name: 'http', protocol: 'TCP', port }],
    endpoints: eps.map(([ip, ready]) => ({ address: ip, ...(ready === undefined ? {} : { ready }) })),
  };
}

/** The index as the streams wire it: the listener of a real slice store. */
function indexed() {
  const store = new Store<EndpointSliceInfo>();
  const idx = new EndpointSliceIndex();
  store.listen(idx);
  let rv = 0;
  const put = (s: EndpointSliceInfo) => store.upsert(`${s.namespace}/${s.name}`, { ...s, resourceVersion: String(++rv) });
  return { store, idx, put };
}

describe('EndpointSliceIndex', () => {
  it('groups by service and merges duplicate endpoints once, the most usable winning', () => {
    const { idx, put } = indexed();
    put(slice('b', 'web', [['10.244.0.2'], ['10.244.0.3', false]]));
    put(slice('a', 'web', [['10.244.0.1'], ['10.244.0.3', true], ['10.244.0.2', false]]));
    put(slice('c', 'other', [['10.244.9.9']]));
    const m = idx.endpointsFor('ns/web');
    expect(m).toHaveLength(1);
    expect(m[0]!.endpoints.map((e) => `${e.address}:${e.ready ?? 'unset'}`)).toEqual(['10.244.0.1:unset', '10.244.0.3:true', '10.244.0.2:unset']);
    expect(idx.slicesFor('ns/web').map((s) => s.name).sort()).toEqual(['a', 'b']);
    expect([...idx.serviceKeys()].sort()).toEqual(['ns/other', 'ns/web']);
  });

  it('keeps different target ports and families apart', () => {
    const { idx, put } = indexed();
    put(slice('a', 'web', [['10.244.0.1']], 8080));
    put(slice('b', 'web', [['10.244.0.1']], 9090));
    put(slice('c', 'web', [['fd00:10:244::1']], 8080, 'IPv6'));
    expect(idx.endpointsFor('ns/web').map((g) => `${g.addressType}/${g.port.port}/${g.endpoints.length}`).sort()).toEqual([
      'IPv4/8080/1',
      'IPv4/9090/1',
      'IPv6/8080/1',
    ]);
  });

  it('invalidates on change, moves relabelled slices, forgets deleted ones', () => {
    const { store, idx, put } = indexed();
    put(slice('a', 'web', [['10.244.0.1']]));
    expect(idx.endpointsFor('ns/web')[0]!.endpoints).toHaveLength(1);
    put(slice('a', 'web', [['10.244.0.1'], ['10.244.0.2']]));
    expect(idx.endpointsFor('ns/web')[0]!.endpoints).toHaveLength(2);
    put(slice('a', 'api', [['10.244.0.1']]));
    expect(idx.endpointsFor('ns/web')).toEqual([]);
    expect(idx.endpointsFor('ns/api')[0]!.endpoints).toHaveLength(1);
    store.delete('ns/a');
    expect([...idx.serviceKeys()]).toEqual([]);
  });

  it('follows one service with several slices through changes, relabels and deletes', () => {
    const { store, idx, put } = indexed();
    put(slice('a', 'web', [['10.244.0.1']]));
    put(slice('b', 'web', [['10.244.0.2']]));
    put(slice('c', 'web', [['10.244.0.3']]));
    const addrs = () => idx.endpointsFor('ns/web').flatMap((g) => g.endpoints.map((e) => e.address)).sort();
    expect(addrs()).toEqual(['10.244.0.1', '10.244.0.2', '10.244.0.3']);
    put(slice('b', 'web', [['10.244.0.9']]));
    expect(addrs()).toEqual(['10.244.0.1', '10.244.0.3', '10.244.0.9']);
    put(slice('c', 'api', [['10.244.0.3']]));
    expect(addrs()).toEqual(['10.244.0.1', '10.244.0.9']);
    store.delete('ns/a');
    expect(idx.slicesFor('ns/web').map((s) => s.name)).toEqual(['b']);
    // A relist that keeps only the api slice: the store's replace() tells the index of each difference.
    const next = new KeyedMap<EndpointSliceInfo>();
    next.set('ns', 'c', store.get('ns/c')!);
    store.replace(next);
    expect([...idx.serviceKeys()]).toEqual(['ns/api']);
  });
});

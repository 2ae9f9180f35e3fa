import { describe, expect, it } from 'vitest';
import { collectGarbage } from '../../src/agent/memory-release.ts';
import fc from 'fast-check';
import { ServiceChangeTracker, type ServicePortChange } from '../../src/model/change-tracker.ts';
import { buildServicePorts } from '../../src/model/build-service-ports.ts';
import type { EndpointSliceInfo, NodeInfo, ServiceInfo } from '../../src/k8s/types.ts';
import type { ServicePort } from '../../src/model/service-port.ts';
import { config, ep, node, service, show, slice } from './fixtures.ts';

const up = <T extends { namespace: string; name: string }>(object: T) => ({
  type: 'upsert' as const,
  key: `${object.namespace}/${object.name}`,
  object,
});
const del = <T extends { namespace: string; name: string }>(object: T) => ({
  type: 'delete' as const,
  key: `${object.namespace}/${object.name}`,
  object,
});
const summary = (changes: ServicePortChange[]) => changes.map((c) => [c.kind, c.id, c.triggeredAt]);

const twoPorts = () =>
  service({
    ports: [
      { name: 'http', protocol: 'TCP', port: 80 },
      { name: 'dns', protocol: 'UDP', port: 53 },
    ],
  });
const sliceFor = (name: string, ips: string[], over: Partial<EndpointSliceInfo> = {}) =>
  slice(
    name,
    ips.map((ip) => ep(ip)),
    {
      ports: [
        { name: 'http', protocol: 'TCP', port: 8080 },
        { name: 'dns', protocol: 'UDP', port: 5353 },
      ],
      ...over,
    },
  );

function tracker(gates = {}) {
  const t = new ServiceChangeTracker(config(gates));
  t.onNode(node(), 0);
  t.drain();
  return t;
}

describe('ServiceChangeTracker', () => {
  it('a new service with its slice: one added change per port, with the earliest trigger time', () => {
    const t = tracker();
    t.onEndpointSlice(up(sliceFor('web-1', ['10.0.1.1'])), 7);
    t.onService(up(twoPorts()), 9);
    expect(t.pendingServices).toBe(1);
    const r = t.drain();
    expect(summary(r.changes)).toEqual([
      ['added', 'default/web/TCP/http/IPv4', 7],
      ['added', 'default/web/UDP/dns/IPv4', 7],
    ]);
    expect(r.servicesEvaluated).toBe(1);
    expect(t.pendingServices).toBe(0);
    expect(t.drain()).toEqual({ changes: [], changed: new Set(), warnings: [], servicesEvaluated: 0 });
  });

  it('servicePort(id) finds a port as last handed out, and nothing for an id it never handed out or took back', () => {
    const t = tracker();
    t.onService(up(twoPorts()), 1);
    t.onEndpointSlice(up(sliceFor('web-1', ['10.0.1.1'])), 1);
    expect(t.servicePort('default/web/UDP/dns/IPv4')).toBeUndefined(); // not drained yet
    t.drain();
    for (const p of t.servicePorts()) expect(t.servicePort(p.id)).toEqual(p);
    expect([...t.servicePorts()]).toHaveLength(2);
    for (const id of ['default/web/UDP/dns/IPv6', 'default/webs/UDP/dns/IPv4', 'default/we', 'default', ''])
      expect(t.servicePort(id)).toBeUndefined();
    t.onService(del(twoPorts()), 2);
    t.drain();
    expect(t.servicePort('default/web/UDP/dns/IPv4')).toBeUndefined();
  });

  it('serviceCount counts the Services whose ports were last handed out', () => {
    const t = tracker();
    t.onService(up(twoPorts()), 1);
    t.onService(up(service({ name: 'other' })), 1);
    expect(t.serviceCount).toBe(0); // not drained yet
    t.drain();
    expect(t.serviceCount).toBe(2);
    t.onService(del(twoPorts()), 2);
    t.drain();
    expect(t.serviceCount).toBe(1);
  });

  it('the earliest trigger time wins even when events arrive out of order', () => {
    const t = tracker();
    t.onService(up(service()), 5);
    t.onEndpointSlice(up(sliceFor('web-1', ['10.0.1.1'])), 3);
    t.onEndpointSlice(up(sliceFor('web-1', ['10.0.1.2'])), 9);
    expect(summary(t.drain().changes)).toEqual([['added', 'default/web/TCP/http/IPv4', 3]]);
  });

  it('an endpoint change: updated with previous and current; untouched ports stay as they were', () => {
    const t = tracker();
    t.onService(up(twoPorts()), 1);
    t.onEndpointSlice(up(sliceFor('web-1', ['10.0.1.1'])), 1);
    t.drain();
    const before = new Map([...t.servicePorts()].map((p) => [p.id, p]));
    // only the UDP port's endpoints change: the slice's TCP port is renamed away
    t.onEndpointSlice(up(sliceFor('web-1', ['10.0.1.1'], { ports: [{ name: 'http', protocol: 'TCP', port: 8080 }] })), 2);
    const { changes } = t.drain();
    expect(summary(changes)).toEqual([['updated', 'default/web/UDP/dns/IPv4', 2]]);
    const c = changes[0]!;
    if (c.kind !== 'updated') throw new Error('expected updated');
    expect(show(c.previous.cluster)).toEqual(['10.0.1.1:5353']);
    expect(show(c.current.cluster)).toBe('reject');
    expect(c.previous).toEqual(before.get('default/web/UDP/dns/IPv4'));
    const after = new Map([...t.servicePorts()].map((p) => [p.id, p]));
    expect(after.get('default/web/TCP/http/IPv4')).toEqual(before.get('default/web/TCP/http/IPv4'));
  });

  it('keeps no ServicePort: once nothing holds them they are derived again, equal, and again() derives one it handed out', async () => {
    const t = tracker();
    t.onService(up(twoPorts()), 1);
    t.onEndpointSlice(up(sliceFor('web-1', ['10.0.1.1', '10.0.1.2'])), 1);
    const handedOut = t.drain().changes.map((c) => (c.kind === 'removed' ? c.previous : c.current));
    const copies = structuredClone(handedOut);
    const weak = handedOut.map((p) => new WeakRef(p));
    const again = handedOut.map((p) => {
      const from = t.again(p)!;
      const id = p.id;
      return () => from.derive(id);
    });
    // One per service, shared by its ports: no rendering keeps a closure of its own.
    expect(new Set(handedOut.map((p) => t.again(p))).size).toBe(1);
    // Held for the sync that drained them (its reads get these very objects), let go once it is over.
    // (Compared here, not by expect(), which keeps what it was last given.)
    expect(handedOut.every((p) => t.servicePort(p.id) === p)).toBe(true);
    handedOut.length = 0;
    t.settled();
    // Later events change the tracker's own list of slices; what the ports were derived from stays.
    t.onEndpointSlice(up(sliceFor('web-2', ['10.0.2.1'])), 2);
    // A WeakRef keeps its target until the job that made it ends.
    await new Promise((r) => setImmediate(r));
    collectGarbage();
    expect(weak.map((w) => w.deref())).toEqual(weak.map(() => undefined));
    expect(again.map((a) => a())).toEqual(copies);
    expect(t.again(copies[0]!)).toBeUndefined();
    t.drain();
    expect(again.map((a) => a())).toEqual(copies);
    expect(again.map((a) => a())).not.toEqual([...t.servicePorts()]);
  });

  it.each([
    [
      'a service update and its revert',
      (t: ServiceChangeTracker) => {
        t.onService(up(service({ ports: [{ name: 'http', protocol: 'TCP', port: 81 }] })), 2);
        t.onService(up(service()), 3);
      },
    ],
    ['a slice re-sent with the same content', (t: ServiceChangeTracker) => t.onEndpointSlice(up(sliceFor('web-1', ['10.0.1.1'])), 2)],
    [
      'a new resourceVersion with nothing else changed',
      (t: ServiceChangeTracker) => t.onService(up(service({ resourceVersion: '99' })), 2),
    ],
    [
      'a slice removed and re-added',
      (t: ServiceChangeTracker) => {
        t.onEndpointSlice(del(sliceFor('web-1', ['10.0.1.1'])), 2);
        t.onEndpointSlice(up(sliceFor('web-1', ['10.0.1.1'])), 3);
      },
    ],
    [
      'an endpoint split into another slice',
      (t: ServiceChangeTracker) => {
        t.onEndpointSlice(up(sliceFor('web-2', ['10.0.1.1'])), 2);
        t.onEndpointSlice(del(sliceFor('web-1', ['10.0.1.1'])), 3);
      },
    ],
    [
      'a node label flapping back',
      (t: ServiceChangeTracker) => {
        t.onNode(node({ zone: 'zone-z' }), 2);
        t.onNode(node(), 3);
      },
    ],
  ])('changes that cancel out yield nothing: %s', (_, act) => {
    const t = tracker();
    t.onService(up(service()), 1);
    t.onEndpointSlice(up(sliceFor('web-1', ['10.0.1.1'])), 1);
    t.drain();
    act(t);
    expect(t.drain().changes).toEqual([]);
  });

  it('KEP-31: a service that gains service-proxy-name arrives as a delete and all its ports go; losing it brings them back', () => {
    const t = tracker();
    t.onService(up(twoPorts()), 1);
    t.onEndpointSlice(up(sliceFor('web-1', ['10.0.1.1'])), 1);
    t.drain();
    t.onService(del(twoPorts()), 2);
    expect(summary(t.drain().changes)).toEqual([
      ['removed', 'default/web/TCP/http/IPv4', 2],
      ['removed', 'default/web/UDP/dns/IPv4', 2],
    ]);
    expect([...t.servicePorts()]).toEqual([]);
    t.onService(up(twoPorts()), 3);
    const back = t.drain().changes;
    expect(summary(back)).toEqual([
      ['added', 'default/web/TCP/http/IPv4', 3],
      ['added', 'default/web/UDP/dns/IPv4', 3],
    ]);
    expect(back.map((c) => (c.kind === 'added' ? show(c.current.cluster) : []))).toEqual([['10.0.1.1:8080'], ['10.0.1.1:5353']]);
  });

  it('ports and families come and go individually', () => {
    const t = tracker();
    t.onService(up(service()), 1);
    t.drain();
    t.onService(up(service({ clusterIPs: ['10.96.0.10', 'fd00:10:96::a'], ipFamilies: ['IPv4', 'IPv6'] })), 2);
    expect(summary(t.drain().changes)).toEqual([['added', 'default/web/TCP/http/IPv6', 2]]);
    t.onService(
      up(
        service({
          clusterIPs: ['10.96.0.10', 'fd00:10:96::a'],
          ipFamilies: ['IPv4', 'IPv6'],
          ports: [{ name: 'web', protocol: 'TCP', port: 80 }],
        }),
      ),
      3,
    );
    expect(summary(t.drain().changes)).toEqual([
      ['added', 'default/web/TCP/web/IPv4', 3],
      ['added', 'default/web/TCP/web/IPv6', 3],
      ['removed', 'default/web/TCP/http/IPv4', 3],
      ['removed', 'default/web/TCP/http/IPv6', 3],
    ]);
    t.onService(up(service({ clusterIPs: ['None'], ports: [{ name: 'web', protocol: 'TCP', port: 80 }] })), 4);
    expect(summary(t.drain().changes)).toEqual([
      ['removed', 'default/web/TCP/web/IPv4', 4],
      ['removed', 'default/web/TCP/web/IPv6', 4],
    ]);
  });

  it('a slice relabelled to another service leaves the first and joins the second', () => {
    const t = tracker();
    t.onService(up(service()), 1);
    t.onService(up(service({ name: 'api', clusterIPs: ['10.96.0.11'] })), 1);
    t.onEndpointSlice(up(sliceFor('shared-1', ['10.0.1.1'])), 1);
    t.drain();
    t.onEndpointSlice(up(sliceFor('shared-1', ['10.0.1.1'], { serviceName: 'api' })), 2);
    const { changes } = t.drain();
    expect(changes.map((c) => [c.kind, c.id, c.kind === 'removed' ? '' : show(c.current.cluster)])).toEqual([
      ['updated', 'default/web/TCP/http/IPv4', 'reject'],
      ['updated', 'default/api/TCP/http/IPv4', ['10.0.1.1:8080']],
    ]);
  });

  it('a node zone change re-evaluates only services whose slices carry topology labels or hints', () => {
    const t = tracker({ TopologyAwareProxying: true });
    const hinted = ep('10.0.2.1', { hints: { forZones: ['zone-a'], forNodes: [] } });
    const other = ep('10.0.2.2', { hints: { forZones: ['zone-b'], forNodes: [] } });
    for (let i = 0; i < 5; i++) {
      t.onService(up(service({ name: `plain-${i}`, clusterIPs: [`10.96.1.${i + 1}`] })), 1);
      t.onEndpointSlice(up(slice(`plain-${i}-1`, [ep(`10.0.1.${i + 1}`)], { serviceName: `plain-${i}` })), 1);
    }
    t.onService(up(service({ name: 'hints', clusterIPs: ['10.96.2.1'] })), 1);
    t.onEndpointSlice(up(slice('hints-1', [hinted, other], { serviceName: 'hints' })), 1);
    t.onService(up(service({ name: 'zoned', clusterIPs: ['10.96.3.1'] })), 1);
    t.onEndpointSlice(up(slice('zoned-a', [ep('10.0.3.1')], { serviceName: 'zoned', forZone: 'zone-a' })), 1);
    t.onEndpointSlice(up(slice('zoned-b', [ep('10.0.3.2')], { serviceName: 'zoned', forZone: 'zone-b' })), 1);
    expect(t.drain().servicesEvaluated).toBe(7);

    t.onNode(node({ resourceVersion: '2', addresses: [{ type: 'InternalIP', address: '192.0.2.1' }] }), 2);
    expect(t.pendingServices).toBe(0);

    t.onNode(node({ zone: 'zone-b' }), 3);
    const r = t.drain();
    expect(r.servicesEvaluated).toBe(2);
    expect(r.changes.map((c) => [c.id, c.triggeredAt, c.kind === 'removed' ? '' : show(c.current.cluster)])).toEqual([
      ['default/hints/TCP/http/IPv4', 3, ['10.0.2.2:8080']],
      ['default/zoned/TCP/http/IPv4', 3, ['10.0.3.2:8080']],
    ]);

    // the node disappears: no zone, so no filtering at all
    t.onNode(undefined, 4);
    expect(t.drain().changes.map((c) => (c.kind === 'removed' ? '' : show(c.current.cluster)))).toEqual([
      ['10.0.2.1:8080', '10.0.2.2:8080'],
      ['10.0.3.1:8080', '10.0.3.2:8080'],
    ]);
  });

  it('a slice that loses its labels and hints is no longer re-evaluated on node changes', () => {
    const t = tracker({ TopologyAwareProxying: true });
    t.onService(up(service()), 1);
    t.onEndpointSlice(up(slice('web-a', [ep('10.0.1.1')], { forZone: 'zone-a' })), 1);
    t.drain();
    t.onEndpointSlice(up(slice('web-a', [ep('10.0.1.1')])), 2);
    t.drain();
    t.onNode(node({ zone: 'zone-q' }), 3);
    expect(t.pendingServices).toBe(0);
  });

  it('hands out warnings of recomputed services', () => {
    const t = tracker();
    t.onService(up(service({ externalIPs: ['nope'] })), 1);
    expect(t.drain().warnings).toMatchObject([{ code: 'INVALID_IP', field: 'spec.externalIPs[0]' }]);
  });
});

describe('ServiceChangeTracker agrees with building from scratch (property)', () => {
  const names = ['a', 'b'];
  const svcArb = fc.record({
    name: fc.constantFrom(...names),
    port: fc.constantFrom(80, 81),
    dual: fc.boolean(),
    itpLocal: fc.boolean(),
    deleted: fc.boolean(),
  });
  const sliceArb = fc.record({
    name: fc.constantFrom('s1', 's2', 's3'),
    service: fc.constantFrom(...names),
    v6: fc.boolean(),
    ips: fc.subarray([1, 2, 3]),
    ready: fc.boolean(),
    local: fc.boolean(),
    forZone: fc.constantFrom(undefined, 'zone-a', 'zone-b'),
    deleted: fc.boolean(),
  });
  const nodeArb = fc.record({ zone: fc.constantFrom(undefined, 'zone-a', 'zone-b') });
  const eventArb = fc.oneof(
    svcArb.map((s) => ({ kind: 'svc' as const, s })),
    sliceArb.map((s) => ({ kind: 'slice' as const, s })),
    nodeArb.map((s) => ({ kind: 'node' as const, s })),
  );

  it('after any event sequence, applying the drained changes gives exactly the from-scratch ports', () => {
    fc.assert(
      fc.property(fc.array(fc.array(eventArb, { maxLength: 6 }), { minLength: 1, maxLength: 6 }), (batches) => {
        const cfg = config({ TopologyAwareProxying: true });
        const t = new ServiceChangeTracker(cfg);
        const services = new Map<string, ServiceInfo>();
        const slices = new Map<string, EndpointSliceInfo>();
        let current: NodeInfo | undefined;
        const applied = new Map<string, ServicePort>();
        let time = 0;
        for (const batch of batches) {
          for (const ev of batch) {
            time++;
            if (ev.kind === 'svc') {
              const s = service({
                name: ev.s.name,
                clusterIPs: ev.s.dual ? ['10.96.0.10', 'fd00::a'] : ['10.96.0.10'],
                ipFamilies: ev.s.dual ? ['IPv4', 'IPv6'] : ['IPv4'],
                ports: [{ name: 'http', protocol: 'TCP', port: ev.s.port }],
                internalTrafficPolicy: ev.s.itpLocal ? 'Local' : 'Cluster',
              });
              if (ev.s.deleted) {
                services.delete(s.name);
                t.onService(del(s), time);
              } else {
                services.set(s.name, s);
                t.onService(up(s), time);
              }
            } else if (ev.kind === 'slice') {
              const e = ev.s;
              const sl = slice(
                e.name,
                e.ips.map((i) => ep(e.v6 ? `fd00:1::${i}` : `10.0.1.${i}`, { ready: e.ready, nodeName: e.local ? 'node-a' : 'node-b' })),
                { serviceName: e.service, addressType: e.v6 ? 'IPv6' : 'IPv4', forZone: e.forZone },
              );
              if (e.deleted) {
                slices.delete(e.name);
                t.onEndpointSlice(del(sl), time);
              } else {
                slices.set(e.name, sl);
                t.onEndpointSlice(up(sl), time);
              }
            } else {
              current = ev.s.zone === undefined ? node({ zone: undefined }) : node({ zone: ev.s.zone });
              t.onNode(current, time);
            }
          }
          const drained = t.drain();
          // The reconciler renders exactly these ids again: every change, and only those.
          expect(drained.changed).toEqual(new Set(drained.changes.map((c) => c.id)));
          for (const c of drained.changes) {
            if (c.kind === 'removed') {
              expect(applied.has(c.id)).toBe(true);
              applied.delete(c.id);
            } else {
              expect(applied.has(c.id)).toBe(c.kind === 'updated');
              applied.set(c.id, c.current);
            }
          }
          const expected = new Map<string, ServicePort>();
          for (const s of services.values()) {
            const own = [...slices.values()].filter((sl) => sl.serviceName === s.name);
            for (const p of buildServicePorts(s, own, current, cfg).ports) expected.set(p.id, p);
          }
          expect(new Map([...applied].sort())).toEqual(new Map([...expected].sort()));
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('scale', () => {
  it('10k services × 10 endpoints: initial drain and a one-service change', () => {
    const t = new ServiceChangeTracker(config({ TopologyAwareProxying: true }));
    t.onNode(node(), 0);
    const N = 10_000;
    const t0 = performance.now();
    for (let i = 0; i < N; i++) {
      const name = `svc-${i}`;
      const s = service({ name, clusterIPs: [`10.${96 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`] });
      t.onService(up(s), 1);
      const eps = [];
      for (let j = 0; j < 10; j++)
        eps.push(ep(`10.${(i >> 8) & 255}.${i & 255}.${j + 1}`, { zone: j % 2 ? 'zone-a' : 'zone-b', nodeName: `node-${j}` }));
      t.onEndpointSlice(up(slice(`${name}-1`, eps, { serviceName: name })), 1);
    }
    const t1 = performance.now();
    const first = t.drain();
    const t2 = performance.now();
    expect(first.changes).toHaveLength(N);
    expect(
      first.changes.every((c) => c.kind === 'added' && c.current.cluster.kind === 'endpoints' && c.current.cluster.endpoints.length === 10),
    ).toBe(true);

    t.onEndpointSlice(up(slice('svc-42-1', [ep('10.0.42.1')], { serviceName: 'svc-42' })), 2);
    const t3 = performance.now();
    const one = t.drain();
    const t4 = performance.now();
    expect(summary(one.changes)).toEqual([['updated', 'default/svc-42/TCP/http/IPv4', 2]]);

    t.onNode(node({ zone: 'zone-b' }), 3);
    const t5 = performance.now();
    const nodeChange = t.drain();
    const t6 = performance.now();
    expect(nodeChange.servicesEvaluated).toBe(0);

    const heap = process.memoryUsage().heapUsed / 2 ** 20;
    console.log(
      `[model scale] ${N} services × 10 endpoints: ingest ${(t1 - t0).toFixed(0)} ms, first drain ${(t2 - t1).toFixed(0)} ms, ` +
        `one-service drain ${(t4 - t3).toFixed(2)} ms, node zone change ${(t6 - t5).toFixed(2)} ms, heap ${heap.toFixed(0)} MiB`,
    );
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeKernel } from '../../src/nft/fake/fake-kernel.ts';
import type { Element, Operation } from '../../src/nft/objects.ts';
import { ENDPOINT_SHAPES } from '../../src/reconciler/config.ts';
import { diffRulesets, EMPTY_SYNC_STATE, type SyncState } from '../../src/reconciler/diff.ts';
import { planFullSync } from '../../src/reconciler/full-sync.ts';
import { claimKey, forEachOwnElement, type Fragment } from '../../src/reconciler/fragment.ts';
import { DEFAULT_ENDPOINT_MAP_BLOCKS, endpointRegion, regionOffset, shardMapName, shardOf } from '../../src/reconciler/endpoint-slots.ts';
import { servicePortNameBase, servicePortReadable } from '../../src/reconciler/names.ts';
import { claimedElement, renderRuleset, type Ruleset } from '../../src/reconciler/ruleset.ts';
import { churn, churnArbFor, servicePortsArb } from './churn.ts';
import { config, ep, renderNext, sp, V4, V6 } from './fixtures.ts';
import { freshKernel, listingsWithoutHandles as listing } from './kernel-listing.ts';

function ownElementsOf(f: Fragment): Element[] {
  const out: Element[] = [];
  forEachOwnElement(f, (e) => out.push(e));
  return out;
}

describe.each(ENDPOINT_SHAPES)('incremental syncs and a full sync agree (endpoint shape %s)', (shape) => {
  const churnArb = churnArbFor([shape]);
  it('random churn applied incrementally leaves the kernel as a fresh full sync does', () => {
    fc.assert(
      fc.property(churnArb, ({ initial, steps }) => {
        const { k, state, rendered } = churn(initial, steps);
        expect(state.staleChains.size).toBe(0);
        expect(listing(k)).toEqual(listing(freshKernel(rendered)));
      }),
      { numRuns: 150 },
    );
  });

  it('a full reassert over the churned kernel changes nothing and keeps what is there', () => {
    fc.assert(
      fc.property(churnArb, ({ initial, steps }) => {
        const { k, state, rendered } = churn(initial, steps);
        const before = listing(k);
        k.commitSync(planFullSync(rendered, 'reassert', state).ops);
        expect(listing(k)).toEqual(before);
      }),
      { numRuns: 60 },
    );
  });

  it('a full replace over the churned kernel gives the same listing', () => {
    fc.assert(
      fc.property(churnArb, ({ initial, steps }) => {
        const { k, rendered } = churn(initial, steps);
        const before = listing(k);
        k.commitSync(planFullSync(rendered, 'replace').ops);
        expect(listing(k)).toEqual(before);
      }),
      { numRuns: 60 },
    );
  });

  it('a sync with nothing changed commits nothing', () => {
    fc.assert(
      fc.property(servicePortsArb, (ports) => {
        const cfg = config({ endpointShape: shape });
        const a = renderRuleset(ports, cfg);
        const b = renderNext(
          ports.map((p) => structuredClone(p)),
          cfg,
          a,
        );
        expect(diffRulesets(a, b, { now: 5 }).ops).toEqual([]);
      }),
      { numRuns: 50 },
    );
  });
});

it('random churn that switches endpoint shape on the way leaves the kernel as a fresh full sync does', () => {
  fc.assert(
    fc.property(churnArbFor(ENDPOINT_SHAPES), ({ initial, steps }) => {
      const { k, state, rendered } = churn(initial, steps);
      expect(state.staleChains.size).toBe(0);
      expect(listing(k)).toEqual(listing(freshKernel(rendered)));
    }),
    { numRuns: 80 },
  );
});

describe('a change to one service touches only that service', () => {
  it.each(ENDPOINT_SHAPES)(
    'every operation is on its chains, its maps, its affinity sets or elements it claims (endpoint shape %s)',
    (shape) => {
      fc.assert(
        fc.property(servicePortsArb, servicePortsArb, fc.nat(), (before, after, pick) => {
          if (after.length === 0) return;
          const cfg = config({ endpointShape: shape });
          const changed = after[pick % after.length]!;
          // Everything as before except the one port.
          const base = before.filter((p) => p.id !== changed.id);
          const a = renderRuleset(base.concat(before.filter((p) => p.id === changed.id)), cfg);
          const b = renderNext(base.concat([changed]), cfg, a);
          const mine = servicePortReadable(changed);
          const owners = (r: Ruleset, key: string) => r.claims.get(key);
          for (const op of diffRulesets(a, b, { now: 1 }).ops) {
            const o = op.object;
            if (o.kind === 'chain') expect(o.name).toContain(mine);
            else if (o.kind === 'rule') expect(o.chain).toContain(mine);
            else if (o.kind === 'set' || o.kind === 'map') {
              // Its own maps, or a shared endpoint map its range is the first to enter or the last to leave.
              const shards = [a, b].flatMap((r) => r.services.get(changed.id)?.regions.map((x) => shardMapName(shardOf(x))) ?? []);
              expect(o.name.includes(mine) || shards.includes(o.name), o.name).toBe(true);
            } else if (o.kind === 'element') {
              const key = claimKey(o);
              // Its own element, or one it stopped or started shadowing in a conflict.
              const fragments = [a.services.get(changed.id)?.fragment, b.services.get(changed.id)?.fragment];
              const same = (e: Element) => e.set === o.set && e.family === o.family && e.key.join() === o.key.join();
              const inFragment = fragments.some(
                (f) =>
                  f &&
                  (f.elements.some(same) ||
                    ownElementsOf(f).some(same) ||
                    (o.set === 'hairpin-endpoints' && (f.hairpin ?? []).includes(o.key[0]!))),
              );
              expect(inFragment || owners(a, key) === changed.id || owners(b, key) === changed.id, key).toBe(true);
            } else {
              throw new Error(`unexpected ${op.verb} ${o.kind}`);
            }
          }
        }),
        { numRuns: 150 },
      );
    },
  );

  const opNames = (ops: readonly Operation[]) =>
    ops.map((o) => {
      const obj = o.object;
      const name =
        'name' in obj ? obj.name : 'chain' in obj ? obj.chain : obj.kind === 'element' ? `${obj.set} ${obj.key.join(' . ')}` : '';
      return `${o.verb} ${obj.kind} ${name}`;
    });
  const many = () =>
    Array.from({ length: 50 }, (_, i) => sp({ serviceName: `s${i}`, clusterIP: `10.96.1.${i}`, endpoints: [ep(`10.244.0.${i + 1}`)] }));
  /** 50 services, then service s7 gains a second endpoint: the ops of that one change. */
  const opsAddingAnEndpointToService7 = (cfg: ReturnType<typeof config>) => {
    const ports = many();
    const a = renderRuleset(ports, cfg);
    const changed = ports.map((p, i) =>
      i === 7 ? sp({ serviceName: 's7', clusterIP: '10.96.1.7', endpoints: [ep('10.244.0.8'), ep('10.244.9.9')] }) : p,
    );
    return diffRulesets(a, renderNext(changed, cfg, a), { now: 1 }).ops;
  };

  it('endpoint shape chains: one endpoint added to one of many services: its endpoint chain, its service chain, nothing else', () => {
    const cfg = config({ families: { IPv4: V4 } });
    const ops = opsAddingAnEndpointToService7(cfg);
    expect(opNames(ops)).toEqual([
      'flush chain service-OXIM3RN4-default/s7/tcp/http',
      'add chain endpoint-II5R2NBG-default/s7/tcp/http__10.244.9.9/8080',
      'add rule service-OXIM3RN4-default/s7/tcp/http',
      'add rule service-OXIM3RN4-default/s7/tcp/http',
      'add rule service-OXIM3RN4-default/s7/tcp/http',
      'add rule endpoint-II5R2NBG-default/s7/tcp/http__10.244.9.9/8080',
      'add rule endpoint-II5R2NBG-default/s7/tcp/http__10.244.9.9/8080',
    ]);
  });

  const mapCfg = config({ families: { IPv4: V4 }, endpointShape: 'map' });
  // s7's slot range in the shared endpoint map.
  const s7Region = endpointRegion('endpoints-OXIM3RN4-default/s7/tcp/http', 1, DEFAULT_ENDPOINT_MAP_BLOCKS);
  const s7 = regionOffset(s7Region);
  const s7Map = shardMapName(shardOf(s7Region));
  it('endpoint shape map: one endpoint added to one of many services: its service chain and its map elements, nothing else', () => {
    const cfg = mapCfg;
    const ops = opsAddingAnEndpointToService7(cfg);
    // N went from 1 to 2: the one dnat rule changes (its numgen modulus, not its offset), the rest is elements.
    expect(opNames(ops)).toEqual([
      'flush chain service-OXIM3RN4-default/s7/tcp/http',
      'add rule service-OXIM3RN4-default/s7/tcp/http',
      'add rule service-OXIM3RN4-default/s7/tcp/http',
      `add element ${s7Map} ${s7 + 1}`,
      'add element hairpin-endpoints 10.244.9.9 . 10.244.9.9',
    ]);
  });

  it('endpoint shape map: one endpoint replaced by another (same count): map elements only, no rule, so no table re-validation', () => {
    const cfg = mapCfg;
    const ports = many();
    const a = renderRuleset(ports, cfg);
    const changed = ports.map((p, i) => (i === 7 ? sp({ serviceName: 's7', clusterIP: '10.96.1.7', endpoints: [ep('10.244.9.9')] }) : p));
    const b = renderNext(changed, cfg, a);
    const ops = diffRulesets(a, b, { now: 1 }).ops;
    expect(opNames(ops)).toEqual([
      `delete element ${s7Map} ${s7}`,
      'delete element hairpin-endpoints 10.244.0.8 . 10.244.0.8',
      `add element ${s7Map} ${s7}`,
      'add element hairpin-endpoints 10.244.9.9 . 10.244.9.9',
    ]);
    expect(ops.find((o) => o.verb === 'add' && o.object.kind === 'element' && o.object.set === s7Map)!.object).toMatchObject({
      value: ['10.244.9.9', '8080'],
    });
  });

  it('endpoint shape map: an endpoint shared by two services stays in hairpin-endpoints until neither uses it', () => {
    const cfg = mapCfg;
    const x = sp({ serviceName: 'x', clusterIP: '10.96.2.1', endpoints: [ep('10.244.5.5')] });
    const y = sp({ serviceName: 'y', clusterIP: '10.96.2.2', endpoints: [ep('10.244.5.5')] });
    const k = new FakeKernel();
    const a = renderRuleset([x, y], cfg);
    k.commitSync(planFullSync(a, 'replace').ops);
    const hairpin = () =>
      k
        .listSync('ip', 'kube-nft-proxy')!
        .elements.filter((e) => e.set === 'hairpin-endpoints')
        .map((e) => e.key.join(' . '));
    expect(hairpin()).toEqual(['10.244.5.5 . 10.244.5.5']);
    const b = renderNext([y], cfg, a);
    const p1 = diffRulesets(a, b, { now: 1 });
    expect(opNames(p1.ops)).not.toContain('delete element hairpin-endpoints 10.244.5.5 . 10.244.5.5');
    k.commitSync(p1.ops);
    expect(hairpin()).toEqual(['10.244.5.5 . 10.244.5.5']);
    const c = renderNext([], cfg, b);
    k.commitSync(diffRulesets(b, c, { now: 2 }, p1.next.staleChains).ops);
    expect(hairpin()).toEqual([]);
  });
});

describe('stale chains and failed commits', () => {
  const cfg = config({ families: { IPv4: V4, IPv6: V6 } });
  const mapCfg = config({ families: { IPv4: V4, IPv6: V6 }, endpointShape: 'map' });
  const web = sp({ nodePort: 30080, endpoints: [ep('10.244.1.5'), ep('10.244.2.6')] });

  // chains: service-, external- and two endpoint- chains; map: no endpoint chains (the endpoints map goes at once).
  it.each([
    ['chains', cfg, 4],
    ['map', mapCfg, 2],
  ] as const)(
    'a removed service (endpoint shape %s): chains flushed and elements removed now, chains deleted after the delay',
    (_shape, cfg, stale) => {
      const k = new FakeKernel();
      const a = renderRuleset([web], cfg);
      k.commitSync(planFullSync(a, 'replace').ops);
      const b = renderNext([], cfg, a);
      const p1 = diffRulesets(a, b, { now: 1000 }, EMPTY_SYNC_STATE.staleChains);
      k.commitSync(p1.ops);
      expect(p1.ops.filter((o) => o.verb === 'delete' && o.object.kind === 'chain')).toEqual([]);
      expect(p1.next.staleChains.size).toBe(stale);
      const chainsAfterFlush = k.listSync('ip', 'kube-nft-proxy')!.chains.filter((c) => c.name.includes('/'));
      expect(chainsAfterFlush).toHaveLength(stale);
      expect(k.listSync('ip', 'kube-nft-proxy')!.rules.filter((r) => r.chain.includes('/'))).toEqual([]);
      expect(k.listSync('ip', 'kube-nft-proxy')!.sets.filter((c) => c.name.includes('/'))).toEqual([]);

      const early = diffRulesets(b, b, { now: 1999 }, p1.next.staleChains);
      expect(early.ops).toEqual([]);
      const late = diffRulesets(b, b, { now: 2000 }, p1.next.staleChains);
      expect(late.ops.map((o) => `${o.verb} ${o.object.kind}`)).toEqual(Array(stale).fill('delete chain'));
      k.commitSync(late.ops);
      expect(late.next.staleChains.size).toBe(0);
      expect(listing(k)).toEqual(listing(freshKernel(b)));
    },
  );

  it('a chain wanted again before its deletion is reused, not deleted', () => {
    const k = new FakeKernel();
    const a = renderRuleset([web], cfg);
    k.commitSync(planFullSync(a, 'replace').ops);
    const b = renderNext([], cfg, a);
    const p1 = diffRulesets(a, b, { now: 1000 });
    k.commitSync(p1.ops);
    const c = renderNext([web], cfg, b);
    const p2 = diffRulesets(b, c, { now: 5000 }, p1.next.staleChains);
    k.commitSync(p2.ops);
    expect(p2.ops.some((o) => o.verb === 'delete' && o.object.kind === 'chain')).toBe(false);
    expect(p2.next.staleChains.size).toBe(0);
    expect(listing(k)).toEqual(listing(freshKernel(c)));
  });

  it('a refused commit leaves the state where it was, and the retry is the same diff', () => {
    const k = new FakeKernel();
    const a = renderRuleset([web], cfg);
    k.commitSync(planFullSync(a, 'replace').ops);
    let state: SyncState = { applied: a, staleChains: new Map() };
    const b = renderNext([web, sp({ serviceName: 'api', clusterIP: '10.96.0.20', endpoints: [ep('10.244.3.3')] })], cfg, a);
    const failed = diffRulesets(state.applied, b, { now: 10 }, state.staleChains);
    k.faults.push({ code: 'ENOBUFS' });
    expect(() => k.commitSync(failed.ops)).toThrow(/ENOBUFS/);
    // The caller keeps `state`; the retry plans the same operations.
    const retry = diffRulesets(state.applied, b, { now: 10 }, state.staleChains);
    expect(retry.ops).toEqual(failed.ops);
    k.commitSync(retry.ops);
    state = retry.next;
    expect(listing(k)).toEqual(listing(freshKernel(b)));
  });

  it('start-up replaces whatever a previous run left, in one transaction', () => {
    const k = new FakeKernel();
    // A previous run with other services and an IPv6 table we no longer configure.
    const old = renderRuleset([web, sp({ family: 'IPv6', endpoints: [ep('fd00::5')] })], cfg);
    k.commitSync(planFullSync(old, 'replace').ops);
    const v4only = config({ families: { IPv4: V4 }, masqueradeAll: true });
    const now = renderRuleset([sp({ serviceName: 'api', clusterIP: '10.96.0.20', endpoints: [ep('10.244.3.3')] })], v4only);
    const ops: Operation[] = planFullSync(now, 'replace').ops;
    const commitsBefore = k.commits;
    k.commitSync(ops);
    expect(k.commits).toBe(commitsBefore + 1);
    expect(k.tableNames()).toEqual(['ip kube-nft-proxy']);
    expect(listing(k)).toEqual(listing(freshKernel(now)));
  });
});

describe('a port that wants one key twice (its ClusterIP also an externalIP, an externalIP also its LB IP)', () => {
  it.each(ENDPOINT_SHAPES)('holds the first one, in a full sync and through incremental changes alike (endpoint shape %s)', (shape) => {
    const cfg = config({ families: { IPv4: V4 }, endpointShape: shape });
    const twice = (eps: string[]) =>
      sp({
        clusterIP: '10.96.0.10',
        externalIPs: ['10.96.0.10', '203.0.113.9'],
        loadBalancerIPs: ['203.0.113.9'],
        endpoints: eps.map((ip) => ep(ip)),
      });
    const steps = [
      [twice(['10.244.1.5'])],
      [twice(['10.244.1.5', '10.244.1.6']), sp({ serviceName: 'other', clusterIP: '10.96.0.11', endpoints: [ep('10.244.1.7')] })],
      [twice([])],
      [],
    ];
    for (let n = 1; n <= steps.length; n++) {
      const { k, rendered } = churn(
        cfg,
        steps.slice(0, n).map((ports) => ({ ports, advance: 0 })),
      );
      expect(listing(k)).toEqual(listing(freshKernel(rendered)));
      const keys = planFullSync(rendered, 'replace').ops.flatMap((op) =>
        op.object.kind === 'element' ? [`${op.object.set} ${op.object.key.join(' . ')}`] : [],
      );
      expect(new Set(keys).size).toBe(keys.length);
    }
    // The ClusterIP's own verdict won over the externalIP's for the same key while the port had endpoints.
    const first = renderRuleset([twice(['10.244.1.5'])], cfg);
    expect(claimedElement(first, 'ip kube-nft-proxy service-ips 10.96.0.10 . tcp . 80')?.value).toEqual({
      verdict: 'goto',
      chain: `service-${servicePortNameBase(twice([]))}`,
    });
  });
});

it.each(ENDPOINT_SHAPES)(
  'a ruleset rendered from the applied one is diffed through its changed ports only, with the same operations as a diff ' +
    'of every port (endpoint shape %s)',
  (shape) => {
    const text = (ops: readonly Operation[]) => ops.map((op) => `${op.verb} ${JSON.stringify(op.object)}`).sort();
    fc.assert(
      fc.property(servicePortsArb, servicePortsArb, (before, after) => {
        const cfg = config({ endpointShape: shape });
        const a = renderRuleset(before, cfg);
        const b = renderNext(after, cfg, a);
        expect(b.changes?.since).toBe(a.generation);
        const { changes: _, ...everyPort } = b;
        expect(text(diffRulesets(a, b, { now: 1 }).ops)).toEqual(text(diffRulesets(a, everyPort, { now: 1 }).ops));
      }),
      { numRuns: 150 },
    );
  },
);

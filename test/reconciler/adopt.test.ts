// planAdoption over the kernel-modelling fake: whatever was done to our tables
// (table-driven damage), committing the adoption plan leaves what a fresh
// replace leaves, and intact tables cost no operation. Ownership marks.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeKernel } from '../../src/nft/fake/fake-kernel.ts';
import type { TableListing } from '../../src/nft/dataplane.ts';
import type { Family, Operation } from '../../src/nft/objects.ts';
import { isElementRun, runOperations } from '../../src/nft/element-run.ts';
import { encodeOperationStream } from '../../src/nft/netlink/encode.ts';
import { SET } from '../../src/reconciler/names.ts';
import { planAdoption, planGeneratedAdoption, sameContent } from '../../src/reconciler/adopt.ts';
import { ADOPTION_LIST_OPTIONS, DERIVED_ON_ADOPTION, READ_ENCODED_ON_ADOPTION } from '../../src/reconciler/adoption-listing.ts';
import { generatedOperations, planLength } from '../../src/reconciler/diff.ts';
import { ENDPOINT_SHAPES } from '../../src/reconciler/config.ts';
import { isEndpointMap, SHARD_MAP_PREFIX } from '../../src/reconciler/endpoint-slots.ts';
import { planFullSync, planGeneratedFullSync } from '../../src/reconciler/full-sync.ts';
import { ownershipMark, TABLE_FORMAT_VERSION, tableOwnership } from '../../src/reconciler/ownership.ts';
import { renderRuleset } from '../../src/reconciler/ruleset.ts';
import { config, ep, sp, V4, V6 } from './fixtures.ts';
import { GOLDENS } from './goldens.ts';
import { listingsWithoutHandles } from './kernel-listing.ts';

const ports = GOLDENS.filter((g) => g.config.endpointShape === 'map').flatMap((g) => g.ports);
const T = 'kube-nft-proxy';

function listings(k: FakeKernel): Map<Family, TableListing> {
  const out = new Map<Family, TableListing>();
  for (const f of ['ip', 'ip6'] as const) {
    const l = k.listSync(f, T);
    if (l) out.set(f, l);
  }
  return out;
}

/** A kernel holding what a fresh replace of `desired` leaves. */
function freshKernel(desired: ReturnType<typeof renderRuleset>): FakeKernel {
  const k = new FakeKernel();
  k.commitSync(planFullSync(desired, 'replace').ops);
  return k;
}

type Damage = (k: FakeKernel) => Operation[];
const first = <T>(xs: T[], what: string): T => {
  if (!xs[0]) throw new Error(`no ${what}`);
  return xs[0];
};

const DAMAGE: Array<[string, Damage]> = [
  ['nothing', () => []],
  [
    'a rule deleted',
    (k) => [
      {
        verb: 'delete',
        object: first(
          k.listSync('ip', T)!.rules.filter((r) => r.chain === 'services'),
          'rule',
        ),
      },
    ],
  ],
  ['a chain flushed', () => [{ verb: 'flush', object: { kind: 'chain', family: 'ip', table: T, name: 'nat-prerouting' } }]],
  [
    'an element deleted',
    (k) => [
      {
        verb: 'delete',
        object: first(
          k.listSync('ip', T)!.elements.filter((e) => e.set === 'service-ips'),
          'element',
        ),
      },
    ],
  ],
  [
    'an element pointing elsewhere',
    (k) => {
      const e = first(
        k.listSync('ip6', T)!.elements.filter((x) => x.set === 'service-ips'),
        'element',
      );
      return [
        { verb: 'delete', object: e },
        { verb: 'add', object: { ...e, value: { verdict: 'drop' } } },
      ];
    },
  ],
  [
    'a foreign element',
    () => [{ verb: 'add', object: { kind: 'element', family: 'ip', table: T, set: 'cluster-ips', key: ['10.96.99.99'] } }],
  ],
  [
    'a foreign chain and set',
    () => [
      { verb: 'add', object: { kind: 'chain', family: 'ip', table: T, name: 'intruder' } },
      { verb: 'add', object: { kind: 'set', family: 'ip', table: T, name: 'intruder-set', keyType: ['ipv4_addr'] } },
    ],
  ],
  ['an IPv6 table deleted', () => [{ verb: 'delete', object: { kind: 'table', family: 'ip6', name: T } }]],
];

describe.each(ENDPOINT_SHAPES)('planAdoption (endpoint shape %s)', (shape) => {
  const cfg = config({ families: { IPv4: V4, IPv6: V6 }, endpointShape: shape });
  const desired = renderRuleset(ports, cfg);
  const fresh = () => freshKernel(desired);
  const want = listingsWithoutHandles(fresh());
  const offload = (devices: string[]) =>
    config({
      families: { IPv4: V4, IPv6: V6 },
      endpointShape: shape,
      offloadPacketThreshold: 20,
      flowtableSupported: true,
      flowtableDevices: devices,
    });

  for (const [name, damage] of DAMAGE) {
    it(`repairs: ${name}`, () => {
      const k = fresh();
      k.commitSync(damage(k));
      const plan = planAdoption(desired, listings(k), 0);
      if ('refused' in plan) throw new Error(plan.refused);
      if (name === 'nothing') expect(plan.ops).toEqual([]);
      else expect(plan.ops.length).toBeGreaterThan(0);
      k.commitSync(plan.ops);
      // Foreign chains are flushed now and deleted by the next sync (stale).
      const stale = [...plan.next.staleChains.values()].map((s) => s.chain);
      k.commitSync(stale.map((c) => ({ verb: 'delete', object: c }) as Operation));
      expect(listingsWithoutHandles(k)).toEqual(want);
    });
  }

  it('completes a staged cold start cut short (the stages before the base chains landed, no more)', () => {
    const { generated } = planGeneratedFullSync(desired, 'replace');
    const ops = Array.from(generatedOperations(generated!));
    const hookedFrom = generated!.hookedFrom!;
    for (const landed of [6, Math.floor(hookedFrom / 3), Math.floor((2 * hookedFrom) / 3), hookedFrom]) {
      const k = new FakeKernel();
      k.commitSync(ops.slice(0, landed));
      const plan = planAdoption(desired, listings(k), 0);
      if ('refused' in plan) throw new Error(plan.refused);
      k.commitSync(plan.ops);
      expect(listingsWithoutHandles(k)).toEqual(want);
    }
  });

  it('drops the table of a family no longer configured', () => {
    const k = fresh();
    const v4only = renderRuleset(
      ports.filter((p) => p.family === 'IPv4'),
      config({ families: { IPv4: V4 }, endpointShape: shape }),
    );
    const plan = planAdoption(v4only, listings(k), 0);
    if ('refused' in plan) throw new Error(plan.refused);
    k.commitSync(plan.ops);
    expect(k.listSync('ip6', T)).toBeUndefined();
  });

  it('takes the flowtable devices that changed while no agent ran in place', () => {
    const before = renderRuleset(ports, offload(['eth0', 'veth-a']));
    const k = new FakeKernel({ flowtables: true });
    k.commitSync(planFullSync(before, 'replace').ops);
    const now = renderRuleset(ports, offload(['eth0', 'veth-b']));
    const plan = planAdoption(now, listings(k), 0);
    if ('refused' in plan) throw new Error(plan.refused);
    const flowtableOps = plan.ops.filter((o) => o.object.kind === 'flowtable');
    expect(flowtableOps.map((o) => [o.verb, o.object.kind === 'flowtable' && o.object.devices])).toEqual([
      ['add', ['eth0', 'veth-b']],
      ['add', ['eth0', 'veth-b']],
      ['delete', ['veth-a']],
      ['delete', ['veth-a']],
    ]);
    k.commitSync(plan.ops);
    const fresh = new FakeKernel({ flowtables: true });
    fresh.commitSync(planFullSync(now, 'replace').ops);
    expect(listingsWithoutHandles(k)).toEqual(listingsWithoutHandles(fresh));
  });

  it('gives up (replace instead) when a flowtable is hooked otherwise', () => {
    const k = new FakeKernel({ flowtables: true });
    const wanted = renderRuleset(ports, offload(['eth0']));
    k.commitSync(planFullSync(wanted, 'replace').ops);
    const listed = listings(k);
    const ip = listed.get('ip')!;
    ip.flowtables = ip.flowtables.map((f) => ({ ...f, priority: 10 }));
    expect(planAdoption(wanted, listed, 0)).toMatchObject({ refused: expect.stringMatching(/^flowtable ip .* is defined differently$/) });
  });

  it('gives up (replace instead) when a set definition differs', () => {
    const listed = listings(fresh());
    const ip = listed.get('ip')!;
    // As a kernel holding a set of that name with other flags would list it.
    ip.sets = ip.sets.map((x) => (x.name === 'cluster-ips' ? { ...x, flags: ['interval'] } : x));
    expect(planAdoption(desired, listed, 0)).toEqual({ refused: 'set ip cluster-ips is defined differently' });
  });
});

describe('the hairpin set, which adoption derives from the endpoint maps rather than reads', () => {
  const cfg = config({ families: { IPv4: V4, IPv6: V6 }, endpointShape: 'map' });
  const desired = renderRuleset(ports, cfg);
  const fresh = () => freshKernel(desired);
  const unread = (k: FakeKernel): Map<Family, TableListing> => {
    const out = new Map<Family, TableListing>();
    for (const f of ['ip', 'ip6'] as const) out.set(f, k.listSync(f, T, { skipElementsOf: DERIVED_ON_ADOPTION })!);
    return out;
  };
  /** Listed as the reconciler lists for an adoption: the endpoint maps' elements held encoded, not decoded. */
  const asReconciler = (k: FakeKernel): Map<Family, TableListing> =>
    new Map((['ip', 'ip6'] as const).map((f) => [f, k.listSync(f, T, ADOPTION_LIST_OPTIONS)!]));
  const derived = new Set(DERIVED_ON_ADOPTION);
  const hairpinOf = (k: FakeKernel, f: 'ip' | 'ip6'): string[] =>
    k
      .listSync(f, T)!
      .elements.filter((e) => e.set === SET.hairpinEndpoints)
      .map((e) => e.key[0]!)
      .sort();
  const elementsOf = (k: FakeKernel): string[][] =>
    (['ip', 'ip6'] as const).map((f) =>
      k
        .listSync(f, T)!
        .elements.map((e) => JSON.stringify(e))
        .sort(),
    );
  /** Adopts `desired` over `k` as listed by `list`, commits the plan, and returns it. */
  const adopt = (k: FakeKernel, list: (k: FakeKernel) => Map<Family, TableListing>): Operation[] => {
    const plan = planAdoption(desired, list(k), 0);
    if ('refused' in plan) throw new Error(plan.refused);
    k.commitSync(plan.ops);
    return plan.ops;
  };

  it('is listed without its elements, and named as such: the hairpin set, not the shared endpoint maps (read encoded)', () => {
    const l = unread(fresh()).get('ip')!;
    const present = l.sets.map((x) => x.name).filter((name) => derived.has(name));
    expect(present).toEqual(['hairpin-endpoints']);
    const shards = l.sets.map((x) => x.name).filter((name) => name.startsWith(SHARD_MAP_PREFIX) && name !== 'service-endpoints-check');
    expect(shards.length).toBeGreaterThan(0);
    expect(shards.every((name) => READ_ENCODED_ON_ADOPTION.includes(name))).toBe(true);
    expect([...l.elementsNotRead!].sort()).toEqual(present.sort());
    expect(l.elements.filter((e) => derived.has(e.set))).toEqual([]);
  });

  it('holds, in a fresh replace, exactly the addresses the endpoint maps hold (what the adoption relies on)', () => {
    const k = fresh();
    for (const f of ['ip', 'ip6'] as const) {
      const l = k.listSync(f, T)!;
      const maps = new Set(l.sets.filter(isEndpointMap).map((c) => c.name));
      expect(maps.size).toBeGreaterThan(0);
      const addresses = new Set(l.elements.filter((e) => maps.has(e.set)).map((e) => (e.value as string[])[0]!));
      expect(hairpinOf(k, f)).toEqual([...addresses].sort());
      expect(addresses.size).toBeGreaterThan(0);
    }
  });

  it('over intact tables: nothing to commit, read encoded or decoded', () => {
    for (const list of [unread, asReconciler]) {
      const plan = planAdoption(desired, list(fresh()), 0);
      if ('refused' in plan) throw new Error(plan.refused);
      expect(plan.ops).toEqual([]);
    }
  });

  it('follows endpoints that came and went while no agent ran: only their hairpin elements added and deleted', () => {
    const before = [
      ...ports.slice(1),
      sp({ serviceName: 'gone', clusterIP: '10.96.9.9', endpoints: [ep('10.244.66.6'), ep('10.244.66.7')] }),
      sp({ serviceName: 'gone', family: 'IPv6', clusterIP: 'fd00:96::99', endpoints: [ep('fd00:244::66:6')] }),
    ];
    const old = renderRuleset(before, cfg);
    for (const list of [unread, asReconciler]) {
      const k = freshKernel(old);
      expect(hairpinOf(k, 'ip')).toContain('10.244.66.6');
      expect(hairpinOf(k, 'ip6')).toContain('fd00:244::66:6');
      const ops = adopt(k, list);
      // The gone ports' chains are flushed, and deleted by a later sync (stale): the elements are as a fresh replace leaves them.
      expect(elementsOf(k)).toEqual(elementsOf(fresh()));
      const hairpin = ops.filter((o) => o.object.kind === 'element' && o.object.set === SET.hairpinEndpoints);
      expect(
        hairpin
          .filter((o) => o.verb === 'delete')
          .map((o) => `${o.object.family} ${(o.object as { key: string[] }).key[0]}`)
          .sort(),
      ).toEqual(['ip 10.244.66.6', 'ip 10.244.66.7', 'ip6 fd00:244::66:6'].filter((x) => !desiredHairpin(x)));
      expect(ops.some((o) => o.verb === 'flush' && o.object.kind === 'set')).toBe(false);
    }
    function desiredHairpin(x: string): boolean {
      const [f, ip] = x.split(' ');
      return desired.hairpin.get(f === 'ip' ? 'IPv4' : 'IPv6')?.has(ip!) ?? false;
    }
  });

  /** The state a first start leaves when its stages stop before the last: no base chain, and part of the hairpin set. */
  const cutShort = (): FakeKernel => {
    const k = new FakeKernel();
    const ops = planFullSync(desired, 'replace').ops;
    const base = new Set(ops.flatMap(({ object: o }) => (o.kind === 'chain' && o.base ? [`${o.family} ${o.name}`] : [])));
    let hairpin = 0;
    k.commitSync(
      ops.filter(({ object: o }) => {
        if (o.kind === 'chain' || o.kind === 'rule') return !base.has(`${o.family} ${o.kind === 'chain' ? o.name : o.chain}`);
        // Every other hairpin element: a stage that had not landed.
        if (o.kind === 'element' && o.set === SET.hairpinEndpoints) return hairpin++ % 2 === 0;
        return true;
      }),
    );
    expect(hairpin).toBeGreaterThan(2);
    return k;
  };

  it('is rewritten whole over tables a first start left without their base chains, read encoded or decoded', () => {
    for (const list of [unread, asReconciler]) {
      const k = cutShort();
      const ops = adopt(k, list);
      expect(listingsWithoutHandles(k)).toEqual(listingsWithoutHandles(fresh()));
      const flushed = ops
        .filter((o) => o.verb === 'flush' && o.object.kind === 'set')
        .map((o) => `${o.object.family} ${(o.object as { name: string }).name}`);
      expect(flushed.sort()).toEqual(['ip hairpin-endpoints', 'ip6 hairpin-endpoints']);
    }
  });

  it('changed by hand while no agent ran: what the maps say is kept, until a reassert writes it whole again', () => {
    const k = fresh();
    const [gone] = k.listSync('ip', T)!.elements.filter((e) => e.set === SET.hairpinEndpoints);
    const stray: Operation['object'] = {
      kind: 'element',
      family: 'ip',
      table: T,
      set: SET.hairpinEndpoints,
      key: ['10.244.99.9', '10.244.99.9'],
    };
    k.commitSync([
      { verb: 'delete', object: gone! },
      { verb: 'add', object: stray },
    ]);
    expect(adopt(k, asReconciler)).toEqual([]);
    expect(hairpinOf(k, 'ip')).not.toContain(gone!.key[0]);
    expect(hairpinOf(k, 'ip')).toContain('10.244.99.9');
    k.commitSync(planFullSync(desired, 'reassert').ops);
    expect(listingsWithoutHandles(k)).toEqual(listingsWithoutHandles(fresh()));
  });

  it('refuses to commit (the reconciler then replaces) when an address the maps hold and nothing wants is missing from it', () => {
    const k = freshKernel(
      renderRuleset([...ports, sp({ serviceName: 'gone', clusterIP: '10.96.9.9', endpoints: [ep('10.244.66.6')] })], cfg),
    );
    k.commitSync([
      {
        verb: 'delete',
        object: { kind: 'element', family: 'ip', table: T, set: SET.hairpinEndpoints, key: ['10.244.66.6', '10.244.66.6'] },
      },
    ]);
    const plan = planAdoption(desired, asReconciler(k), 0);
    if ('refused' in plan) throw new Error(plan.refused);
    expect(() => k.commitSync(plan.ops)).toThrow(/ENOENT/);
  });
});

describe('the adoption plan the reconciler commits', () => {
  const cfg = config({ families: { IPv4: V4, IPv6: V6 }, endpointShape: 'map' });
  const desired = renderRuleset(ports, cfg);
  /** Listed as the reconciler lists for an adoption: the shared endpoint maps' elements held encoded, the hairpin set's not read. */
  const unread = (k: FakeKernel): Map<Family, TableListing> =>
    new Map((['ip', 'ip6'] as const).map((f) => [f, k.listSync(f, T, ADOPTION_LIST_OPTIONS)!]));
  /** A kernel holding the desired ruleset, then changed behind the agent's back: elements of read sets gone, changed and added. */
  const damaged = (): FakeKernel => {
    const k = freshKernel(desired);
    const read = k.listSync('ip', T)!.elements.filter((e) => !DERIVED_ON_ADOPTION.includes(e.set));
    expect(read.length).toBeGreaterThan(3);
    const changed = read[0]!;
    // Every read element of the family gone (its sets' elements come back interleaved, service by service), one changed.
    // In the other family, read encoded (READ_ENCODED_ON_ADOPTION), one endpoint slot now elsewhere and a stray one.
    const [slot] = k.listSync('ip6', T)!.elements.filter((e) => READ_ENCODED_ON_ADOPTION.includes(e.set));
    const [address] = slot!.value as string[];
    k.commitSync([
      ...read.map((object) => ({ verb: 'delete' as const, object })),
      { verb: 'add', object: { ...changed, comment: 'changed while no agent ran' } },
      { verb: 'add', object: { kind: 'element', family: 'ip', table: T, set: 'cluster-ips', key: ['10.96.99.99'] } },
      { verb: 'delete', object: slot! },
      { verb: 'add', object: { ...slot!, value: [address!, '1'] } },
      { verb: 'add', object: { ...slot!, key: ['65535'] } },
    ]);
    return k;
  };

  it('makes, every time it is asked, the operations of the listed plan, as many as it announced, and lists none itself', () => {
    for (const k of [freshKernel(desired), damaged()]) {
      const generated = planGeneratedAdoption(desired, unread(k), 0);
      const listed = planAdoption(desired, unread(k), 0);
      if ('refused' in generated || 'refused' in listed) throw new Error('refused');
      expect(generated.ops).toEqual([]);
      const made = Array.from(generatedOperations(generated.generated!));
      expect(made).toEqual(listed.ops);
      expect(Array.from(generatedOperations(generated.generated!))).toEqual(made);
      expect(planLength(generated)).toBe(made.length);
      expect(generated.stats).toEqual(listed.stats);
      expect(generated.stats.elementsAdded).toBe(made.filter((o) => o.verb === 'add' && o.object.kind === 'element').length);
      expect(generated.stats.elementsDeleted).toBe(made.filter((o) => o.verb === 'delete' && o.object.kind === 'element').length);
    }
  });

  /** The listings of `k` as if one shared endpoint map were missing: adoption adds it and refills it. */
  const withoutAShardMap = (k: FakeKernel): Map<Family, TableListing> => {
    const listings = unread(k);
    const l = listings.get('ip')!;
    const gone = l.sets.find((c) => READ_ENCODED_ON_ADOPTION.includes(c.name))!.name;
    listings.set('ip', { ...l, sets: l.sets.filter((c) => c.name !== gone), elements: l.elements.filter((e) => e.set !== gone) });
    return listings;
  };

  /** The listings of `k` as if it had no base chain (a first start cut short): adoption rewrites the hairpin set. */
  const withoutBaseChains = (k: FakeKernel): Map<Family, TableListing> => {
    const listings = unread(k);
    for (const [f, l] of listings) listings.set(f, { ...l, chains: l.chains.filter((c) => c.base === undefined) });
    return listings;
  };

  it('makes the refilled sets’ slots and hairpin elements as runs, which encode to the batch its operations encode to', () => {
    const cases = [
      unread(freshKernel(desired)),
      unread(damaged()),
      withoutAShardMap(freshKernel(desired)),
      withoutBaseChains(freshKernel(desired)),
    ];
    for (const [i, listings] of cases.entries()) {
      const plan = planGeneratedAdoption(desired, listings, 0);
      if ('refused' in plan) throw new Error(plan.refused);
      const items = Array.from(plan.generated!.items!());
      const made = Array.from(generatedOperations(plan.generated!));
      expect(Array.from(runOperations(items))).toEqual(made);
      const runSets = new Set(items.filter(isElementRun).map((r) => r.set));
      // The hairpin set's elements are a run only where it is rewritten whole; else each wanted one the maps lack is added.
      expect(runSets.has(SET.hairpinEndpoints)).toBe(i === 3);
      // Slots are runs only where their map is refilled (new): a listed one's are compared.
      expect([...runSets].some((set) => set.startsWith(SHARD_MAP_PREFIX))).toBe(i === 2);
      const sets = [
        ...[...listings.values()].flatMap((l) => l.sets),
        ...made.flatMap(({ object: o }) => (o.kind === 'set' || o.kind === 'map' ? [o] : [])),
      ];
      const lookup = (family: string, table: string, name: string) =>
        sets.findLast((c) => c.family === family && c.table === table && c.name === name);
      const fromRuns = encodeOperationStream(items, made.length, lookup);
      const fromOps = encodeOperationStream(made, made.length, lookup);
      expect(Buffer.from(fromRuns.bytes).equals(Buffer.from(fromOps.bytes))).toBe(true);
    }
  });

  it("gives each set's elements together, so that the streamed encoder writes one record per set", () => {
    const plan = planGeneratedAdoption(desired, unread(damaged()), 0);
    if ('refused' in plan) throw new Error(plan.refused);
    const runs: string[] = [];
    for (const op of generatedOperations(plan.generated!)) {
      if (op.object.kind !== 'element') continue;
      const run = `${op.verb} ${op.object.family} ${op.object.set}`;
      if (runs.at(-1) !== run) runs.push(run);
    }
    expect(runs.length).toBeGreaterThan(2);
    expect(new Set(runs).size).toBe(runs.length);
  });

  it('over intact tables rewrites only the hairpin set; over damaged ones only the changed slots of a map read encoded', () => {
    const ops = (k: FakeKernel) => {
      const plan = planGeneratedAdoption(desired, unread(k), 0);
      if ('refused' in plan) throw new Error(plan.refused);
      return Array.from(generatedOperations(plan.generated!));
    };
    const slotOps = (k: FakeKernel) => ops(k).filter((o) => o.object.kind === 'element' && READ_ENCODED_ON_ADOPTION.includes(o.object.set));
    // Rules compared a chain at a time (rulesOf) and slots compared encoded: nothing of theirs is written again.
    const rewritten = (o: Operation) =>
      (o.object.kind === 'element' ? o.object.set : (o.object as { name?: string }).name) === SET.hairpinEndpoints;
    expect(ops(freshKernel(desired)).filter((o) => !rewritten(o))).toEqual([]);
    const ip6 = slotOps(damaged()).filter((o) => o.object.family === 'ip6');
    // The slot moved elsewhere (deleted, then added as wanted) and the stray one (deleted).
    expect(ip6.map((o) => o.verb).sort()).toEqual(['add', 'delete', 'delete']);
  });

  it('repairs the damaged kernel, as the listed plan does', () => {
    const k = damaged();
    const plan = planGeneratedAdoption(desired, unread(k), 0);
    if ('refused' in plan) throw new Error(plan.refused);
    k.commitSync(Array.from(generatedOperations(plan.generated!)));
    expect(listingsWithoutHandles(k)).toEqual(listingsWithoutHandles(freshKernel(desired)));
  });
});

describe('adoption keeps what only the kernel writes', () => {
  it('leaves the elements of dynamic (affinity) sets alone', () => {
    const cfg = config({ families: { IPv4: V4 } });
    const desired = renderRuleset([sp({ sessionAffinityTimeout: 60, endpoints: [ep('10.244.1.2'), ep('10.244.1.3')] })], cfg);
    const k = new FakeKernel();
    k.commitSync(planFullSync(desired, 'replace').ops);
    const affinity = k.listSync('ip', T)!.sets.find((s) => s.name.startsWith('affinity-'))!;
    k.commitSync([
      { verb: 'add', object: { kind: 'element', family: 'ip', table: T, set: affinity.name, key: ['192.0.2.10'], timeout: 60 } },
    ]);
    expect(planAdoption(desired, listings(k), 0)).toMatchObject({ ops: [] });
  });
});

describe('tableOwnership', () => {
  const table = (comment?: string) => ({
    kind: 'table' as const,
    family: 'ip' as const,
    name: T,
    ...(comment !== undefined ? { comment } : {}),
  });
  it.each([
    ['no table', undefined, { kind: 'absent' }],
    ['our current mark', table(ownershipMark()), { kind: 'ours', version: TABLE_FORMAT_VERSION }],
    ['an older format', table(ownershipMark(7)), { kind: 'ours', version: 7 }],
    ['the mark before versions', table('rules for kube-nft-proxy'), { kind: 'ours', version: 0 }],
    ['no comment', table(), { kind: 'foreign' }],
    ['another comment', table('firewall'), { kind: 'foreign', comment: 'firewall' }],
    ['our mark with more around it', table(`${ownershipMark()} (copied)`), { kind: 'foreign', comment: `${ownershipMark()} (copied)` }],
  ])('%s', (_name, t, want) => {
    expect(tableOwnership(t)).toEqual(want);
  });
});

/** The oracle: JSON with object keys sorted and undefined members dropped (equal content, equal text). */
function canonical(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  const entries = Object.entries(v as Record<string, unknown>)
    .filter(([, x]) => x !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(',')}}`;
}

describe('sameContent', () => {
  // JSON-like values as rules hold them, with undefined members and keys in any order.
  const value = fc.letrec((tie) => ({
    leaf: fc.oneof(fc.constantFrom('a', 'b', 0, 1, -1, true, false, null), fc.integer({ min: 0, max: 3 })),
    node: fc.oneof({ depthSize: 'small' }, tie('leaf'), tie('array'), tie('object')),
    array: fc.array(tie('node'), { maxLength: 3 }),
    object: fc.dictionary(fc.constantFrom('k', 'op', 'data', 'len', 'x'), fc.option(tie('node'), { nil: undefined }), { maxKeys: 4 }),
  })).node;
  const shuffled = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(shuffled);
    if (v === null || typeof v !== 'object') return v;
    return Object.fromEntries(
      Object.entries(v)
        .reverse()
        .map(([k, x]) => [k, shuffled(x)]),
    );
  };

  it('says what comparing canonical() texts says', () => {
    fc.assert(
      fc.property(value, value, (a, b) => {
        expect(sameContent(a, b)).toBe(canonical(a) === canonical(b));
      }),
    );
  });

  it('ignores key order and undefined members', () => {
    fc.assert(
      fc.property(value, (a) => {
        expect(sameContent(a, shuffled(a))).toBe(true);
      }),
    );
    expect(sameContent({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(sameContent({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(sameContent([1, 2], [2, 1])).toBe(false);
    expect(sameContent({ 0: 'x' }, ['x'])).toBe(false);
  });
});

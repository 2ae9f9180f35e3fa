// A full sync's operations made on demand (planGeneratedFullSync, which the
// reconciler's syncs commit) are the listed plan's, every time they are made:
// the transaction checks one making, the encoder reads another and a
// refusal's blame a third, all by index. Each set's elements come together
// (a streamed encoder cannot group them, and the kernel pays per message),
// the hairpin ones last, and the streamed encoding of them is the batch the
// listed plan encodes to.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeOperations, encodeOperationStream } from '../../src/nft/netlink/encode.ts';
import type { NftMap, NftSet, Operation } from '../../src/nft/objects.ts';
import { isElementRun, runOperations } from '../../src/nft/element-run.ts';
import { ENDPOINT_SHAPES } from '../../src/reconciler/config.ts';
import { emptyStats, generatedOperations, type SyncStats } from '../../src/reconciler/diff.ts';
import { planFullSync, planGeneratedFullSync, type FullSyncMode } from '../../src/reconciler/full-sync.ts';
import { PREFIX, SET } from '../../src/reconciler/names.ts';
import { SHARD_MAP_PREFIX } from '../../src/reconciler/endpoint-slots.ts';
import { renderRuleset } from '../../src/reconciler/ruleset.ts';
import { churn, churnArbFor, configArbFor, servicePortsArb } from './churn.ts';
import { config, ep, sp, V4, V6 } from './fixtures.ts';

const MODES: readonly FullSyncMode[] = ['replace', 'reassert'];

/** The sets and maps the operations add, for the encoder. */
function containersOf(ops: Iterable<Operation>) {
  const byName = new Map<string, NftSet | NftMap>();
  for (const { object: o } of ops) if (o.kind === 'set' || o.kind === 'map') byName.set(`${o.family} ${o.table} ${o.name}`, o);
  return (family: string, table: string, name: string) => byName.get(`${family} ${table} ${name}`);
}

/** The shared endpoint maps and a port's own ones: their elements are endpoint slots. */
const isEndpointMap = (set: string) =>
  set.startsWith(SHARD_MAP_PREFIX) || set.startsWith(PREFIX.endpoints) || set.startsWith(PREFIX.localEndpoints);

/**
 * Whether each endpoint map's slots are one run (a map's slots come from
 * every port), each of the other elements follows the rules of the chain its
 * verdict names, and no element of another set follows a hairpin one.
 */
function groupedBySet(ops: readonly Operation[]): boolean {
  const seen = new Set<string>();
  let current = '';
  let hairpinSeen = false;
  const chainsWithRules = new Set<string>();
  for (const { object: o } of ops) {
    if (o.kind === 'rule') chainsWithRules.add(`${o.family} ${o.table} ${o.chain}`);
    if (o.kind !== 'element') continue;
    const verdict = typeof o.value === 'object' && !Array.isArray(o.value) && 'chain' in o.value ? o.value.chain : undefined;
    if (verdict !== undefined && !chainsWithRules.has(`${o.family} ${o.table} ${verdict}`)) return false;
    if (hairpinSeen && o.set !== SET.hairpinEndpoints) return false;
    if (o.set === SET.hairpinEndpoints) hairpinSeen = true;
    if (!isEndpointMap(o.set)) continue;
    const set = `${o.family} ${o.table} ${o.set}`;
    if (set === current) continue;
    if (seen.has(set)) return false;
    seen.add(set);
    current = set;
  }
  return true;
}

/** What the operations add, counted from them (the plans count it from the ruleset). */
function addedBy(ops: readonly Operation[]): SyncStats {
  const stats = emptyStats();
  for (const { verb, object: o } of ops) {
    if (verb !== 'add') continue;
    if (o.kind === 'set' || o.kind === 'map') stats.setsAdded++;
    else if (o.kind === 'chain') stats.chainsAdded++;
    else if (o.kind === 'rule') stats.rulesAdded++;
    else if (o.kind === 'element') stats.elementsAdded++;
  }
  return stats;
}

describe.each(ENDPOINT_SHAPES)('a generated full sync (endpoint shape %s)', (shape) => {
  it('makes the listed plan, the same each time, each endpoint map’s slots together and the hairpin ones last', () => {
    fc.assert(
      fc.property(churnArbFor([shape]), fc.constantFrom(...MODES), ({ initial, steps }, mode) => {
        const { state, rendered } = churn(initial, steps);
        const listed = planFullSync(rendered, mode, state);
        const generated = planGeneratedFullSync(rendered, mode, state);
        expect(generated.ops).toEqual([]);
        const made = Array.from(generatedOperations(generated.generated!));
        expect(made).toEqual(listed.ops);
        expect(Array.from(generatedOperations(generated.generated!))).toEqual(made);
        expect(generated.generated!.length).toBe(made.length);
        expect(generated.stats).toEqual(listed.stats);
        expect(generated.stats).toEqual(addedBy(made));
        expect(generated.next).toEqual(listed.next);
        expect(groupedBySet(made)).toBe(true);
      }),
      { numRuns: 60 },
    );
  });

  it('hooks nothing before hookedFrom: the base chains and their rules come last, every one of them', () => {
    fc.assert(
      fc.property(churnArbFor([shape]), fc.constantFrom(...MODES), ({ initial, steps }, mode) => {
        const { state, rendered } = churn(initial, steps);
        const { generated } = planGeneratedFullSync(rendered, mode, state);
        const made = Array.from(generatedOperations(generated!));
        const baseChains = new Set<string>();
        for (const s of rendered.skeletons.values())
          for (const c of s.chains) if (c.chain.base) baseChains.add(`${c.chain.family} ${c.chain.table} ${c.chain.name}`);
        expect(baseChains.size).toBeGreaterThan(0);
        const hooks = (op: Operation): boolean => {
          const o = op.object;
          if (o.kind === 'chain') return o.base !== undefined;
          return o.kind === 'rule' && baseChains.has(`${o.family} ${o.table} ${o.chain}`);
        };
        const from = generated!.hookedFrom!;
        expect(made.slice(0, from).some(hooks)).toBe(false);
        expect(made.slice(from).every(hooks)).toBe(true);
        expect(made.slice(from).filter((op) => op.object.kind === 'chain' && op.verb === 'add')).toHaveLength(baseChains.size);
      }),
      { numRuns: 40 },
    );
  });

  it('encodes, as it is made, to the very batch its listed operations encode to', () => {
    fc.assert(
      fc.property(servicePortsArb, (ports) => {
        const ruleset = renderRuleset(ports, config({ endpointShape: shape, families: { IPv4: V4, IPv6: V6 } }));
        const { generated } = planGeneratedFullSync(ruleset, 'replace');
        const listed = planFullSync(ruleset, 'replace').ops;
        const lookup = containersOf(listed);
        const streamed = encodeOperationStream(generatedOperations(generated!), generated!.length, lookup);
        const whole = encodeOperations(listed, lookup);
        expect(Buffer.from(streamed.bytes).equals(Buffer.from(whole.bytes))).toBe(true);
        expect(streamed.records).toBe(whole.records);
        expect(streamed.containerChanges).toEqual(whole.containerChanges);
        // Its runs of elements written without making their operations: the same batch.
        const fromRuns = encodeOperationStream(generated!.items!(), generated!.length, lookup);
        expect(Buffer.from(fromRuns.bytes).equals(Buffer.from(whole.bytes))).toBe(true);
        expect(fromRuns.records).toBe(whole.records);
      }),
      { numRuns: 40 },
    );
  });
});

describe('runs of elements in a generated full sync', () => {
  // 2,400 endpoints over 240 ports: both runs' sets cross a record's 2,000 elements.
  const ports = Array.from({ length: 240 }, (_, i) =>
    sp({
      serviceName: `svc-${i}`,
      clusterIP: `10.96.${i >> 8}.${i & 255}`,
      endpoints: Array.from({ length: 10 }, (_, j) => ep(`10.244.${i >> 4}.${(i & 15) * 16 + j}`)),
    }),
  );
  const ruleset = renderRuleset(ports, config({ endpointShape: 'map', endpointMapBlocks: 1 }));

  it('stand for the endpoint slots and the hairpin elements, which the encoder writes in the records it writes them in', () => {
    const { generated } = planGeneratedFullSync(ruleset, 'replace');
    const items = Array.from(generated!.items!());
    const runs = items.filter(isElementRun);
    expect(runs.filter((r) => r.set === SET.hairpinEndpoints).map((r) => r.length)).toEqual([2400]);
    expect(runs.filter((r) => r.set !== SET.hairpinEndpoints).reduce((n, r) => n + r.length, 0)).toBe(2400);
    const made = Array.from(generatedOperations(generated!));
    expect(Array.from(runOperations(items))).toEqual(made);
    const lookup = containersOf(made);
    const fromRuns = encodeOperationStream(items, generated!.length, lookup);
    const fromOps = encodeOperationStream(made, made.length, lookup);
    expect(Buffer.from(fromRuns.bytes).equals(Buffer.from(fromOps.bytes))).toBe(true);
    expect(fromRuns.records).toBe(fromOps.records);
  });
});

describe('endpoint slots of a dual-stack generated full sync', () => {
  it('are one run per family’s map, however the two families’ ports alternate in maps of one name', () => {
    // 1,000 ports a family over 512 shared maps a family: ports of both come and go in most maps' names.
    const ports = Array.from({ length: 2000 }, (_, i) =>
      i % 2 === 0
        ? sp({ serviceName: `v4-${i}`, clusterIP: `10.96.${i >> 8}.${i & 255}`, endpoints: [ep(`10.244.${i >> 8}.${i & 255}`)] })
        : sp({
            serviceName: `v6-${i}`,
            family: 'IPv6',
            clusterIP: `fd00:96::${i.toString(16)}`,
            endpoints: [ep(`fd00:244::${i.toString(16)}`)],
          }),
    );
    const ruleset = renderRuleset(ports, config({ endpointShape: 'map' }));
    const made = Array.from(generatedOperations(planGeneratedFullSync(ruleset, 'replace').generated!));
    const families = new Map<string, Set<string>>();
    for (const { object: o } of made)
      if (o.kind === 'element' && o.set.startsWith(SHARD_MAP_PREFIX)) families.set(o.set, (families.get(o.set) ?? new Set()).add(o.family));
    expect([...families.values()].filter((f) => f.size === 2).length).toBeGreaterThan(256);
    expect(groupedBySet(made)).toBe(true);
  });
});

describe('hairpin elements of a generated full sync', () => {
  it('are made from the counts, one per address however many ports want it, after every other element', () => {
    const shared = ep('10.244.1.10');
    const ports = [
      sp({ serviceName: 'a', clusterIP: '10.96.0.10', endpoints: [shared, ep('10.244.1.11')] }),
      sp({ serviceName: 'b', clusterIP: '10.96.0.11', endpoints: [shared] }),
    ];
    const ruleset = renderRuleset(ports, config({ endpointShape: 'map' }));
    const made = Array.from(generatedOperations(planGeneratedFullSync(ruleset, 'replace').generated!));
    const hairpin = made.flatMap(({ object: o }) => (o.kind === 'element' && o.set === SET.hairpinEndpoints ? [o.key.join(' . ')] : []));
    expect(hairpin.sort()).toEqual(['10.244.1.10 . 10.244.1.10', '10.244.1.11 . 10.244.1.11']);
    const lastOther = made.findLastIndex(({ object: o }) => o.kind === 'element' && o.set !== SET.hairpinEndpoints);
    const firstHairpin = made.findIndex(({ object: o }) => o.kind === 'element' && o.set === SET.hairpinEndpoints);
    expect(firstHairpin).toBeGreaterThan(lastOther);
  });
});

describe('a full render that keeps no rendering (a full sync’s)', () => {
  it('claims, counts and plans what a render that keeps them does, with contested elements and colliding slot ranges', () => {
    const sorted = <T>(xs: Iterable<T>) => [...xs].map((x) => JSON.stringify(x)).sort();
    fc.assert(
      fc.property(configArbFor(ENDPOINT_SHAPES, [1, 2, 3]), servicePortsArb, fc.constantFrom(...MODES), (cfg, ports, mode) => {
        const kept = renderRuleset(ports, cfg);
        const unkept = renderRuleset(ports, cfg, undefined, undefined, { keepRenderings: false });
        expect(kept.unkept).toBeUndefined();
        expect(unkept.unkept).toBeDefined();
        expect(sorted(unkept.claims)).toEqual(sorted(kept.claims));
        expect(sorted(unkept.contested)).toEqual(sorted(kept.contested));
        expect(sorted([...unkept.hairpin].map(([f, counts]) => [f, sorted(counts)]))).toEqual(
          sorted([...kept.hairpin].map(([f, counts]) => [f, sorted(counts)])),
        );
        expect(sorted(unkept.problems)).toEqual(sorted(kept.problems));
        expect(unkept.endpointChains).toBe(kept.endpointChains);
        expect([...unkept.services.keys()]).toEqual([...kept.services.keys()]);
        const [fromUnkept, fromKept] = [planGeneratedFullSync(unkept, mode), planFullSync(kept, mode)];
        const made = Array.from(generatedOperations(fromUnkept.generated!));
        // The hairpin elements in any order: their counts are kept in the order ports came and went.
        const inOrder = (ops: readonly Operation[]) => {
          const hairpin = (o: Operation) => o.object.kind === 'element' && o.object.set === SET.hairpinEndpoints;
          return [...ops.filter((o) => !hairpin(o)), ...sorted(ops.filter(hairpin))];
        };
        expect(inOrder(made)).toEqual(inOrder(fromKept.ops));
        expect(fromUnkept.generated!.length).toBe(made.length);
        expect(fromUnkept.stats).toEqual(fromKept.stats);
      }),
      { numRuns: 80 },
    );
  });
});

// Adoption against the real kernel: a second agent's first sync over tables a
// first one left reads them back, and commits nothing when they are as wanted,
// or only the repairs when they were damaged (a rule and an element deleted, a
// chain added with `nft`), leaving session-affinity entries and untouched
// rules (their handles) in place. The kernel's own listing (`nft -j`, an
// oracle only) is what is compared with a fresh replace.

import { afterEach, describe, expect, it } from 'vitest';
import { NetlinkDataplane } from '../../src/nft/netlink/netlink-dataplane.ts';
import type { ServicePort } from '../../src/model/service-port.ts';
import { ENDPOINT_SHAPES } from '../../src/reconciler/config.ts';
import { Reconciler } from '../../src/reconciler/reconciler.ts';
import { createNetns, type NetNs } from '../helpers/netns.ts';
import { ourTables as tables } from '../helpers/our-tables.ts';
import { READ_ENCODED_ON_ADOPTION } from '../../src/reconciler/adoption-listing.ts';
import type { OperationCount } from '../../src/nft/transaction.ts';
import { config, ep, modelReads, sel, sp, V4, V6 } from './fixtures.ts';
import { GOLDENS } from './goldens.ts';

const ports: ServicePort[] = GOLDENS.filter((g) => g.config.endpointShape === 'map').flatMap((g) => g.ports);
const TABLE = 'kube-nft-proxy';

const namespaces: NetNs[] = [];
afterEach(() => {
  for (const ns of namespaces.splice(0)) ns.destroy();
});

function elementsSorted<L extends { elements: readonly unknown[] }>(listing: L): L {
  return { ...listing, elements: listing.elements.map((e) => JSON.stringify(e)).sort() };
}

function ruleHandles(ns: NetNs, family: string, chain: string): number[] {
  return ns
    .nftJson()
    .nftables.filter((o) => o.rule && o.rule.family === family && o.rule.chain === chain)
    .map((o) => o.rule.handle as number);
}

describe.each(ENDPOINT_SHAPES)('adopting our tables at start-up (endpoint shape %s)', (shape) => {
  const cfg = config({ families: { IPv4: V4, IPv6: V6 }, endpointShape: shape });
  let now = 1_000_000;
  const reconciler = (ns: NetNs, adopt: boolean, wanted: readonly ServicePort[] = ports) =>
    new Reconciler({
      dataplane: new NetlinkDataplane({ netns: ns.path }),
      config: cfg,
      servicePorts: modelReads(() => wanted),
      now: () => now,
      adopt,
    });

  it('reads the rules back on demand, a chain at a time, as the whole listing gives them', async () => {
    const ns = createNetns('knp-adopt');
    namespaces.push(ns);
    await reconciler(ns, false).sync({ kind: 'full', mode: 'replace' });
    const dp = new NetlinkDataplane({ netns: ns.path });
    for (const family of ['ip', 'ip6'] as const) {
      const whole = (await dp.list(family, TABLE))!;
      const onDemand = (await dp.list(family, TABLE, { rulesOnDemand: true }))!;
      expect(whole.rules.length).toBeGreaterThan(5);
      expect(onDemand.rules).toEqual([]);
      for (const c of whole.chains) expect(onDemand.rulesOf!(c.name), c.name).toEqual(whole.rules.filter((r) => r.chain === c.name));
      expect(onDemand.rulesOf!('no-such-chain')).toEqual([]);
      // Every chain is recognised from its bytes; a rule changed, dropped or moved is not.
      for (const c of whole.chains) {
        const rules = whole.rules.filter((r) => r.chain === c.name);
        expect(onDemand.holdsEncoded!(c.name, rules), c.name).toBe(true);
        if (rules.length === 0) continue;
        expect(onDemand.holdsEncoded!(c.name, rules.slice(1)), c.name).toBe(false);
        expect(onDemand.holdsEncoded!(c.name, [...rules.slice(1), rules[0]!]), c.name).toBe(rules.length === 1);
        expect(onDemand.holdsEncoded!(c.name, [{ ...rules[0]!, comment: 'other' }, ...rules.slice(1)]), c.name).toBe(false);
      }
      expect(onDemand.holdsEncoded!('no-such-chain', [])).toBe(true);
      const { rules: _a, rulesOf: _b, holdsEncoded: _d, ...rest } = onDemand;
      const { rules: _c, ...wholeRest } = whole;
      // A hash set's elements come in the order of its table, which two dumps need not share.
      expect(elementsSorted(rest)).toEqual(elementsSorted(wholeRest));
    }
  });

  it('commits nothing over intact tables, repairs damaged ones, and keeps affinity entries and untouched rules', async () => {
    const ns = createNetns('knp-adopt');
    namespaces.push(ns);
    const first = await reconciler(ns, false).sync({ kind: 'full', mode: 'replace' });
    expect(first.mode).toBe('replace');
    const fresh = tables(ns);

    // Intact: nothing to commit (in the map shape the hairpin set, not read, follows from the endpoint maps).
    const intact = await reconciler(ns, true).sync({ kind: 'full', mode: 'replace' });
    expect(intact).toMatchObject({ kind: 'full', mode: 'adopt', ops: 0 });
    expect(tables(ns)).toEqual(fresh);

    // Damage, as an operator with nft might: one rule and one element deleted, a chain added.
    const listed = ns.nftJson().nftables;
    const rule = listed.find((o) => o.rule?.family === 'ip' && o.rule.chain === 'services')!.rule;
    ns.exec('nft', ['delete', 'rule', 'ip', TABLE, 'services', 'handle', String(rule.handle)]);
    const ips = listed.find((o) => o.map?.family === 'ip' && o.map.name === 'service-ips')!.map;
    const elem = ips.elem[0][0] as string | { concat: string[] };
    const key = typeof elem === 'string' ? elem : elem.concat.join(' . ');
    ns.exec('nft', ['delete', 'element', 'ip', TABLE, 'service-ips', `{ ${key} }`]);
    ns.exec('nft', ['add', 'chain', 'ip', TABLE, 'intruder']);
    if (shape === 'map') {
      // A shared endpoint map (read back encoded): a slot deleted, one pointed elsewhere, one added.
      const shard = listed.find(
        (o) => o.map?.family === 'ip' && READ_ENCODED_ON_ADOPTION.includes(o.map.name) && o.map.elem?.length >= 2,
      )!.map;
      const elems = shard.elem as [number, { concat: [string, number] }][];
      const [gone] = elems[0]!;
      const [moved, to] = elems[1]!;
      ns.exec('nft', ['delete', 'element', 'ip', TABLE, shard.name, `{ ${gone} }`]);
      ns.exec('nft', ['delete', 'element', 'ip', TABLE, shard.name, `{ ${moved} }`]);
      ns.exec('nft', ['add', 'element', 'ip', TABLE, shard.name, `{ ${moved} : ${to.concat[0]} . ${to.concat[1] + 1} }`]);
      ns.exec('nft', ['add', 'element', 'ip', TABLE, shard.name, `{ 7 : ${to.concat[0]} . 80 }`]);
    }
    // A session-affinity entry, as the kernel's dynset would have written it.
    const affinity = listed.find((o) => o.set?.family === 'ip' && String(o.set.name).startsWith('affinity-'))!.set;
    ns.exec('nft', ['add', 'element', 'ip', TABLE, affinity.name, '{ 192.0.2.99 timeout 3h }']);
    const untouched = ruleHandles(ns, 'ip', 'nat-prerouting');
    expect(tables(ns)).not.toEqual(fresh);

    const r = reconciler(ns, true);
    const repaired = await r.sync({ kind: 'full', mode: 'replace' });
    expect(repaired.mode).toBe('adopt');
    expect(repaired.ops).toBeGreaterThan(0);
    expect(repaired.ops).toBeLessThan(50);
    expect(ruleHandles(ns, 'ip', 'nat-prerouting')).toEqual(untouched);
    expect(ns.exec('nft', ['list', 'set', 'ip', TABLE, affinity.name])).toContain('192.0.2.99');
    // The foreign chain is flushed now and deleted by the follow-up sync.
    expect(repaired.followUpMs).toBeGreaterThan(0);
    now += 5_000;
    await r.sync({ kind: 'incremental' });
    const after = tables(ns);
    expect(after.ip!.sets[affinity.name]!.elem!.join()).toContain('192.0.2.99');
    delete after.ip!.sets[affinity.name]!.elem;
    expect(after).toEqual(fresh);
  });

  it('adopts tables left for an older state: the endpoints that changed meanwhile as a fresh replace leaves them', async () => {
    // While no agent ran: every port with endpoints lost its first one and gained two, one port went, one came.
    const withEndpoints = ports.filter((p) => p.cluster.kind === 'endpoints');
    expect(withEndpoints.length).toBeGreaterThan(2);
    const changed = ports.slice(1).map((p, i) => {
      if (p.cluster.kind !== 'endpoints') return p;
      const v6 = p.family === 'IPv6';
      const more = [ep(v6 ? `fd00:244::7:${i}` : `10.244.77.${i}`, 9090), ep(v6 ? `fd00:244::8:${i}` : `10.244.88.${i}`)];
      const endpoints = [...p.cluster.endpoints.slice(1), ...more];
      return { ...p, cluster: sel(...endpoints), external: sel(...endpoints), allEndpoints: endpoints };
    });
    changed.push(sp({ serviceName: 'came', clusterIP: '10.96.0.99', endpoints: [ep('10.244.99.1'), ep('10.244.99.2')] }));

    const oracle = createNetns('knp-adopt');
    namespaces.push(oracle);
    await reconciler(oracle, false, changed).sync({ kind: 'full', mode: 'replace' });
    const ns = createNetns('knp-adopt');
    namespaces.push(ns);
    await reconciler(ns, false).sync({ kind: 'full', mode: 'replace' });
    expect(tables(ns)).not.toEqual(tables(oracle));
    const committed: OperationCount[] = [];
    const dataplane = new NetlinkDataplane({ netns: ns.path });
    const commit = dataplane.commit.bind(dataplane);
    dataplane.commit = async (tx) => {
      const landed = await commit(tx);
      committed.push(...tx.counts());
      return landed;
    };
    const r = new Reconciler({ dataplane, config: cfg, servicePorts: modelReads(() => changed), now: () => now, adopt: true });
    const adopted = await r.sync({ kind: 'full', mode: 'replace' });
    expect(adopted).toMatchObject({ kind: 'full', mode: 'adopt' });
    // No set flushed: the hairpin set (map shape), not read, follows the endpoint maps read back, element by element.
    expect(committed.length).toBeGreaterThan(0);
    expect(committed.filter((c) => c.verb === 'flush' && c.kind === 'set')).toEqual([]);
    now += 5_000;
    await r.sync({ kind: 'incremental' });
    expect(tables(ns)).toEqual(tables(oracle));
  });

  it('replaces instead when the tables are of another format', async () => {
    const ns = createNetns('knp-adopt');
    namespaces.push(ns);
    await reconciler(ns, false).sync({ kind: 'full', mode: 'replace' });
    const fresh = tables(ns);
    // Tables as an agent of format 0 left them: its mark, other contents.
    for (const f of ['ip', 'ip6']) {
      ns.exec('nft', ['delete', 'table', f, TABLE]);
      ns.exec('nft', ['-f', '-'], {
        input:
          `add table ${f} ${TABLE} { comment "rules for kube-nft-proxy" ; }\nadd chain ${f} ${TABLE} services\nadd ` +
          `chain ${f} ${TABLE} leftover\n`,
      });
    }
    const r = await reconciler(ns, true).sync({ kind: 'full', mode: 'replace' });
    expect(r.mode).toBe('replace');
    expect(r.adoptionRefused).toBe('table ip kube-nft-proxy has table format 0, not 1');
    expect(tables(ns)).toEqual(fresh);
  });

  it('reads the tables back ahead when asked (readBack), once, and adopts what it read', async () => {
    const ns = createNetns('knp-adopt');
    namespaces.push(ns);
    await reconciler(ns, false).sync({ kind: 'full', mode: 'replace' });
    const fresh = tables(ns);
    const listed: string[] = [];
    const counted = (adopt: boolean) => {
      const dataplane = new NetlinkDataplane({ netns: ns.path });
      const list = dataplane.list.bind(dataplane);
      dataplane.list = (family, table, options) => {
        listed.push(family);
        return list(family, table, options);
      };
      return new Reconciler({ dataplane, config: cfg, servicePorts: modelReads(() => ports), now: () => now, adopt });
    };
    counted(false).readBack();
    expect(listed).toEqual([]);
    const r = counted(true);
    r.readBack();
    r.readBack();
    expect(listed.sort()).toEqual(['ip', 'ip6']);
    expect(await r.sync({ kind: 'full', mode: 'replace' })).toMatchObject({
      kind: 'full',
      mode: 'adopt',
      ops: 0,
    });
    expect(listed).toHaveLength(2);
    expect(tables(ns)).toEqual(fresh);
  });
});

describe('an endpoint map given an address by hand while no agent ran (endpoint shape map)', () => {
  const cfg = config({ families: { IPv4: V4, IPv6: V6 }, endpointShape: 'map' });
  const reconciler = (ns: NetNs, adopt: boolean) =>
    new Reconciler({
      dataplane: new NetlinkDataplane({ netns: ns.path }),
      config: cfg,
      servicePorts: modelReads(() => ports),
      now: () => 0,
      adopt,
    });

  it('makes the kernel refuse the adoption (the hairpin set lacks what the maps say it holds), and the tables are replaced', async () => {
    const ns = createNetns('knp-adopt');
    namespaces.push(ns);
    await reconciler(ns, false).sync({ kind: 'full', mode: 'replace' });
    const fresh = tables(ns);
    const shard = ns.nftJson().nftables.find((o) => o.map?.family === 'ip' && READ_ENCODED_ON_ADOPTION.includes(o.map.name))!.map;
    ns.exec('nft', ['add', 'element', 'ip', TABLE, shard.name, '{ 7 : 10.244.99.9 . 80 }']);
    const synced = await reconciler(ns, true).sync({ kind: 'full', mode: 'replace' });
    expect(synced).toMatchObject({ kind: 'full', mode: 'replace' });
    expect(synced.adoptionRefused).toMatch(/^the kernel refused the adoption: .*delete element.*ENOENT/);
    expect(tables(ns)).toEqual(fresh);
  });
});

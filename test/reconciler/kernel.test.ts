// The reconciler's transactions against the real kernel (6.18 here), each in
// its own network namespace: a full replace and a run of incremental syncs are
// accepted, and leave the kernel holding exactly what a fresh full sync does.
// The kernel's own listing (`nft list table`, the CLI as a test oracle) is what
// is compared. Flowtables are off: this kernel has none.

import { afterEach, describe, expect, it } from 'vitest';
import type { Dataplane } from '../../src/nft/dataplane.ts';
import { NetlinkDataplane } from '../../src/nft/netlink/netlink-dataplane.ts';
import { Transaction } from '../../src/nft/transaction.ts';
import { renderOperations } from '../../src/nft/render-text.ts';
import type { ServicePort } from '../../src/model/service-port.ts';
import { ENDPOINT_SHAPES, type RulesetConfig } from '../../src/reconciler/config.ts';
import { DEFAULT_STALE_CHAIN_DELAY_MS, diffRulesets, type SyncState } from '../../src/reconciler/diff.ts';
import { planFullSync } from '../../src/reconciler/full-sync.ts';
import { renderRuleset, type Ruleset } from '../../src/reconciler/ruleset.ts';
import { createNetns, type NetNs } from '../helpers/netns.ts';
import { config, ep, local, renderNext, sel, sp, V4, V6 } from './fixtures.ts';
import { GOLDENS } from './goldens.ts';

// The 'map' goldens hold every golden port (the 'chains' ones are a subset); each id once.
const goldenPorts = GOLDENS.filter((g) => g.config.endpointShape === 'map').flatMap((g) => g.ports);

/** A scripted churn: services come, change, leave and return. */
const STEPS: ServicePort[][] = [
  goldenPorts,
  // The web service loses an endpoint and gains two; dns gets endpoints.
  goldenPorts.map((p) =>
    p.serviceName === 'shop'
      ? { ...p, cluster: sel(local('10.244.2.6', 8443), ep('10.244.7.7', 8443), ep('10.244.8.8', 8443)), sessionAffinityTimeout: 600 }
      : p,
  ),
  // Two services leave.
  goldenPorts.filter((p) => p.serviceName !== 'far' && p.serviceName !== 'api'),
  // One comes back with another shape; a new one appears.
  goldenPorts
    .filter((p) => p.serviceName !== 'api')
    .concat([
      sp({
        serviceName: 'new',
        clusterIP: '10.96.0.77',
        nodePort: 30777,
        externalIPs: ['203.0.113.7'],
        endpoints: [ep('10.244.9.1'), ep('10.244.9.2')],
      }),
    ]),
];

const namespaces: NetNs[] = [];
afterEach(() => {
  for (const ns of namespaces.splice(0)) ns.destroy();
});

function netns(): NetNs {
  const ns = createNetns('knp-rec');
  namespaces.push(ns);
  return ns;
}

/** Applies through `nft -f` (render-text), the oracle's own parser. */
function nftApplier(ns: NetNs): Dataplane {
  return {
    begin: () => new Transaction(),
    async commit(tx: Transaction) {
      ns.exec('nft', ['-f', '-'], { input: renderOperations(tx.ops()) });
    },
    async list() {
      throw new Error('not used');
    },
  };
}

/**
 * Our tables as the kernel lists them (`nft -j`), with what depends on history
 * rather than content taken out: handles, the order chains and sets were
 * created in, the order a hash set iterates its elements in. Rule order within
 * a chain is kept: it is content.
 */
function listTables(ns: NetNs): unknown {
  const json = ns.nftJson().nftables;
  const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  const tables: Record<string, { table?: unknown; chains: any[]; sets: any[]; rules: Map<string, unknown[]> }> = {};
  const t = (family: string) => (tables[family] ??= { chains: [], sets: [], rules: new Map() });
  for (const o of json) {
    const [kind, v] = Object.entries(o)[0] as [string, any];
    const ours = kind === 'table' ? v?.name === 'kube-nft-proxy' : v?.table === 'kube-nft-proxy';
    if (!ours) continue;
    const { handle, ...rest } = v;
    void handle;
    if (kind === 'table') t(v.family).table = rest;
    else if (kind === 'chain') t(v.family).chains.push(rest);
    else if (kind === 'set' || kind === 'map') {
      const elem = Array.isArray(rest.elem) ? [...rest.elem].map((e) => JSON.stringify(e)).sort() : rest.elem;
      t(v.family).sets.push({ kind, ...rest, elem });
    } else if (kind === 'rule') {
      const list = t(v.family).rules.get(v.chain) ?? [];
      list.push(rest.expr);
      t(v.family).rules.set(v.chain, list);
    }
  }
  return Object.fromEntries(
    Object.entries(tables).map(([family, x]) => [
      family,
      { table: x.table, sets: x.sets.sort(byName), chains: x.chains.sort(byName).map((c) => ({ ...c, rules: x.rules.get(c.name) ?? [] })) },
    ]),
  );
}

async function churn(dp: Dataplane, cfg: RulesetConfig): Promise<Ruleset> {
  let now = 1_000_000;
  let rendered = renderRuleset(STEPS[0]!, cfg);
  const first = planFullSync(rendered, 'replace');
  await dp.commit(dp.begin().queueAll(first.ops));
  let state: SyncState = first.next;
  const step = async (ports: ServicePort[]) => {
    rendered = renderNext(ports, cfg, rendered);
    expect(rendered.problems).toEqual([]);
    const plan = diffRulesets(state.applied, rendered, { now }, state.staleChains);
    await dp.commit(dp.begin().queueAll(plan.ops));
    state = plan.next;
  };
  for (const ports of STEPS.slice(1)) {
    now += 300;
    await step(ports);
  }
  now += DEFAULT_STALE_CHAIN_DELAY_MS;
  await step(STEPS.at(-1)!);
  expect(state.staleChains.size).toBe(0);
  return rendered;
}

describe.each(ENDPOINT_SHAPES)('reconciler transactions in a real kernel (endpoint shape %s)', (shape) => {
  const cfg = config({ families: { IPv4: V4, IPv6: V6 }, endpointShape: shape });
  it('through nft -f: incremental churn ends where a fresh full sync does', async () => {
    const a = netns();
    const desired = await churn(nftApplier(a), cfg);
    const b = netns();
    // A leftover table from "a previous run" that the replace must remove atomically.
    b.exec('nft', ['-f', '-'], { input: 'add table ip kube-nft-proxy\nadd chain ip kube-nft-proxy leftover\n' });
    await nftApplier(b).commit(nftApplier(b).begin().queueAll(planFullSync(desired, 'replace').ops));
    const fresh = listTables(b);
    const text = b.exec('nft', ['list', 'table', 'ip', 'kube-nft-proxy']);
    expect(text).toContain('chain services {');
    expect(text).not.toContain('leftover');
    const listed = fresh as Record<string, { chains: Array<{ name: string; rules: unknown[] }> }>;
    expect(listed.ip!.chains.length).toBeGreaterThan(30);
    expect(listed.ip6!.chains.find((c) => c.name === 'services')?.rules).toHaveLength(2);
    expect(listTables(a)).toEqual(fresh);
  });

  it('through the netlink dataplane: the same churn, the same kernel listing as nft -f gives', async () => {
    const viaNft = netns();
    await churn(nftApplier(viaNft), cfg);
    const viaNetlink = netns();
    const dp = new NetlinkDataplane({ netns: viaNetlink.path });
    const desired = await churn(dp, cfg);
    expect(listTables(viaNetlink)).toEqual(listTables(viaNft));
    // And a replace over it through netlink changes nothing.
    await dp.commit(dp.begin().queueAll(planFullSync(desired, 'replace').ops));
    expect(listTables(viaNetlink)).toEqual(listTables(viaNft));
  });
});

// With two blocks most slot ranges collide: private maps come and go as
// services do, and the survivors move in and out of the shared maps. Only
// through netlink: nft 1.0.6 refuses `meta l4proto udp dnat ... map @m` when it
// reads a map it created itself (`typeof ... th dport`) back from the kernel
// ("conflicting protocols"), which a rule moving into an existing shared map
// does; the maps we create carry no typeof and nft accepts such rules.
describe('reconciler transactions in a real kernel (endpoint shape map, colliding slot ranges)', () => {
  const cfg = config({ families: { IPv4: V4, IPv6: V6 }, endpointShape: 'map', endpointMapBlocks: 2 });
  it('through the netlink dataplane: churn ends where a fresh full replace (through nft -f) does', async () => {
    const viaNetlink = netns();
    const desired = await churn(new NetlinkDataplane({ netns: viaNetlink.path }), cfg);
    const privateMaps = [...desired.services.values()].filter((s) => s.privateLabels.size > 0);
    expect(privateMaps.length).toBeGreaterThan(0);
    const fresh = netns();
    await nftApplier(fresh).commit(nftApplier(fresh).begin().queueAll(planFullSync(desired, 'replace').ops));
    expect(listTables(viaNetlink)).toEqual(listTables(fresh));
  });
});

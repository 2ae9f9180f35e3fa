// fast-check arbitraries for random ServicePort churn over a small universe, so
// that services come and go, endpoints move, and elements collide (two
// services claiming one externalIP:port) often enough to matter; and the
// incremental syncs through a churn into a fake kernel.

import fc from 'fast-check';
import type { IPFamily, Protocol } from '../../src/k8s/types.ts';
import type { Endpoint, EndpointSelection, ServicePort } from '../../src/model/service-port.ts';
import { FakeKernel } from '../../src/nft/fake/fake-kernel.ts';
import type { EndpointShape, RulesetConfig } from '../../src/reconciler/config.ts';
import { DEFAULT_STALE_CHAIN_DELAY_MS, diffRulesets, type SyncState } from '../../src/reconciler/diff.ts';
import { planFullSync } from '../../src/reconciler/full-sync.ts';
import { renderRuleset } from '../../src/reconciler/ruleset.ts';
import { config, renderNext, sp, V4, V6 } from './fixtures.ts';

const NAMES = ['a', 'b', 'c'] as const;
const PORT_NAMES = ['', 'p'] as const;
const PROTOCOLS: Protocol[] = ['TCP', 'UDP'];
const FAMILIES: IPFamily[] = ['IPv4', 'IPv6'];

function addr(family: IPFamily, v4: string, v6: string): string {
  return family === 'IPv4' ? v4 : v6;
}

const endpointArb = (family: IPFamily): fc.Arbitrary<Endpoint> =>
  fc
    .record({
      host: fc.integer({ min: 1, max: 4 }),
      port: fc.constantFrom(8080, 9090),
      isLocal: fc.boolean(),
      terminating: fc.boolean(),
    })
    .map(({ host, port, isLocal, terminating }) => ({
      ip: addr(family, `10.244.${host}.${host + 1}`, `fd00:244::${host}`),
      port,
      isLocal,
      ready: !terminating,
      serving: true,
      terminating,
    }));

const selectionArb = (family: IPFamily): fc.Arbitrary<EndpointSelection> =>
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .array(endpointArb(family), { minLength: 1, maxLength: 4 })
        .map((endpoints) => ({ kind: 'endpoints' as const, endpoints })),
    },
    { weight: 1, arbitrary: fc.constant({ kind: 'reject' as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'drop' as const }) },
  );

/** One ServicePort of the universe in a random state. */
const portArb = (nameIdx: number, portName: string, protocol: Protocol, family: IPFamily): fc.Arbitrary<ServicePort> =>
  fc
    .record({
      hasClusterIP: fc.boolean(),
      port: fc.constantFrom(80, 443),
      nodePort: fc.option(fc.constantFrom(30000 + nameIdx * 10, 30001 + nameIdx * 10), { nil: undefined }),
      externalIPs: fc.subarray([addr(family, '203.0.113.1', '2001:db8:1::1'), addr(family, '203.0.113.2', '2001:db8:1::2')]),
      loadBalancerIPs: fc.subarray([addr(family, '198.51.100.1', '2001:db8:2::1')]),
      loadBalancerSourceRanges: fc.subarray([
        addr(family, '192.0.2.0/24', '2001:db8::/64'),
        addr(family, '203.0.113.0/25', '2001:db8:3::/48'),
      ]),
      sessionAffinityTimeout: fc.option(fc.constantFrom(10, 300), { nil: undefined }),
      externalPolicyLocal: fc.boolean(),
      internalPolicyLocal: fc.boolean(),
      cluster: selectionArb(family),
      external: selectionArb(family),
      extra: fc.array(endpointArb(family), { maxLength: 2 }),
    })
    .map((r) => {
      const all = new Map<string, Endpoint>();
      for (const s of [r.cluster, r.external]) if (s.kind === 'endpoints') for (const e of s.endpoints) all.set(`${e.ip}/${e.port}`, e);
      for (const e of r.extra) all.set(`${e.ip}/${e.port}`, e);
      const p = sp({
        serviceName: NAMES[nameIdx]!,
        portName,
        protocol,
        family,
        clusterIP: r.hasClusterIP ? addr(family, `10.96.0.${nameIdx + 10}`, `fd00:96::${nameIdx + 10}`) : undefined,
        port: r.port,
        externalIPs: r.externalIPs,
        loadBalancerIPs: r.loadBalancerIPs,
        loadBalancerSourceRanges: r.loadBalancerSourceRanges,
        externalPolicyLocal: r.externalPolicyLocal,
        internalPolicyLocal: r.internalPolicyLocal,
        cluster: r.cluster,
        external: r.external,
        allEndpoints: [...all.values()],
        ...(r.nodePort !== undefined ? { nodePort: r.nodePort } : {}),
        ...(r.sessionAffinityTimeout !== undefined ? { sessionAffinityTimeout: r.sessionAffinityTimeout } : {}),
      });
      return p;
    });

const UNIVERSE: Array<[number, string, Protocol, IPFamily]> = [];
for (let n = 0; n < NAMES.length; n++)
  for (const pn of PORT_NAMES) for (const pr of PROTOCOLS) for (const f of FAMILIES) UNIVERSE.push([n, pn, pr, f]);

/** A random subset of the universe, each present port in a random state. */
export const servicePortsArb: fc.Arbitrary<ServicePort[]> = fc
  .tuple(...UNIVERSE.map(([n, pn, pr, f]) => fc.option(portArb(n, pn, pr, f), { nil: undefined, freq: 3 })))
  .map((ports) => ports.filter((p): p is ServicePort => p !== undefined));

/**
 * Random configs whose endpoint shape is one of `shapes`; with `mapBlocks`, the
 * shared endpoint map has one of those (few) block counts, so that slot ranges
 * collide often.
 */
export const configArbFor = (shapes: readonly EndpointShape[], mapBlocks?: readonly number[]): fc.Arbitrary<RulesetConfig> =>
  fc
    .record({
      endpointShape: fc.constantFrom(...shapes),
      nodePortAll: fc.boolean(),
      devices: fc.subarray(['eth0', 'eth1', 'eth2'], { minLength: 1 }),
      masqueradeAll: fc.boolean(),
      blocks: mapBlocks ? fc.constantFrom(...mapBlocks) : fc.constant(undefined),
    })
    .map(({ endpointShape, nodePortAll, devices, masqueradeAll, blocks }) =>
      config({
        families: { IPv4: nodePortAll ? { ...V4, nodePortAddresses: 'all' } : V4, IPv6: V6 },
        masqueradeAll,
        offloadPacketThreshold: 20,
        flowtableSupported: true,
        flowtableDevices: devices,
        endpointShape,
        ...(blocks !== undefined ? { endpointMapBlocks: blocks } : {}),
      }),
    );

export interface ChurnStep {
  ports: ServicePort[];
  /** ms since the previous step */
  advance: number;
  /** a new config for this step (rare) */
  config?: RulesetConfig;
}

/** Churn whose configs (initial and changed) take their endpoint shape from `shapes`: with both, a step may switch shapes. */
export const churnArbFor = (
  shapes: readonly EndpointShape[],
  mapBlocks?: readonly number[],
): fc.Arbitrary<{ initial: RulesetConfig; steps: ChurnStep[] }> =>
  fc.record({
    initial: configArbFor(shapes, mapBlocks),
    steps: fc.array(
      fc.record({
        ports: servicePortsArb,
        advance: fc.constantFrom(0, 300, 1000, 2500),
        config: fc.option(configArbFor(shapes, mapBlocks), { nil: undefined, freq: 6 }),
      }),
      { minLength: 1, maxLength: 8 },
    ),
  });

/** Incremental syncs through the churn, then one more after the stale-chain delay. */
export function churn(initial: RulesetConfig, steps: readonly ChurnStep[]) {
  const k = new FakeKernel({ flowtables: true });
  let now = 1_000_000;
  let cfg = initial;
  let rendered = renderRuleset([], cfg);
  const first = planFullSync(rendered, 'replace');
  k.commitSync(first.ops);
  let state: SyncState = first.next;
  const sync = (ports: ServicePort[]) => {
    rendered = renderNext(ports, cfg, rendered);
    const plan = diffRulesets(state.applied, rendered, { now }, state.staleChains);
    k.commitSync(plan.ops);
    state = plan.next;
    return plan;
  };
  for (const s of steps) {
    now += s.advance;
    if (s.config) cfg = s.config;
    sync(s.ports);
  }
  now += DEFAULT_STALE_CHAIN_DELAY_MS;
  const settle = sync(steps.at(-1)!.ports);
  return { k, state, rendered, settle };
}

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { renderTableText as renderText } from '../../src/nft/render-text.ts';
import { validateOperations } from '../../src/nft/transaction.ts';
import { ENDPOINT_SHAPES, type RulesetConfig, RulesetConfigError, validateRulesetConfig } from '../../src/reconciler/config.ts';
import { planFullSync } from '../../src/reconciler/full-sync.ts';
import { rulesetListings } from '../../src/reconciler/listing.ts';
import { endpointNameBase, servicePortNameBase, shortHash } from '../../src/reconciler/names.ts';
import { DEFAULT_ENDPOINT_MAP_BLOCKS, endpointRegion, regionOffset, shardMapName, shardOf } from '../../src/reconciler/endpoint-slots.ts';
import { claimedElement, renderRuleset } from '../../src/reconciler/ruleset.ts';
import type { ServicePort } from '../../src/model/service-port.ts';
import { config, ep, local, sel, sp, V4, V6 } from './fixtures.ts';

function text(ports: ServicePort[], c: RulesetConfig = config({ families: { IPv4: V4 } })): string {
  const r = renderRuleset(ports, c);
  validateOperations(planFullSync(r, 'replace').ops);
  return rulesetListings(r)
    .map((l) => renderText(l))
    .join('\n');
}

/** Lines of the text, trimmed: a rule or element line must appear as a whole. */
function lines(t: string): string[] {
  return t.split('\n').map((l) =>
    l
      .trim()
      .replace(/,$/, '')
      .replace(/^elements = \{ /, '')
      .replace(/ \}$/, ''),
  );
}

const SVC = 'FZBCIIWL-default/web/tcp/http';
/** First slot of a policy chain's range in the shared endpoint map. */
const region = (label: string) => endpointRegion(label, 1, DEFAULT_ENDPOINT_MAP_BLOCKS);
const S = regionOffset(region(`endpoints-${SVC}`));
const L = regionOffset(region(`local-endpoints-${SVC}`));
/** The shared map each range lives in. */
const SM = shardMapName(shardOf(region(`endpoints-${SVC}`)));
const LM = shardMapName(shardOf(region(`local-endpoints-${SVC}`)));

describe('ruleset features', () => {
  // Rendered in each endpoint shape below.
  const bothPoliciesLocal = sp({
    nodePort: 30080,
    internalPolicyLocal: true,
    externalPolicyLocal: true,
    cluster: sel(local('10.244.2.6')),
    external: sel(local('10.244.2.6')),
    allEndpoints: [ep('10.244.1.5'), local('10.244.2.6')],
  });
  const cases: Array<{ name: string; ports: ServicePort[]; config?: RulesetConfig; present?: string[]; absent?: string[] }> = [
    {
      name: 'ClusterIP traffic from outside the pod CIDR is masqueraded',
      ports: [sp({ endpoints: [ep('10.244.1.5')] })],
      present: [`ip daddr 10.96.0.10 meta l4proto tcp th dport 80 ip saddr != 10.244.0.0/16 jump mark-for-masquerade`],
    },
    {
      name: '--masquerade-all masquerades all ClusterIP traffic',
      ports: [sp({ endpoints: [ep('10.244.1.5')] })],
      config: config({ families: { IPv4: V4 }, masqueradeAll: true }),
      present: [`ip daddr 10.96.0.10 meta l4proto tcp th dport 80 jump mark-for-masquerade`],
      absent: [`ip daddr 10.96.0.10 meta l4proto tcp th dport 80 ip saddr != 10.244.0.0/16 jump mark-for-masquerade`],
    },
    {
      name: 'without cluster CIDRs nor masquerade-all, ClusterIP traffic keeps its source',
      ports: [sp({ endpoints: [ep('10.244.1.5')] })],
      config: config({ families: { IPv4: { ...V4, clusterCIDRs: [] } } }),
      absent: [`ip daddr 10.96.0.10 meta l4proto tcp th dport 80 jump mark-for-masquerade`, 'short-circuit pod traffic'],
    },
    {
      name: 'several cluster CIDRs: masquerade only what is in none of them',
      ports: [sp({ endpoints: [ep('10.244.1.5')] })],
      config: config({ families: { IPv4: { ...V4, clusterCIDRs: ['10.244.0.0/16', '10.245.0.0/16'] } } }),
      present: [
        `ip daddr 10.96.0.10 meta l4proto tcp th dport 80 ip saddr != 10.244.0.0/16 ip saddr != 10.245.0.0/16 jump mark-for-masquerade`,
      ],
    },
    {
      name: 'NodePorts on every local address but loopback when nodeport-addresses is all',
      ports: [sp({ nodePort: 30080, endpoints: [ep('10.244.1.5')] })],
      config: config({ families: { IPv4: { ...V4, nodePortAddresses: 'all' } } }),
      present: [
        'fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports',
        'ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @no-endpoint-nodeports',
      ],
      absent: ['set nodeport-ips {'],
    },
    {
      name: 'NodePorts on the listed addresses only',
      ports: [sp({ nodePort: 30080, endpoints: [ep('10.244.1.5')] })],
      config: config({ families: { IPv4: { ...V4, nodePortAddresses: ['192.0.2.10', '192.0.2.11'] } } }),
      present: [
        'ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports',
        '192.0.2.11',
        `tcp . 30080 : goto external-${SVC}`,
      ],
    },
    {
      name: 'no endpoints: ClusterIP, externalIP, LB IP and NodePort rejected; no chains',
      ports: [sp({ nodePort: 30080, externalIPs: ['203.0.113.7'], loadBalancerIPs: ['198.51.100.9'], endpoints: [] })],
      present: [
        '10.96.0.10 . tcp . 80 comment "default/web/tcp/http" : goto reject-chain',
        '203.0.113.7 . tcp . 80 comment "default/web/tcp/http" : goto reject-chain',
        '198.51.100.9 . tcp . 80 comment "default/web/tcp/http" : goto reject-chain',
        'tcp . 30080 comment "default/web/tcp/http" : goto reject-chain',
        '10.96.0.10',
      ],
      absent: [`chain service-${SVC} {`, `chain external-${SVC} {`],
    },
    {
      name: 'a wrong port of a ClusterIP is rejected, an unallocated one in the service CIDRs dropped',
      ports: [sp({ endpoints: [ep('10.244.1.5')] })],
      config: config({ families: { IPv4: { ...V4, serviceCIDRs: ['10.96.0.0/16', '10.97.0.0/16'] } } }),
      present: [
        'ip daddr @cluster-ips reject with icmp port-unreachable comment "Reject traffic to invalid ports of ClusterIPs"',
        'ip daddr 10.96.0.0/16 drop comment "Drop traffic to unallocated ClusterIPs"',
        'ip daddr 10.97.0.0/16 drop comment "Drop traffic to unallocated ClusterIPs"',
      ],
    },
    {
      name: 'source ranges without the node: the LB IP itself is not admitted',
      ports: [sp({ loadBalancerIPs: ['198.51.100.9'], loadBalancerSourceRanges: ['203.0.113.0/24'], endpoints: [ep('10.244.1.5')] })],
      present: [
        `ip saddr != @firewall-allow-${SVC} drop`,
        `198.51.100.9 . tcp . 80 : goto firewall-${SVC}`,
        'elements = { 203.0.113.0/24 }',
      ],
      absent: ['198.51.100.9 }', '198.51.100.9,'],
    },
    {
      name: 'source ranges with the node: the LB IP is admitted too, in the same set',
      ports: [sp({ loadBalancerIPs: ['198.51.100.9'], loadBalancerSourceRanges: ['192.0.2.0/24'], endpoints: [ep('10.244.1.5')] })],
      present: [`ip saddr != @firewall-allow-${SVC} drop`, '192.0.2.0/24', '198.51.100.9'],
    },
    {
      name:
        'source ranges inside another of the list are left out of the set (an interval set refuses overlaps); the ' +
        'rule stays one lookup',
      ports: [
        sp({
          loadBalancerIPs: ['198.51.100.9'],
          loadBalancerSourceRanges: ['203.0.113.0/24', '10.1.0.0/16', '10.0.0.0/8', '203.0.113.7/32', '0.0.0.0/1', '203.0.113.128/25'],
          endpoints: [ep('10.244.1.5')],
        }),
      ],
      present: [`ip saddr != @firewall-allow-${SVC} drop`, '0.0.0.0/1', '203.0.113.0/24'],
      absent: ['10.0.0.0/8', '10.1.0.0/16', '203.0.113.7', '203.0.113.128/25'],
    },
    {
      name: 'source ranges apply to LB IPs only: NodePort and externalIPs are not filtered',
      ports: [
        sp({ nodePort: 30080, externalIPs: ['203.0.113.7'], loadBalancerSourceRanges: ['203.0.113.0/24'], endpoints: [ep('10.244.1.5')] }),
      ],
      absent: ['goto firewall-', 'chain firewall-SUSTUHLJ'],
    },
    {
      name: 'affinity: a dynamic set per endpoint, updated in the endpoint chain, looked up in the service chain',
      ports: [sp({ sessionAffinityTimeout: 300, endpoints: [ep('10.244.1.5')] })],
      present: [
        'flags dynamic,timeout',
        'timeout 300s',
        'update @affinity-CIV2HNCT-default/web/tcp/http__10.244.1.5/8080 { ip saddr }',
        'ip saddr @affinity-CIV2HNCT-default/web/tcp/http__10.244.1.5/8080 goto endpoint-CIV2HNCT-default/web/tcp/http__10.244.1.5/8080',
      ],
    },
    {
      name: 'one endpoint: an unconditional goto, no numgen',
      ports: [sp({ endpoints: [ep('10.244.1.5')] })],
      present: [
        'goto endpoint-CIV2HNCT-default/web/tcp/http__10.244.1.5/8080',
        'meta l4proto tcp dnat to 10.244.1.5:8080',
        'ip saddr 10.244.1.5 jump mark-for-masquerade',
      ],
      absent: ['numgen', 'hairpin-endpoints', 'map endpoints-'],
    },
    {
      name: 'endpoints are deduplicated and ordered whatever order the model gives',
      ports: [sp({ endpoints: [ep('10.244.2.6'), ep('10.244.1.5'), ep('10.244.2.6')] })],
      present: [
        'numgen random mod 2 0 goto endpoint-CIV2HNCT-default/web/tcp/http__10.244.1.5/8080',
        'goto endpoint-7HFBTXJW-default/web/tcp/http__10.244.2.6/8080',
      ],
      absent: ['numgen random mod 3'],
    },
    {
      name: 'endpoint shape map, one endpoint: DNAT through one slot of the shared map, no endpoint chain, no map of its own',
      ports: [sp({ endpoints: [ep('10.244.1.5')] })],
      config: config({ families: { IPv4: V4 }, endpointShape: 'map' }),
      present: [
        `map ${SM} {`,
        `meta l4proto tcp dnat ip addr . port to numgen random mod 1 offset ${S} map @${SM}`,
        `elements = { ${S} : 10.244.1.5 . 8080 }`,
        'elements = { 10.244.1.5 . 10.244.1.5 }',
        'ct status dnat ip saddr . ip daddr @hairpin-endpoints jump mark-for-masquerade',
      ],
      absent: ['chain endpoint-', 'goto endpoint-', 'ip saddr 10.244.1.5 jump mark-for-masquerade', 'map endpoints-'],
    },
    {
      name: 'endpoint shape map: endpoints are deduplicated and ordered whatever order the model gives',
      ports: [sp({ endpoints: [ep('10.244.2.6'), ep('10.244.1.5'), ep('10.244.2.6')] })],
      config: config({ families: { IPv4: V4 }, endpointShape: 'map' }),
      present: [
        `meta l4proto tcp dnat ip addr . port to numgen random mod 2 offset ${S} map @${SM}`,
        `${S} : 10.244.1.5 . 8080`,
        `${S + 1} : 10.244.2.6 . 8080`,
      ],
      absent: ['numgen random mod 3', `${S + 2} : 10.244.2.6 . 8080`],
    },
    {
      name: 'endpoint shape map: affinity keeps per-endpoint chains, with their own hairpin rule, and no endpoints map',
      ports: [sp({ sessionAffinityTimeout: 60, endpoints: [ep('10.244.2.6'), ep('10.244.1.5')] })],
      config: config({ families: { IPv4: V4 }, endpointShape: 'map' }),
      present: [
        'numgen random mod 2 0 goto endpoint-CIV2HNCT-default/web/tcp/http__10.244.1.5/8080',
        'goto endpoint-7HFBTXJW-default/web/tcp/http__10.244.2.6/8080',
        'ip saddr 10.244.1.5 jump mark-for-masquerade',
      ],
      absent: ['map endpoints-', 'dnat ip addr . port'],
    },
    {
      name: 'iTP Local with a local endpoint: the ClusterIP goes to the local chain, which masquerades off-cluster sources',
      ports: [sp({ internalPolicyLocal: true, cluster: sel(local('10.244.2.6')), external: sel(ep('10.244.1.5'), local('10.244.2.6')) })],
      present: [
        `10.96.0.10 . tcp . 80 : goto local-${SVC}`,
        'ip daddr 10.96.0.10 meta l4proto tcp th dport 80 ip saddr != 10.244.0.0/16 jump mark-for-masquerade',
      ],
      absent: [`chain service-${SVC} {`],
    },
    {
      name: 'eTP Local and iTP Local: short-circuits use every endpoint of the service',
      ports: [bothPoliciesLocal],
      present: [
        `fib saddr type local goto service-${SVC} comment "short-circuit local traffic"`,
        `goto local-${SVC}`,
        'numgen random mod 2 0 goto endpoint-CIV2HNCT-default/web/tcp/http__10.244.1.5/8080',
      ],
    },
    {
      name: 'endpoint shape map, eTP Local and iTP Local: short-circuits use every endpoint of the service',
      config: config({ families: { IPv4: V4 }, endpointShape: 'map' }),
      ports: [bothPoliciesLocal],
      present: [
        `fib saddr type local goto service-${SVC} comment "short-circuit local traffic"`,
        `goto local-${SVC}`,
        `meta l4proto tcp dnat ip addr . port to numgen random mod 2 offset ${S} map @${SM}`,
        `meta l4proto tcp dnat ip addr . port to numgen random mod 1 offset ${L} map @${LM}`,
        `${S} : 10.244.1.5 . 8080`,
        `${S + 1} : 10.244.2.6 . 8080`,
        `${L} : 10.244.2.6 . 8080`,
      ],
    },
    {
      name: 'offload needs both a threshold and kernel support',
      ports: [],
      config: config({ families: { IPv4: V4 }, offloadPacketThreshold: 20, flowtableSupported: false, flowtableDevices: ['eth0'] }),
      absent: ['flowtable', 'flow add'],
    },
    {
      name: 'offload threshold 0 disables it',
      ports: [],
      config: config({ families: { IPv4: V4 }, offloadPacketThreshold: 0, flowtableSupported: true, flowtableDevices: ['eth0'] }),
      absent: ['flowtable', 'flow add'],
    },
    {
      name: 'offload: flowtable on the given devices and the KEP-4963 rule in filter-forward',
      ports: [],
      config: config({ families: { IPv4: V4 }, offloadPacketThreshold: 7, flowtableSupported: true, flowtableDevices: ['eth0'] }),
      present: [
        'flowtable service-flowtable {',
        'hook ingress priority 0',
        'devices = { "eth0" }',
        'ct original ip daddr @cluster-ips ct packets > 7 flow add @service-flowtable',
      ],
    },
    {
      name: 'the masquerade mark follows the configured bit',
      ports: [],
      config: config({ families: { IPv4: V4 }, masqueradeBit: 5 }),
      present: ['meta mark set meta mark | 0x20', 'meta mark & 0x20 == 0x0 return', 'meta mark set meta mark ^ 0x20'],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const t = text(c.ports, c.config);
      const all = lines(t);
      for (const p of c.present ?? []) expect(all.some((l) => l === p) || t.includes(p), p).toBe(true);
      for (const a of c.absent ?? []) expect(t.includes(a), a).toBe(false);
    });
  }
});

describe('ruleset problems are contained', () => {
  it('a bad address skips its service port only', () => {
    const r = renderRuleset(
      [sp({ endpoints: [ep('10.244.1.500')] }), sp({ serviceName: 'ok', clusterIP: '10.96.0.20', endpoints: [ep('10.244.1.5')] })],
      config({ families: { IPv4: V4 } }),
    );
    expect([...r.services.keys()]).toEqual(['default/ok/TCP/http/IPv4']);
    expect(r.problems.map((p) => p.code)).toEqual(['ERR_SERVICE_PORT_RENDER']);
  });

  it("an address not in the IP codec's canonical form is a bug upstream: its port is left out, not rewritten", () => {
    const r = renderRuleset(
      [sp({ endpoints: [ep('10.244.01.5')] }), sp({ serviceName: 'ok', clusterIP: '10.96.0.20', endpoints: [ep('10.244.1.5')] })],
      config({ families: { IPv4: V4 } }),
    );
    expect([...r.services.keys()]).toEqual(['default/ok/TCP/http/IPv4']);
    expect(r.problems.map((p) => p.message)).toEqual([
      'service port default/web/TCP/http/IPv4: "10.244.01.5" is not an IPv4 address in canonical form',
    ]);
  });

  it('a /32 source range (as the model writes a CIDR) is the single address in the firewall set', () => {
    const t = text([
      sp({ loadBalancerIPs: ['198.51.100.9'], loadBalancerSourceRanges: ['203.0.113.7/32'], endpoints: [ep('10.244.1.5')] }),
    ]);
    expect(t).toContain('elements = { 203.0.113.7 }');
    expect(t).toContain(`ip saddr != @firewall-allow-${SVC} drop`);
  });

  it('a port that turns unrenderable keeps its previous rendering, and says so', () => {
    const cfg = config({ families: { IPv4: V4 } });
    const good = renderRuleset([sp({ endpoints: [ep('10.244.1.5')] })], cfg);
    const id = 'default/web/TCP/http/IPv4';
    const next = renderRuleset([sp({ endpoints: [ep('10.244.1.500')] })], cfg, good, new Set([id]));
    expect(next.services.get(id)).toBe(good.services.get(id));
    expect(next.problems.map((p) => p.message)).toEqual([expect.stringMatching(/10\.244\.1\.500.*; its previous rules stay$/)]);
    expect(validateOperations(planFullSync(next, 'replace').ops)).toBeUndefined();
  });

  it('a port of an unconfigured family is reported, not rendered', () => {
    const r = renderRuleset([sp({ family: 'IPv6', endpoints: [ep('fd00::1')] })], config({ families: { IPv4: V4 } }));
    expect(r.services.size).toBe(0);
    expect(r.problems.map((p) => p.code)).toEqual(['ERR_FAMILY_NOT_CONFIGURED']);
  });

  it('the same id twice: the first is used', () => {
    const r = renderRuleset(
      [sp({ endpoints: [ep('10.244.1.5')] }), sp({ endpoints: [ep('10.244.1.6')] })],
      config({ families: { IPv4: V4 } }),
    );
    expect(r.problems.map((p) => p.code)).toEqual(['ERR_DUPLICATE_SERVICE_PORT']);
  });

  it('two services claiming one externalIP:port: the first in id order keeps it', () => {
    const a = sp({ serviceName: 'a', clusterIP: '10.96.0.20', externalIPs: ['203.0.113.7'], endpoints: [ep('10.244.1.5')] });
    const b = sp({ serviceName: 'b', clusterIP: '10.96.0.21', externalIPs: ['203.0.113.7'], endpoints: [ep('10.244.1.6')] });
    const r = renderRuleset([b, a], config({ families: { IPv4: V4 } }));
    expect(r.claims.get('ip kube-nft-proxy service-ips 203.0.113.7 . tcp . 80')).toBe(a.id);
    expect(claimedElement(r, 'ip kube-nft-proxy service-ips 203.0.113.7 . tcp . 80')?.value).toEqual({
      verdict: 'goto',
      chain: `external-${servicePortNameBase(a)}`,
    });
    expect(r.problems.map((p) => [p.code, p.servicePortId])).toEqual([['ERR_ELEMENT_CONFLICT', b.id]]);
  });

  it('every port of a service shares its ClusterIP in cluster-ips without a conflict', () => {
    const r = renderRuleset(
      [sp({ endpoints: [ep('10.244.1.5')] }), sp({ portName: 'https', port: 443, endpoints: [ep('10.244.1.5', 8443)] })],
      config({ families: { IPv4: V4 } }),
    );
    expect(r.problems).toEqual([]);
  });

  it('bad config is refused with the field named', () => {
    const bad: Array<[Partial<RulesetConfig>, string]> = [
      [{ tableName: '1bad' }, 'tableName'],
      [{ masqueradeBit: 32 }, 'masqueradeBit'],
      [{ offloadPacketThreshold: -1 }, 'offloadPacketThreshold'],
      [{ families: { IPv4: { ...V4, clusterCIDRs: ['fd00::/64'] } } }, 'families.IPv4.clusterCIDRs[0]'],
      [{ families: { IPv4: { ...V4, nodePortAddresses: ['10.0.0.0/8'] } } }, 'families.IPv4.nodePortAddresses[0]'],
      // Read with the IP codec's strict syntax: no leading zeros, no zone index.
      [{ families: { IPv4: { ...V4, nodeIPs: ['010.0.0.1'] } } }, 'families.IPv4.nodeIPs[0]'],
      [
        { families: { IPv6: { ...V4, nodeIPs: ['fd00::1%eth0'], nodePortAddresses: [], clusterCIDRs: [], serviceCIDRs: [] } } },
        'families.IPv6.nodeIPs[0]',
      ],
    ];
    for (const [o, field] of bad) {
      let err: unknown;
      try {
        validateRulesetConfig(config(o));
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(RulesetConfigError);
      expect((err as RulesetConfigError).field).toBe(field);
    }
  });
});

describe('names', () => {
  it('are hash-prefixed, readable and stable', () => {
    const p = { namespace: 'default', serviceName: 'web', protocol: 'TCP' as const, portName: 'http' };
    expect(servicePortNameBase(p)).toBe(`${shortHash('default/web/tcp/http')}-default/web/tcp/http`);
    expect(shortHash('default/web/tcp/http')).toMatch(/^[A-Z2-7]{8}$/);
    expect(endpointNameBase(p, 'fd00::1', 80)).toMatch(/^[A-Z2-7]{8}-default\/web\/tcp\/http__fd00\.\.1\/80$/);
  });

  it('stay within the kernel limit and unique when truncated', () => {
    const long = (n: string) => ({
      namespace: 'n'.repeat(63),
      serviceName: 's'.repeat(63),
      protocol: 'SCTP' as const,
      portName: n.repeat(63),
    });
    const a = endpointNameBase(long('a'), 'fd00:1111:2222:3333:4444:5555:6666:7777', 65535);
    const b = endpointNameBase(long('a'), 'fd00:1111:2222:3333:4444:5555:6666:7778', 65535);
    expect(Buffer.byteLength(`affinity-${a}`)).toBeLessThanOrEqual(255);
    expect(a.endsWith('...')).toBe(true);
    expect(a).not.toBe(b);
    const r = renderRuleset(
      [
        sp({
          namespace: 'n'.repeat(63),
          serviceName: 's'.repeat(63),
          protocol: 'SCTP',
          portName: 'a'.repeat(63),
          family: 'IPv6',
          sessionAffinityTimeout: 5,
          endpoints: [ep('fd00:1111:2222:3333:4444:5555:6666:7777', 65535)],
        }),
      ],
      config(),
    );
    expect(() => validateOperations(planFullSync(r, 'replace').ops)).not.toThrow();
  });
});

describe('endpoint order', () => {
  // Addresses that are prefixes of one another and ports whose texts sort
  // differently from their numbers: where a shortcut in the ordering would show.
  const V4_IPS = ['10.244.0.1', '10.244.0.10', '10.244.0.100', '10.244.0.2', '10.244.1.1'];
  const V6_IPS = ['fd00::1', 'fd00::1:2', 'fd00::10', 'fd00::1:0:2', 'fd00::a'];
  const PORTS = [9, 80, 8080, 443];
  it.each([
    ['IPv4', V4_IPS],
    ['IPv6', V6_IPS],
  ] as const)('the rendering of %s endpoints does not depend on the order the model gives them in (both shapes)', (family, ips) => {
    const endpoints = fc.array(fc.tuple(fc.constantFrom(...ips), fc.constantFrom(...PORTS)), { minLength: 1, maxLength: 8 });
    fc.assert(
      fc.property(endpoints, fc.func(fc.integer()), fc.constantFrom(...ENDPOINT_SHAPES), (list, shuffleKey, shape) => {
        const cfg = config({ families: family === 'IPv4' ? { IPv4: V4 } : { IPv6: V6 }, endpointShape: shape });
        const port = (eps: Array<[string, number]>) =>
          sp({ family, clusterIP: family === 'IPv4' ? '10.96.0.10' : 'fd00:96::10', endpoints: eps.map(([ip, p]) => ep(ip, p)) });
        const text = (eps: Array<[string, number]>) =>
          rulesetListings(renderRuleset([port(eps)], cfg))
            .map((l) => renderText(l))
            .join('\n');
        const shuffled = [...list].sort((a, b) => shuffleKey(a) - shuffleKey(b));
        // As the model orders them: address text, then port number.
        const modelOrder = [...list].sort((a, b) => (a[0] !== b[0] ? (a[0] < b[0] ? -1 : 1) : a[1] - b[1]));
        const expected = text(list);
        expect(text(shuffled)).toBe(expected);
        expect(text(modelOrder)).toBe(expected);
      }),
      { numRuns: 150 },
    );
  });
});

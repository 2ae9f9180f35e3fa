import { describe, expect, it } from 'vitest';
import { parseCommandLine } from '../../src/cli/flags.ts';
import { rulesetConfigFor } from '../../src/agent/ruleset-config.ts';
import { validateRulesetConfig } from '../../src/reconciler/config.ts';

const options = (argv: string[]) => {
  const c = parseCommandLine(argv);
  if (c.command !== 'run') throw new Error(`got ${c.command}`);
  return c.options;
};
const NO_OFFLOAD = { wanted: false, supported: false, devices: [] };

describe('rulesetConfigFor: --endpoint-shape', () => {
  it('defaults to shared endpoint maps', () => {
    expect(rulesetConfigFor(options([]), undefined, NO_OFFLOAD).endpointShape).toBe('map');
  });

  it('passes chains through, and the result validates', () => {
    const c = rulesetConfigFor(options(['--endpoint-shape=chains']), undefined, NO_OFFLOAD);
    expect(c.endpointShape).toBe('chains');
    expect(validateRulesetConfig(c).endpointShape).toBe('chains');
  });

  it('a config with an unknown shape does not validate', () => {
    const c = rulesetConfigFor(options([]), undefined, NO_OFFLOAD);
    expect(() => validateRulesetConfig({ ...c, endpointShape: 'set' as 'map' })).toThrow(/endpointShape/);
  });
});

describe("rulesetConfigFor: kube-proxy's detect-local modes", () => {
  const node = {
    name: 'node-a',
    resourceVersion: '1',
    addresses: [],
    podCIDRs: ['10.244.1.0/24', 'fd00:10:244:1::/64'],
  } as unknown as Parameters<typeof rulesetConfigFor>[1];
  const cidrs = (c: ReturnType<typeof rulesetConfigFor>) => [c.families.IPv4!.clusterCIDRs, c.families.IPv6!.clusterCIDRs];

  it('ClusterCIDR (the default) takes --cluster-cidr per family', () => {
    const c = rulesetConfigFor(options(['--cluster-cidr=10.244.0.0/16,fd00:10:244::/56']), node, NO_OFFLOAD);
    expect(cidrs(c)).toEqual([['10.244.0.0/16'], ['fd00:10:244::/56']]);
    expect(c.localInterface).toBeUndefined();
  });

  it("NodeCIDR takes the Node's podCIDRs, and nothing before the Node is known", () => {
    const o = options(['--detect-local-mode=NodeCIDR', '--cluster-cidr=10.244.0.0/16']);
    expect(cidrs(rulesetConfigFor(o, node, NO_OFFLOAD))).toEqual([['10.244.1.0/24'], ['fd00:10:244:1::/64']]);
    expect(cidrs(rulesetConfigFor(o, undefined, NO_OFFLOAD))).toEqual([[], []]);
  });

  it("BridgeInterface and InterfaceNamePrefix match the input interface (a prefix with nft's wildcard), no CIDR", () => {
    const bridge = rulesetConfigFor(
      options(['--detect-local-mode=BridgeInterface', '--pod-bridge-interface=cbr0', '--cluster-cidr=10.244.0.0/16']),
      node,
      NO_OFFLOAD,
    );
    expect([bridge.localInterface, ...cidrs(bridge)]).toEqual(['cbr0', [], []]);
    const prefix = rulesetConfigFor(
      options(['--detect-local-mode=InterfaceNamePrefix', '--pod-interface-name-prefix=cali']),
      node,
      NO_OFFLOAD,
    );
    expect(prefix.localInterface).toBe('cali*');
    expect(validateRulesetConfig(prefix).localInterface).toBe('cali*');
  });

  it('takes the masquerade bit and --bind-address as the primary IP of its family', () => {
    const withIPs = { ...node, addresses: [{ type: 'InternalIP', address: '192.0.2.10' }] } as typeof node;
    const c = rulesetConfigFor(options(['--iptables-masquerade-bit=3', '--bind-address=192.0.2.99']), withIPs, NO_OFFLOAD);
    expect(c.masqueradeBit).toBe(3);
    expect(c.families.IPv4!.nodePortAddresses).toEqual(['192.0.2.99']);
  });
});

describe('rulesetConfigFor: the Node addresses', () => {
  it('reads them as the API stores them (leading zeros, IPv6 spellings) and hands them on canonical, so the config validates', () => {
    const node = {
      name: 'n1',
      resourceVersion: '1',
      addresses: [
        { type: 'InternalIP' as const, address: '010.000.001.007' },
        { type: 'InternalIP' as const, address: 'FD00:0:0::7' },
        { type: 'ExternalIP' as const, address: '::ffff:198.51.100.7' },
      ],
      podCIDRs: [],
    };
    const c = validateRulesetConfig(rulesetConfigFor(options([]), node, NO_OFFLOAD));
    expect(c.families.IPv4?.nodeIPs).toEqual(['10.0.1.7', '198.51.100.7']);
    expect(c.families.IPv6?.nodeIPs).toEqual(['fd00::7']);
    expect(c.families.IPv4?.nodePortAddresses).toEqual(['10.0.1.7']);
    expect(c.families.IPv6?.nodePortAddresses).toEqual(['fd00::7']);
  });
});

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

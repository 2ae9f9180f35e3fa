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

import { describe, expect, it } from 'vitest';
import {
  DEFAULT_FEATURE_GATES,
  FeatureGateError,
  featureGatesFromMap,
  formatFeatureGates,
  parseFeatureGates,
} from '../../src/config/feature-gates.ts';

describe('feature gates', () => {
  it('has the documented defaults', () => {
    expect(DEFAULT_FEATURE_GATES).toEqual({
      TopologyAwareProxying: false,
      LoadBalancerIPMode: true,
      KubeProxyAcceleration: false,
    });
    expect(parseFeatureGates('')).toEqual(DEFAULT_FEATURE_GATES);
  });

  it.each([
    ['TopologyAwareProxying=true', { TopologyAwareProxying: true, LoadBalancerIPMode: true, KubeProxyAcceleration: false }],
    ['TopologyAwareProxying=false', { TopologyAwareProxying: false, LoadBalancerIPMode: true, KubeProxyAcceleration: false }],
    [
      'LoadBalancerIPMode=false,KubeProxyAcceleration=false',
      { TopologyAwareProxying: false, LoadBalancerIPMode: false, KubeProxyAcceleration: false },
    ],
    ['AllAlpha=true', { TopologyAwareProxying: true, LoadBalancerIPMode: true, KubeProxyAcceleration: true }],
    ['AllAlpha=false', { TopologyAwareProxying: false, LoadBalancerIPMode: true, KubeProxyAcceleration: false }],
    ['AllAlpha=true,TopologyAwareProxying=false', { TopologyAwareProxying: false, LoadBalancerIPMode: true, KubeProxyAcceleration: true }],
    ['AllBeta=false', { TopologyAwareProxying: false, LoadBalancerIPMode: false, KubeProxyAcceleration: false }],
    [
      'NFTablesProxyMode=true,ServiceTrafficDistribution=true,LoggingAlphaOptions=true',
      { TopologyAwareProxying: false, LoadBalancerIPMode: true, KubeProxyAcceleration: false },
    ],
    ['--feature-gates=TopologyAwareProxying=True', { TopologyAwareProxying: true, LoadBalancerIPMode: true, KubeProxyAcceleration: false }],
    [
      ' TopologyAwareProxying = 1 , LoadBalancerIPMode=F ',
      { TopologyAwareProxying: true, LoadBalancerIPMode: false, KubeProxyAcceleration: false },
    ],
    [
      'KubeProxyAcceleration=false,KubeProxyAcceleration=TRUE',
      { TopologyAwareProxying: false, LoadBalancerIPMode: true, KubeProxyAcceleration: true },
    ],
  ])('%j', (text, expected) => {
    expect(parseFeatureGates(text)).toEqual(expected);
  });

  it.each([
    ['Nope=true', 'ERR_FEATURE_GATE_UNKNOWN', 'Nope'],
    ['topologyawareproxying=true', 'ERR_FEATURE_GATE_UNKNOWN', 'topologyawareproxying'],
    ['TopologyAwareProxying=yes', 'ERR_FEATURE_GATE_VALUE', 'TopologyAwareProxying'],
    ['TopologyAwareProxying=', 'ERR_FEATURE_GATE_VALUE', 'TopologyAwareProxying'],
    ['TopologyAwareProxying', 'ERR_FEATURE_GATE_SYNTAX', 'TopologyAwareProxying'],
    ['LoadBalancerIPMode=true,,', 'ERR_FEATURE_GATE_SYNTAX', ''],
    ['=true', 'ERR_FEATURE_GATE_SYNTAX', '=true'],
  ])('%j fails with %s', (text, code, item) => {
    let err: unknown;
    try {
      parseFeatureGates(text);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(FeatureGateError);
    expect((err as FeatureGateError).code).toBe(code);
    expect((err as FeatureGateError).item).toBe(item);
  });

  it('names the known gates when one is unknown', () => {
    expect(() => parseFeatureGates('PreferSameTrafficDistribution=true')).toThrow(
      new RegExp(
        'AllAlpha, AllBeta, ContextualLogging, KubeProxyAcceleration, KubeProxyDrainingTerminatingNodes, LoadBalancerIPMode, ' +
          'LoggingAlphaOptions, LoggingBetaOptions, MultiCIDRServiceAllocator, NFTablesProxyMode, ServiceTrafficDistribution, ' +
          'TopologyAwareHints, TopologyAwareProxying',
      ),
    );
  });

  it.each([
    ['MultiCIDRServiceAllocator=true', /ServiceCIDR objects are not watched/],
    ['NFTablesProxyMode=false', /is the nftables proxy mode/],
    ['KubeProxyDrainingTerminatingNodes=false', /locked to true/],
  ])('refuses %s, which cannot be honoured, with the reason', (text, reason) => {
    expect(() => parseFeatureGates(text)).toThrow(reason);
  });

  it('reads the config-file map form with the same checks', () => {
    expect(featureGatesFromMap({ TopologyAwareProxying: true, LoadBalancerIPMode: 'false' })).toEqual({
      TopologyAwareProxying: true,
      LoadBalancerIPMode: false,
      KubeProxyAcceleration: false,
    });
    expect(() => featureGatesFromMap({ Unknown: true })).toThrow(FeatureGateError);
    expect(() => featureGatesFromMap({ KubeProxyAcceleration: 1 })).toThrow(/expected a boolean/);
  });

  it('returns frozen values and formats every gate', () => {
    const g = parseFeatureGates('TopologyAwareProxying=true');
    expect(Object.isFrozen(g)).toBe(true);
    expect(Object.isFrozen(DEFAULT_FEATURE_GATES)).toBe(true);
    expect(formatFeatureGates(g)).toBe('KubeProxyAcceleration=false,LoadBalancerIPMode=true,TopologyAwareProxying=true');
  });
});

// The health signals read from the model after a sync, and the guarantee that
// the rules never answer for a health-check node port.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countNoLocalEndpoints, healthCheckServices, LocalEndpointSignals } from '../../src/model/local-endpoints.ts';
import type { ServicePort } from '../../src/model/service-port.ts';
import { renderTableText as renderText } from '../../src/nft/render-text.ts';
import { rulesetListings } from '../../src/reconciler/listing.ts';
import { renderRuleset } from '../../src/reconciler/ruleset.ts';
import { config, ep, local, sp } from '../reconciler/fixtures.ts';

describe('healthCheckServices', () => {
  it('counts distinct local ready addresses per Service, over its ports and families', () => {
    const a = local('10.244.0.11', 8080);
    const ports = [
      sp({
        serviceName: 'web',
        portName: 'http',
        healthCheckNodePort: 32000,
        externalPolicyLocal: true,
        nodePort: 30080,
        endpoints: [a, ep('10.244.1.5')],
      }),
      // Same pod, another port: still one endpoint.
      sp({
        serviceName: 'web',
        portName: 'https',
        port: 443,
        healthCheckNodePort: 32000,
        externalPolicyLocal: true,
        nodePort: 30443,
        endpoints: [local('10.244.0.11', 8443)],
      }),
      sp({
        serviceName: 'web',
        portName: 'http',
        family: 'IPv6',
        healthCheckNodePort: 32000,
        externalPolicyLocal: true,
        endpoints: [local('fd00:10:244::b')],
      }),
      // Local but terminating (not ready): not counted.
      sp({
        serviceName: 'drain',
        healthCheckNodePort: 32001,
        externalPolicyLocal: true,
        endpoints: [ep('10.244.0.12', 8080, { isLocal: true, ready: false, terminating: true })],
      }),
      // No health-check port: not served at all.
      sp({ serviceName: 'plain', endpoints: [a] }),
    ];
    expect([...healthCheckServices(ports).values()]).toEqual([
      { namespace: 'default', name: 'web', port: 32000, localEndpoints: 2 },
      { namespace: 'default', name: 'drain', port: 32001, localEndpoints: 0 },
    ]);
  });
});

describe('countNoLocalEndpoints', () => {
  it('counts service ports whose Local policy drops traffic here, per kind', () => {
    const ports = [
      sp({ serviceName: 'a', internalPolicyLocal: true, cluster: { kind: 'drop' } }),
      sp({ serviceName: 'b', externalPolicyLocal: true, nodePort: 30001, external: { kind: 'drop' } }),
      sp({ serviceName: 'c', externalPolicyLocal: true, nodePort: 30002, external: { kind: 'drop' }, family: 'IPv6' }),
      sp({ serviceName: 'd', externalPolicyLocal: true, nodePort: 30003, endpoints: [local('10.244.0.11')] }),
      sp({ serviceName: 'e', endpoints: [] }), // nothing anywhere: reject, not "no local"
    ];
    expect(countNoLocalEndpoints(ports)).toEqual({ internal: 1, external: 2 });
  });
});

describe('health-check node ports and the rules', () => {
  it('no rule, set or map element names a healthCheckNodePort', () => {
    const HC = 32199;
    const ports = [
      sp({
        serviceName: 'lb',
        nodePort: 30080,
        loadBalancerIPs: ['203.0.113.7'],
        externalPolicyLocal: true,
        healthCheckNodePort: HC,
        endpoints: [local('10.244.0.11')],
      }),
      sp({
        serviceName: 'gone',
        nodePort: 30081,
        externalPolicyLocal: true,
        healthCheckNodePort: HC + 1,
        external: { kind: 'drop' },
        endpoints: [ep('10.244.1.5')],
      }),
      sp({ serviceName: 'none', nodePort: 30082, externalPolicyLocal: true, healthCheckNodePort: HC + 2, endpoints: [] }),
    ];
    const text = rulesetListings(renderRuleset(ports, config()))
      .map((l) => renderText(l))
      .join('\n');
    // The NodePorts are there (the check is not vacuous), the health-check ports nowhere,
    // and no port range (a-b) of any rule covers them.
    expect(text).toContain('30080');
    expect(text).toContain('30082');
    for (const port of [HC, HC + 1, HC + 2]) expect(text).not.toContain(String(port));
    for (const [range, lo, hi] of text.matchAll(/\b(\d+)-(\d+)\b/g)) {
      for (const port of [HC, HC + 1, HC + 2]) expect(port >= Number(lo) && port <= Number(hi), `${range} covers ${port}`).toBe(false);
    }
  });
});

describe('LocalEndpointSignals', () => {
  // Versions of a few ports (same ids, other endpoints or policies), as the change tracker would hand them out
  // (one health-check node port per Service: the model gives every port of a Service the same).
  const versions: ServicePort[] = [
    sp({ serviceName: 'web', healthCheckNodePort: 32000, externalPolicyLocal: true, nodePort: 30080, endpoints: [local('10.244.0.11')] }),
    sp({ serviceName: 'web', healthCheckNodePort: 32000, externalPolicyLocal: true, nodePort: 30080, external: { kind: 'drop' } }),
    sp({ serviceName: 'web', healthCheckNodePort: 32000, externalPolicyLocal: true, nodePort: 30080, endpoints: [local('10.244.0.12')] }),
    sp({ serviceName: 'web', nodePort: 30080, endpoints: [local('10.244.0.11')] }),
    sp({
      serviceName: 'web',
      portName: 'https',
      port: 443,
      healthCheckNodePort: 32000,
      externalPolicyLocal: true,
      endpoints: [local('10.244.0.11', 8443)],
    }),
    sp({
      serviceName: 'web',
      portName: 'https',
      port: 443,
      healthCheckNodePort: 32000,
      externalPolicyLocal: true,
      endpoints: [local('10.244.0.13')],
    }),
    sp({ serviceName: 'web', family: 'IPv6', healthCheckNodePort: 32000, externalPolicyLocal: true, endpoints: [local('fd00:10:244::b')] }),
    sp({ serviceName: 'a', internalPolicyLocal: true, cluster: { kind: 'drop' } }),
    sp({ serviceName: 'a', internalPolicyLocal: true, endpoints: [local('10.244.0.14')] }),
    sp({
      serviceName: 'b',
      externalPolicyLocal: true,
      internalPolicyLocal: true,
      nodePort: 30001,
      cluster: { kind: 'drop' },
      external: { kind: 'drop' },
    }),
    sp({ serviceName: 'b', externalPolicyLocal: true, nodePort: 30001, healthCheckNodePort: 32003, external: { kind: 'drop' } }),
  ];
  const sorted = (m: Map<string, unknown>) => [...m.entries()].sort(([a], [b]) => a.localeCompare(b));

  it('kept up to date by changes, it says what a walk over every port says', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ pick: fc.nat(versions.length - 1), remove: fc.boolean() }), { maxLength: 40 }), (steps) => {
        const model = new Map<string, ServicePort>();
        const signals = new LocalEndpointSignals();
        for (const { pick, remove } of steps) {
          const v = versions[pick]!;
          const previous = model.get(v.id);
          if (remove) model.delete(v.id);
          else model.set(v.id, v);
          signals.apply([{ previous, current: remove ? undefined : v }]);
          expect(signals.noLocalEndpoints).toEqual(countNoLocalEndpoints(model.values()));
          expect(sorted(signals.healthCheckServices())).toEqual(sorted(healthCheckServices(model.values())));
        }
      }),
    );
  });
});

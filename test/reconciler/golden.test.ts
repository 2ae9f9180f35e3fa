import { describe, expect, it } from 'vitest';
import type { ServicePort } from '../../src/model/service-port.ts';
import { renderTableText as renderText } from '../../src/nft/render-text.ts';
import { validateOperations } from '../../src/nft/transaction.ts';
import { planFullSync } from '../../src/reconciler/full-sync.ts';
import { rulesetListings } from '../../src/reconciler/listing.ts';
import { renderRuleset } from '../../src/reconciler/ruleset.ts';
import { sp } from './fixtures.ts';
import { GOLDENS } from './goldens.ts';

// Golden files were reviewed by hand against kube-proxy's nftables mode; a diff
// here is a change to what operators see and must be reviewed again.

describe('golden rulesets', () => {
  for (const g of GOLDENS) {
    it(`${g.name} renders as reviewed`, async () => {
      const r = renderRuleset(g.ports, g.config);
      expect(r.problems).toEqual([]);
      const text = rulesetListings(r)
        .map((l) => renderText(l))
        .join('\n');
      await expect(text).toMatchFileSnapshot(`golden/${g.name}.nft`);
    });

    it(`${g.name} is a valid transaction`, () => {
      const r = renderRuleset(g.ports, g.config);
      expect(() => validateOperations(planFullSync(r, 'replace').ops)).not.toThrow();
    });
  }
});

// Every feature of a ServicePort is in at least one golden, and every field of
// ServicePort is covered by a feature: adding a field fails here until a golden shows it.
const FEATURES: Array<{ name: string; fields: Array<keyof ServicePort>; has: (p: ServicePort) => boolean }> = [
  { name: 'ClusterIP', fields: ['clusterIP', 'port'], has: (p) => p.clusterIP !== undefined },
  { name: 'no ClusterIP of this family', fields: ['clusterIP'], has: (p) => p.clusterIP === undefined },
  { name: 'NodePort', fields: ['nodePort'], has: (p) => p.nodePort !== undefined },
  { name: 'externalIPs', fields: ['externalIPs'], has: (p) => p.externalIPs.length > 0 },
  { name: 'LoadBalancer IPs', fields: ['loadBalancerIPs'], has: (p) => p.loadBalancerIPs.length > 0 },
  { name: 'loadBalancerSourceRanges', fields: ['loadBalancerSourceRanges'], has: (p) => p.loadBalancerSourceRanges.length > 0 },
  { name: 'session affinity', fields: ['sessionAffinityTimeout'], has: (p) => p.sessionAffinityTimeout !== undefined },
  { name: 'eTP Local', fields: ['externalPolicyLocal'], has: (p) => p.externalPolicyLocal },
  { name: 'iTP Local', fields: ['internalPolicyLocal'], has: (p) => p.internalPolicyLocal },
  { name: 'health check NodePort', fields: ['healthCheckNodePort'], has: (p) => p.healthCheckNodePort !== undefined },
  { name: 'cluster endpoints', fields: ['cluster'], has: (p) => p.cluster.kind === 'endpoints' },
  { name: 'cluster reject', fields: ['cluster'], has: (p) => p.cluster.kind === 'reject' },
  { name: 'cluster drop', fields: ['cluster'], has: (p) => p.cluster.kind === 'drop' },
  { name: 'external endpoints', fields: ['external'], has: (p) => p.external.kind === 'endpoints' && p.nodePort !== undefined },
  { name: 'external reject', fields: ['external'], has: (p) => p.external.kind === 'reject' && p.nodePort !== undefined },
  { name: 'external drop', fields: ['external'], has: (p) => p.external.kind === 'drop' && p.nodePort !== undefined },
  {
    name: 'several endpoints (cascade)',
    fields: ['allEndpoints'],
    has: (p) => p.cluster.kind === 'endpoints' && p.cluster.endpoints.length >= 3,
  },
  { name: 'local endpoint', fields: ['allEndpoints'], has: (p) => p.allEndpoints.some((e) => e.isLocal) },
  { name: 'terminating endpoint', fields: ['allEndpoints'], has: (p) => p.allEndpoints.some((e) => e.terminating) },
  { name: 'TCP', fields: ['protocol'], has: (p) => p.protocol === 'TCP' },
  { name: 'UDP', fields: ['protocol'], has: (p) => p.protocol === 'UDP' },
  { name: 'SCTP', fields: ['protocol'], has: (p) => p.protocol === 'SCTP' },
  { name: 'IPv4', fields: ['family'], has: (p) => p.family === 'IPv4' },
  { name: 'IPv6', fields: ['family'], has: (p) => p.family === 'IPv6' },
  { name: 'unnamed port', fields: ['portName'], has: (p) => p.portName === '' },
  { name: 'named port', fields: ['portName', 'namespace', 'serviceName', 'id'], has: (p) => p.portName !== '' },
];

describe('golden coverage', () => {
  const ports = GOLDENS.flatMap((g) => g.ports);
  for (const f of FEATURES) {
    it(`some golden shows: ${f.name}`, () => {
      expect(ports.some(f.has)).toBe(true);
    });
  }

  it('every ServicePort field is covered by a feature', () => {
    const all = sp({ nodePort: 1, sessionAffinityTimeout: 1, healthCheckNodePort: 2 });
    const covered = new Set(FEATURES.flatMap((f) => f.fields));
    expect(Object.keys(all).filter((k) => !covered.has(k as keyof ServicePort))).toEqual([]);
  });
});

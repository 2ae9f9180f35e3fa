// Topology hints and spec.trafficDistribution, as kube-proxy applies them, and
// how they combine with KEP-2030 slice subsetting (subset first, hints within).

import { describe, expect, it } from 'vitest';
import { buildServicePorts } from '../../src/model/build-service-ports.ts';
import type { EndpointInfo, NodeInfo, ServiceInfo } from '../../src/k8s/types.ts';
import { NODE, config, ep, node, only, service, servingTerminating, show, slice } from './fixtures.ts';

const zh = (...forZones: string[]) => ({ hints: { forZones, forNodes: [] as string[] } });
const nh = (forNodes: string[], forZones: string[] = []) => ({ hints: { forZones, forNodes } });

function run(endpoints: EndpointInfo[], opts: { svc?: ServiceInfo; node?: NodeInfo; gates?: object } = {}) {
  const { ports } = buildServicePorts(opts.svc ?? service(), [slice('web-1', endpoints)], opts.node ?? node(), config(opts.gates));
  return only(ports);
}

// The endpoints an EndpointSlice controller writes for a 3-zone service.
const a1 = ep('10.0.1.1', { zone: 'zone-a', ...zh('zone-a') });
const a2 = ep('10.0.1.2', { zone: 'zone-a', ...zh('zone-a') });
const b1 = ep('10.0.2.1', { zone: 'zone-b', ...zh('zone-b') });
const c1 = ep('10.0.3.1', { zone: 'zone-c', ...zh('zone-c', 'zone-a') });

describe('zone hints (hints.forZones)', () => {
  it.each([
    [
      'every ready endpoint hinted, some for our zone -> only those',
      [a1, a2, b1, c1],
      node(),
      ['10.0.1.1:8080', '10.0.1.2:8080', '10.0.3.1:8080'],
    ],
    ['a hint can name several zones', [b1, c1], node(), ['10.0.3.1:8080']],
    [
      'one ready endpoint without hints -> no hint filtering',
      [a1, b1, ep('10.0.4.1')],
      node(),
      ['10.0.1.1:8080', '10.0.2.1:8080', '10.0.4.1:8080'],
    ],
    [
      'a not-ready endpoint without hints does not disable hints',
      [a1, b1, ep('10.0.4.1', { ready: false, serving: false })],
      node(),
      ['10.0.1.1:8080'],
    ],
    ['no endpoint hinted for our zone -> no hint filtering', [b1], node(), ['10.0.2.1:8080']],
    ['node without a zone label -> no hint filtering', [a1, b1], node({ zone: undefined }), ['10.0.1.1:8080', '10.0.2.1:8080']],
    ['node with an empty zone label -> no hint filtering', [a1, b1], node({ zone: '' }), ['10.0.1.1:8080', '10.0.2.1:8080']],
    [
      'the serving-terminating fallback is not hint-filtered (nothing is ready anywhere)',
      [servingTerminating('10.0.1.9', zh('zone-a')), servingTerminating('10.0.2.9', zh('zone-b'))],
      node(),
      ['10.0.1.9:8080', '10.0.2.9:8080'],
    ],
  ] as const)('%s', (_, endpoints, n, expected) => {
    expect(show(run([...endpoints], { node: n }).cluster)).toEqual(expected);
  });

  it('hints narrow Cluster policies only: Local policies and allEndpoints ignore them', () => {
    const localB = ep('10.0.2.7', { nodeName: NODE, zone: 'zone-b', ...zh('zone-b') });
    const svc = service({ type: 'LoadBalancer', externalTrafficPolicy: 'Local' });
    const p = run([a1, b1, localB], { svc });
    expect(show(p.cluster)).toEqual(['10.0.1.1:8080']);
    expect(show(p.external)).toEqual(['10.0.2.7:8080']);
    expect(show({ kind: 'endpoints', endpoints: p.allEndpoints })).toEqual(['10.0.1.1:8080', '10.0.2.7:8080']);
    const itpLocal = run([a1, b1, localB], { svc: service({ internalTrafficPolicy: 'Local' }) });
    expect(show(itpLocal.cluster)).toEqual(['10.0.2.7:8080']);
  });
});

describe('spec.trafficDistribution (through the hints the controller writes)', () => {
  const sameNode = [
    ep('10.0.1.1', { nodeName: NODE, zone: 'zone-a', ...nh([NODE], ['zone-a']) }),
    ep('10.0.1.2', { nodeName: 'node-a2', zone: 'zone-a', ...nh(['node-a2'], ['zone-a']) }),
    ep('10.0.2.1', { nodeName: 'node-b', zone: 'zone-b', ...nh(['node-b'], ['zone-b']) }),
  ];
  it.each([
    ['PreferClose: zone hints', 'PreferClose', [a1, a2, b1], ['10.0.1.1:8080', '10.0.1.2:8080']],
    ['PreferSameZone: zone hints', 'PreferSameZone', [a1, a2, b1], ['10.0.1.1:8080', '10.0.1.2:8080']],
    ["PreferSameNode: this node's endpoints", 'PreferSameNode', sameNode, ['10.0.1.1:8080']],
    ['PreferSameNode, none for this node -> falls back to zone hints', 'PreferSameNode', sameNode.slice(1), ['10.0.1.2:8080']],
    [
      'PreferSameNode, an endpoint without node hints -> zone hints',
      'PreferSameNode',
      [...sameNode, ep('10.0.1.3', { zone: 'zone-a', ...zh('zone-a') })],
      ['10.0.1.1:8080', '10.0.1.2:8080', '10.0.1.3:8080'],
    ],
    [
      'PreferSameNode, no node or zone hint for us -> all',
      'PreferSameNode',
      [ep('10.0.2.1', nh(['node-b'], ['zone-b'])), ep('10.0.3.1', nh(['node-c'], ['zone-c']))],
      ['10.0.2.1:8080', '10.0.3.1:8080'],
    ],
    ['set but no hints written (yet) -> all', 'PreferClose', [ep('10.0.1.1'), ep('10.0.2.1')], ['10.0.1.1:8080', '10.0.2.1:8080']],
    ['unset, hints from the topology-mode annotation -> hints still apply', undefined, [a1, b1], ['10.0.1.1:8080']],
    ['an unknown value, no hints -> all', 'PreferMars', [ep('10.0.1.1'), ep('10.0.2.1')], ['10.0.1.1:8080', '10.0.2.1:8080']],
  ] as const)('%s', (_, trafficDistribution, endpoints, expected) => {
    const svc = service();
    if (trafficDistribution !== undefined) svc.trafficDistribution = trafficDistribution;
    expect(show(run([...endpoints], { svc }).cluster)).toEqual(expected);
  });

  it('PreferSameNode works on a node without a zone label (node hints need no zone)', () => {
    const svc = service({ trafficDistribution: 'PreferSameNode' });
    expect(show(run(sameNode, { svc, node: node({ zone: undefined }) }).cluster)).toEqual(['10.0.1.1:8080']);
  });
});

describe('KEP-2030 subsetting and hints combined: subset first, hints within the subset', () => {
  const ON = { TopologyAwareProxying: true };
  const regionSlice = slice('web-region-1', [a1, b1], { forRegion: 'region-1' });
  const unhinted = slice('web-any', [ep('10.9.0.1')]);

  it('hints narrow the chosen region subset', () => {
    const p = only(buildServicePorts(service(), [regionSlice, unhinted], node(), config(ON)).ports);
    expect(show(p.cluster)).toEqual(['10.0.1.1:8080']);
  });

  it('an unhinted endpoint outside the subset does not disable hints; inside it, it does', () => {
    // gate off: the unlabelled slice's unhinted endpoint is in the set, so no hint filtering
    const off = only(buildServicePorts(service(), [regionSlice, unhinted], node(), config({ TopologyAwareProxying: false })).ports);
    expect(show(off.cluster)).toEqual(['10.0.1.1:8080', '10.0.2.1:8080', '10.9.0.1:8080']);
    const mixed = slice('web-region-1', [a1, b1, ep('10.0.9.9')], { forRegion: 'region-1' });
    const on = only(buildServicePorts(service(), [mixed, unhinted], node(), config(ON)).ports);
    expect(show(on.cluster)).toEqual(['10.0.1.1:8080', '10.0.2.1:8080', '10.0.9.9:8080']);
  });

  it('hints for our zone outside the subset are not used', () => {
    const zoneB = slice('web-zone-b', [ep('10.0.2.1', zh('zone-b'))], { forZone: 'zone-b' });
    const regionWithA = slice('web-region-1', [ep('10.1.0.1', zh('zone-a')), ep('10.1.0.2', zh('zone-b'))], { forRegion: 'region-1' });
    const p = only(buildServicePorts(service(), [zoneB, regionWithA], node({ zone: 'zone-b' }), config(ON)).ports);
    expect(show(p.cluster)).toEqual(['10.0.2.1:8080']);
  });
});

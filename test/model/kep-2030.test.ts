// KEP-2030 Topology Aware Proxying: EndpointSlices labelled for-zone / for-region.
// Test names quote the KEP's unit test plan; the extra cases pin down how
// unlabelled slices, missing node labels and Local policies combine with it.

import { describe, expect, it } from 'vitest';
import { buildServicePorts } from '../../src/model/build-service-ports.ts';
import { ServiceChangeTracker } from '../../src/model/change-tracker.ts';
import type { EndpointSliceInfo, NodeInfo, ServiceInfo } from '../../src/k8s/types.ts';
import { NODE, config, ep, node, only, service, servingTerminating, show, slice } from './fixtures.ts';

const ON = { TopologyAwareProxying: true };
const OFF = { TopologyAwareProxying: false };

function clusterOf(slices: EndpointSliceInfo[], n: NodeInfo | undefined, gates = ON, svc: ServiceInfo = service()) {
  return show(only(buildServicePorts(svc, slices, n, config(gates)).ports).cluster);
}

const zoneA = slice('web-zone-a', [ep('10.0.1.1', { zone: 'zone-a' })], { forZone: 'zone-a' });
const zoneB = slice('web-zone-b', [ep('10.0.2.1', { zone: 'zone-b' })], { forZone: 'zone-b' });
const region1 = slice('web-region-1', [ep('10.1.0.1')], { forRegion: 'region-1' });
const region2 = slice('web-region-2', [ep('10.2.0.1')], { forRegion: 'region-2' });
const unlabelled = slice('web-any', [ep('10.9.0.1')]);

describe('KEP-2030 test plan', () => {
  it('"Ensure kube-proxy will continue to consume all EndpointSlices when this feature is disabled."', () => {
    const all = ['10.0.1.1:8080', '10.0.2.1:8080', '10.1.0.1:8080', '10.2.0.1:8080', '10.9.0.1:8080'];
    expect(clusterOf([zoneA, zoneB, region1, region2, unlabelled], node(), OFF)).toEqual(all);
    // the gate is alpha, so off by default: the defaults consume every slice, as kube-proxy does
    expect(show(only(buildServicePorts(service(), [zoneA, zoneB, region1, region2, unlabelled], node(), config()).ports).cluster)).toEqual(
      all,
    );
    // turned on, the same node uses only its zone's slice
    expect(clusterOf([zoneA, zoneB, region1, region2, unlabelled], node(), ON)).not.toEqual(all);
  });

  it(
    '"Ensure EndpointSlices delivered to a specific zone will be consumed by kube-proxy running in the same zone when ' +
      'this feature is enabled."',
    () => {
      expect(clusterOf([zoneA, zoneB], node({ zone: 'zone-a' }))).toEqual(['10.0.1.1:8080']);
      expect(clusterOf([zoneA, zoneB], node({ zone: 'zone-b' }))).toEqual(['10.0.2.1:8080']);
    },
  );

  it(
    '"Ensure EndpointSlices delivered to a specific zone will not be consumed by kube-proxy running in a different zone ' +
      'when this feature is enabled."',
    () => {
      // zone-b's node has its own slice, so zone-a's is not consumed there, nor region or unlabelled ones
      expect(clusterOf([zoneA, zoneB, region1, unlabelled], node({ zone: 'zone-b' }))).toEqual(['10.0.2.1:8080']);
    },
  );

  it(
    '"Ensure EndpointSlices delivered to a specific region will be consumed by kube-proxy running in the same region ' +
      'when this feature is enabled."',
    () => {
      expect(clusterOf([region1, region2], node({ zone: 'zone-a', region: 'region-1' }))).toEqual(['10.1.0.1:8080']);
      expect(clusterOf([region1, region2], node({ zone: 'zone-x', region: 'region-2' }))).toEqual(['10.2.0.1:8080']);
    },
  );

  it(
    '"Ensure EndpointSlices delivered to a specific region will not be consumed by kube-proxy running in a different ' +
      'region when this feature is enabled."',
    () => {
      expect(clusterOf([region1, region2, unlabelled], node({ region: 'region-2' }))).toEqual(['10.2.0.1:8080']);
    },
  );

  it(
    '"Ensure transition between EndpointSlices without zone specified to EndpointSlices with zone specified results in ' +
      'appropriate iptables rules without leftover endpoints."',
    () => {
      const tracker = new ServiceChangeTracker(config(ON));
      tracker.onNode(node({ zone: 'zone-a' }), 0);
      tracker.onService({ type: 'upsert', key: 'default/web', object: service() }, 1);
      // before: one unlabelled slice with the old pods
      const before = slice('web-shared', [ep('10.0.9.1', { zone: 'zone-a' }), ep('10.0.9.2', { zone: 'zone-b' })]);
      tracker.onEndpointSlice({ type: 'upsert', key: 'default/web-shared', object: before }, 2);
      let changes = tracker.drain().changes;
      expect(changes.map((c) => c.kind)).toEqual(['added']);
      const first = only(changes);
      expect(show(first.kind === 'added' ? first.current.cluster : { kind: 'reject' })).toEqual(['10.0.9.1:8080', '10.0.9.2:8080']);

      // during: the controller publishes per-zone slices (new pods) while the old slice still exists
      tracker.onEndpointSlice({ type: 'upsert', key: 'default/web-zone-a', object: zoneA }, 3);
      tracker.onEndpointSlice({ type: 'upsert', key: 'default/web-zone-b', object: zoneB }, 4);
      changes = tracker.drain().changes;
      const during = only(changes);
      expect(during.kind).toBe('updated');
      expect(during.kind === 'updated' && show(during.current.cluster)).toEqual(['10.0.1.1:8080']);
      expect(during.kind === 'updated' && during.current.allEndpoints.map((e) => e.ip)).toEqual(['10.0.1.1']);
      expect(during.triggeredAt).toBe(3);

      // after: the unlabelled slice goes; nothing of it remains anywhere
      tracker.onEndpointSlice({ type: 'delete', key: 'default/web-shared', object: before }, 5);
      expect(tracker.drain().changes).toEqual([]);
      const now = only([...tracker.servicePorts()]);
      const everyIp = [
        ...now.allEndpoints,
        ...(now.cluster.kind === 'endpoints' ? now.cluster.endpoints : []),
        ...(now.external.kind === 'endpoints' ? now.external.endpoints : []),
      ].map((e) => e.ip);
      expect(everyIp.filter((ip) => ip.startsWith('10.0.9.'))).toEqual([]);
      expect(show(now.cluster)).toEqual(['10.0.1.1:8080']);

      // and a node in a zone without a slice of its own now falls back to the zone slices only
      tracker.onNode(node({ zone: 'zone-c' }), 6);
      const fallback = only(tracker.drain().changes);
      expect(fallback.kind === 'updated' && show(fallback.current.cluster)).toEqual(['10.0.1.1:8080', '10.0.2.1:8080']);
    },
  );

  it('"Ensure endpoints from other zones will be used as a fallback if no endpoints have been delivered to the zone."', () => {
    expect(clusterOf([zoneA, zoneB], node({ zone: 'zone-c', region: 'region-9' }))).toEqual(['10.0.1.1:8080', '10.0.2.1:8080']);
  });
});

describe('KEP-2030: precise rules beyond the test plan', () => {
  it.each([
    // slices, node zone, node region -> cluster endpoints
    ['zone slices beat region and unlabelled slices', [zoneA, region1, unlabelled], 'zone-a', 'region-1', ['10.0.1.1:8080']],
    ['no zone slice for us: region slices, not unlabelled ones', [zoneB, region1, unlabelled], 'zone-a', 'region-1', ['10.1.0.1:8080']],
    [
      'neither: every slice, unlabelled and other zones alike',
      [zoneB, region2, unlabelled],
      'zone-a',
      'region-1',
      ['10.0.2.1:8080', '10.2.0.1:8080', '10.9.0.1:8080'],
    ],
    ['only unlabelled slices: all of them, as without the gate', [unlabelled], 'zone-a', 'region-1', ['10.9.0.1:8080']],
    [
      'node without a zone label: zone filtering off, region still applies',
      [zoneA, region1, unlabelled],
      undefined,
      'region-1',
      ['10.1.0.1:8080'],
    ],
    [
      'node without zone or region labels: every slice',
      [zoneA, region1, unlabelled],
      undefined,
      undefined,
      ['10.0.1.1:8080', '10.1.0.1:8080', '10.9.0.1:8080'],
    ],
    [
      "a slice with both labels is a zone slice (not consumed as the region's)",
      [slice('web-both', [ep('10.0.3.1')], { forZone: 'zone-c', forRegion: 'region-1' }), region1],
      'zone-a',
      'region-1',
      ['10.1.0.1:8080'],
    ],
    [
      'a slice with both labels, in our zone',
      [slice('web-both', [ep('10.0.3.1')], { forZone: 'zone-a', forRegion: 'region-1' }), region1],
      'zone-a',
      'region-1',
      ['10.0.3.1:8080'],
    ],
    [
      "our zone's slices with nothing ready fall back instead of black-holing",
      [slice('web-zone-a', [ep('10.0.1.1', { ready: false, serving: false })], { forZone: 'zone-a' }), zoneB],
      'zone-a',
      'region-1',
      ['10.0.2.1:8080'],
    ],
    [
      "our zone's slices with only terminating endpoints fall back to ready ones elsewhere",
      [slice('web-zone-a', [servingTerminating('10.0.1.1')], { forZone: 'zone-a' }), zoneB],
      'zone-a',
      'region-1',
      ['10.0.2.1:8080'],
    ],
    [
      'several slices for our zone are all used',
      [zoneA, slice('web-zone-a-2', [ep('10.0.1.2')], { forZone: 'zone-a' }), zoneB],
      'zone-a',
      'region-1',
      ['10.0.1.1:8080', '10.0.1.2:8080'],
    ],
  ] as const)('%s', (_, slices, zone, region, expected) => {
    const n = node();
    if (zone === undefined) delete n.zone;
    else n.zone = zone;
    if (region === undefined) delete n.region;
    else n.region = region;
    expect(clusterOf([...slices], n)).toEqual(expected);
  });

  it('no Node known yet (or deleted): every slice', () => {
    expect(clusterOf([zoneA, zoneB], undefined)).toEqual(['10.0.1.1:8080', '10.0.2.1:8080']);
  });

  it('the subset is everything the node uses: Local policy picks local endpoints within it', () => {
    const local = slice('web-any', [ep('10.9.0.5', { nodeName: NODE })]);
    const svc = service({ type: 'LoadBalancer', externalTrafficPolicy: 'Local' });
    const p = only(buildServicePorts(svc, [zoneA, local], node({ zone: 'zone-a' }), config(ON)).ports);
    expect(show(p.cluster)).toEqual(['10.0.1.1:8080']);
    expect(show(p.external)).toBe('drop');
    const off = only(buildServicePorts(svc, [zoneA, local], node({ zone: 'zone-a' }), config(OFF)).ports);
    expect(show(off.external)).toEqual(['10.9.0.5:8080']);
  });

  it('subsetting is decided per family of a dual-stack service', () => {
    const svc = service({ clusterIPs: ['10.96.0.10', 'fd00:10:96::a'], ipFamilies: ['IPv4', 'IPv6'] });
    const v6b = slice('web-v6-b', [ep('fd00:2::1')], { forZone: 'zone-b' });
    const v6any = slice('web-v6-any', [ep('fd00:9::1')]);
    const ports = buildServicePorts(svc, [zoneA, zoneB, v6b, v6any], node({ zone: 'zone-b' }), config(ON)).ports;
    expect(ports.map((p) => [p.family, show(p.cluster)])).toEqual([
      ['IPv4', ['10.0.2.1:8080']],
      ['IPv6', ['[fd00:2::1]:8080']],
    ]);
    const inA = buildServicePorts(svc, [zoneA, zoneB, v6b, v6any], node({ zone: 'zone-a' }), config(ON)).ports;
    expect(inA.map((p) => [p.family, show(p.cluster)])).toEqual([
      ['IPv4', ['10.0.1.1:8080']],
      ['IPv6', ['[fd00:2::1]:8080', '[fd00:9::1]:8080']],
    ]);
  });

  it('subsetting is decided per service port: a zone slice without the port does not count', () => {
    const svc = service({
      ports: [
        { name: 'http', protocol: 'TCP', port: 80 },
        { name: 'admin', protocol: 'TCP', port: 81 },
      ],
    });
    const adminEverywhere = slice('web-any', [ep('10.9.0.1')], {
      ports: [
        { name: 'http', protocol: 'TCP', port: 8080 },
        { name: 'admin', protocol: 'TCP', port: 8081 },
      ],
    });
    const [http, admin] = buildServicePorts(svc, [zoneA, adminEverywhere], node({ zone: 'zone-a' }), config(ON)).ports;
    expect(show(http!.cluster)).toEqual(['10.0.1.1:8080']);
    expect(show(admin!.cluster)).toEqual(['10.9.0.1:8081']);
  });
});

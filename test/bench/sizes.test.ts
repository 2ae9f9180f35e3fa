// The bench's size labels and its IPv6 cluster: what bench:js-scaling builds
// for "10kv6" is an IPv6 cluster the streams take whole, numbered as the IPv4 one.

import { describe, expect, it } from 'vitest';
import { parseSize, parseSizes } from '../../bench/sizes.ts';
import { agentFlags, clusterIP, nodeObject, podIP, serviceObject, sliceObject } from '../../bench/sync-cluster.ts';
import { normalizeIP } from '../../src/net/ip.ts';
import { StringPool } from '../../src/streams/intern.ts';
import { projectEndpointSlice } from '../../src/streams/project-endpoint-slice.ts';
import { projectNode } from '../../src/streams/project-node.ts';
import { projectService } from '../../src/streams/project-service.ts';

describe('bench sizes', () => {
  it('reads services, endpoints and a v6 suffix', () => {
    expect(parseSize('10k')).toEqual({ label: '10k', services: 10_000, endpoints: 10, family: 'IPv4' });
    expect(parseSize('10kv6')).toEqual({ label: '10kv6', services: 10_000, endpoints: 10, family: 'IPv6' });
    expect(parseSize('5k50v6')).toEqual({ label: '5k50v6', services: 5006, endpoints: 50, family: 'IPv6' });
    expect(parseSizes('1k, 2k3v6').map((s) => s.label)).toEqual(['1k', '2k3v6']);
    expect(() => parseSize('v6')).toThrow(/expected e\.g\. 10k/);
  });
});

describe('the IPv6 bench cluster', () => {
  it('numbers services and pods in canonical, distinct addresses within the flags ranges', () => {
    const flags = agentFlags('1s', 'map', 'IPv6');
    expect(flags).toContain('--cluster-cidr=fd00:128::/96');
    expect(flags).toContain('--service-cluster-ip-range=fd00:96::/108');
    const ips = [clusterIP(0, 'IPv6'), clusterIP(99_999, 'IPv6'), podIP(0, 0, 0, 10, 'IPv6'), podIP(99_999, 9, 1, 10, 'IPv6')];
    expect(ips).toEqual(['fd00:96::1', 'fd00:96::1:86a0', 'fd00:128::4', 'fd00:128::3d:901']);
    for (const ip of ips) expect(normalizeIP(ip)).toBe(ip);
    expect(new Set(Array.from({ length: 1000 }, (_, j) => podIP(j >> 3, j & 7, 0, 8, 'IPv6'))).size).toBe(1000);
  });

  it('projects whole, as the IPv4 one does', () => {
    const pool = new StringPool();
    const service = projectService(serviceObject(7, 'IPv6'), pool);
    const slice = projectEndpointSlice(sliceObject(7, undefined, 10, 'IPv6'), pool);
    const node = projectNode(nodeObject('IPv6'), pool);
    if (!service.ok || !slice.ok || !node.ok) throw new Error('not projected');
    expect(service.value.clusterIPs).toEqual([clusterIP(7, 'IPv6')]);
    expect(slice.value.addressType).toBe('IPv6');
    expect(slice.value.endpoints.map((e) => e.address)).toEqual(Array.from({ length: 10 }, (_, j) => podIP(7, j, 0, 10, 'IPv6')));
  });
});

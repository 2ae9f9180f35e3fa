import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { READY, SERVING, TERMINATING } from '../../src/k8s/endpoint-conditions.ts';
import { PARSER_INTERNALIZES_BELOW, StringPool } from '../../src/streams/intern.ts';
import { projectEndpointSlice } from '../../src/streams/project-endpoint-slice.ts';
import { projectNode } from '../../src/streams/project-node.ts';
import { projectService } from '../../src/streams/project-service.ts';
import * as f from '../fake-apiserver/fixtures.ts';

const pool = new StringPool();

function svc(spec: Record<string, unknown>, meta: Record<string, unknown> = {}) {
  const s = f.service('default', 'web', { spec });
  return { ...s, metadata: { ...s.metadata, resourceVersion: '7', ...meta } };
}

describe('projectService', () => {
  it('keeps what the proxy needs, with defaults', () => {
    const r = projectService(
      svc({
        type: 'LoadBalancer',
        clusterIPs: ['10.96.0.10', 'fd00:10:96::a'],
        ipFamilies: ['IPv4', 'IPv6'],
        ports: [{ name: 'http', port: 80, targetPort: 'web', nodePort: 30080 }],
        externalIPs: ['192.0.2.1'],
        sessionAffinity: 'ClientIP',
        externalTrafficPolicy: 'Local',
        healthCheckNodePort: 32000,
        loadBalancerSourceRanges: ['203.0.113.0/24'],
        trafficDistribution: 'PreferClose',
      }),
      pool,
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value).toEqual({
      namespace: 'default',
      name: 'web',
      resourceVersion: '7',
      type: 'LoadBalancer',
      clusterIPs: ['10.96.0.10', 'fd00:10:96::a'],
      ipFamilies: ['IPv4', 'IPv6'],
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 'web', nodePort: 30080 }],
      externalIPs: ['192.0.2.1'],
      loadBalancerIngress: [],
      loadBalancerSourceRanges: ['203.0.113.0/24'],
      sessionAffinity: 'ClientIP',
      sessionAffinityTimeoutSeconds: 10800,
      externalTrafficPolicy: 'Local',
      internalTrafficPolicy: 'Cluster',
      healthCheckNodePort: 32000,
      trafficDistribution: 'PreferClose',
    });
  });

  it('reads load-balancer ingress with ipMode', () => {
    const raw = {
      ...svc({ type: 'LoadBalancer' }),
      status: { loadBalancer: { ingress: [{ ip: '198.51.100.7', ipMode: 'Proxy' }, { ip: '198.51.100.8' }] } },
    };
    const r = projectService(raw, pool);
    expect(r.ok && r.value.loadBalancerIngress).toEqual([{ ip: '198.51.100.7', ipMode: 'Proxy' }, { ip: '198.51.100.8' }]);
  });

  it('keeps IPv4 with leading zeros for the model to normalise', () => {
    const r = projectService(svc({ clusterIP: '010.096.000.010', clusterIPs: ['010.096.000.010'] }), pool);
    expect(r.ok && r.value.clusterIPs).toEqual(['010.096.000.010']);
  });

  const bad: [string, Record<string, unknown>, Record<string, unknown>, RegExp][] = [
    ['clusterIP garbage', { clusterIP: 'ten.0.0.1', clusterIPs: ['ten.0.0.1'] }, {}, /clusterIPs\[0\] is not an IP/],
    ['clusterIP octet > 255', { clusterIPs: ['10.96.0.256'] }, {}, /not an IP/],
    ['port 0', { ports: [{ port: 0 }] }, {}, /port out of range/],
    ['port 65536', { ports: [{ port: 65536 }] }, {}, /port out of range/],
    ['port string', { ports: [{ port: '80' }] }, {}, /port out of range/],
    ['unknown protocol', { ports: [{ port: 80, protocol: 'ICMP' }] }, {}, /unknown protocol "ICMP"/],
    ['nodePort 70000', { ports: [{ port: 80, nodePort: 70000 }] }, {}, /nodePort out of range/],
    ['unknown type', { type: 'Weird' }, {}, /spec.type unknown/],
    ['externalIP garbage', { externalIPs: ['nope'] }, {}, /externalIPs\[0\] is not an IP/],
    ['bad source range', { loadBalancerSourceRanges: ['10.0.0.0/33'] }, {}, /not a CIDR/],
    ['bad policy', { externalTrafficPolicy: 'Nearby' }, {}, /externalTrafficPolicy unknown/],
    ['name too long', {}, { name: 'a'.repeat(64) }, /metadata.name longer than 63/],
    ['namespace too long', {}, { namespace: 'n'.repeat(64) }, /metadata.namespace longer than 63/],
    ['missing name', {}, { name: undefined }, /metadata.name missing/],
    ['two unnamed ports', { ports: [{ port: 80 }, { port: 81 }] }, {}, /unnamed port/],
    ['a port name with NUL', { ports: [{ port: 80, name: 'a\0b' }] }, {}, /spec.ports\[0\].name is not a DNS label/],
    [
      'a port name of 200 multibyte characters',
      { ports: [{ port: 80, name: 'é'.repeat(200) }] },
      {},
      /spec.ports\[0\].name longer than 63/,
    ],
    [
      'a port name of 30 multibyte characters',
      { ports: [{ port: 80, name: 'ü'.repeat(30) }] },
      {},
      /spec.ports\[0\].name is not a DNS label/,
    ],
    [
      'a port name with capitals',
      {
        ports: [
          { port: 80, name: 'Http' },
          { port: 81, name: 'b' },
        ],
      },
      {},
      /spec.ports\[0\].name is not a DNS label/,
    ],
    ['a port name of 64 characters', { ports: [{ port: 80, name: 'p'.repeat(64) }] }, {}, /longer than 63/],
    ['a port name that is not a string', { ports: [{ port: 80, name: 7 }] }, {}, /name is not a string/],
    ['a Service name starting with a digit', {}, { name: '1web' }, /metadata.name is not a DNS-1035 label/],
  ];
  it('accepts port names of 63 characters and a lone unnamed port, as the API server does', () => {
    const r = projectService(
      svc({
        ports: [
          { port: 80, name: `a${'-'.repeat(61)}z` },
          { port: 81, name: '9' },
        ],
      }),
      pool,
    );
    expect(r.ok && r.value.ports.map((p) => p.name)).toEqual([`a${'-'.repeat(61)}z`, '9']);
    expect(projectService(svc({ ports: [{ port: 80 }] }), pool).ok).toBe(true);
  });
  it.each(bad)('rejects %s', (_what, spec, meta, reason) => {
    const r = projectService(svc(spec, meta), pool);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(reason);
  });

  it('rejects an object without spec', () => {
    const r = projectService({ metadata: { namespace: 'a', name: 'b' } }, pool);
    expect(r).toEqual({ ok: false, reason: 'spec is not an object' });
  });
});

describe('projectService port lists', () => {
  it('shares one frozen list among Services with the same ports, and validates every other', () => {
    const p = new StringPool();
    const ports = [
      { name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 },
      { name: 'web', port: 81, targetPort: 'web', nodePort: 0 },
    ];
    const a = projectService(svc({ ports }), p);
    const b = projectService(svc({ ports: ports.map((x) => ({ ...x })) }), p);
    expect(a.ok && b.ok).toBe(true);
    if (!a.ok || !b.ok) return;
    expect(b.value.ports).toBe(a.value.ports);
    expect(Object.isFrozen(a.value.ports)).toBe(true);
    expect(a.value.ports).toEqual([
      { name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: undefined },
      { name: 'web', protocol: 'TCP', port: 81, targetPort: 'web', nodePort: undefined },
    ]);
    // A numeric string targetPort is the same port once read.
    const c = projectService(svc({ ports: [{ ...ports[0], targetPort: '8080' }, ports[1]] }), p);
    expect(c.ok && c.value.ports).toBe(a.value.ports);
    // Each of these differs from the pooled list in one field.
    const d = projectService(svc({ ports: [{ ...ports[0], nodePort: 30080 }, ports[1]] }), p);
    expect(d.ok && d.value.ports[0]!.nodePort).toBe(30080);
    const e = projectService(svc({ ports: [{ ...ports[0], protocol: 'UDP' }, ports[1]] }), p);
    expect(e.ok && e.value.ports[0]!.protocol).toBe('UDP');
    // A pooled list never stands in for an invalid one.
    expect(projectService(svc({ ports: [ports[0], { ...ports[0] }] }), p)).toEqual({
      ok: false,
      reason: 'spec.ports has the name "http" twice',
    });
    expect(projectService(svc({ ports: [ports[0], { ...ports[1], port: 0 }] }), p)).toEqual({
      ok: false,
      reason: 'spec.ports[1].port out of range: 0',
    });
  });
});

describe('projectEndpointSlice', () => {
  it('projects, interning repeated strings', () => {
    const raw = f.endpointSlice(
      'default',
      'web-abc',
      'web',
      [
        { ip: '10.244.1.5', node: 'node-a', zone: 'z1' },
        { ip: '10.244.2.5', ready: false, node: 'node-a', zone: 'z1' },
      ],
      {
        'endpointslice.kubernetes.io/for-zone': 'z1',
      },
    );
    const r = projectEndpointSlice(raw, pool);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value).toMatchObject({
      serviceName: 'web',
      addressType: 'IPv4',
      forZone: 'z1',
      ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
    });
    expect(r.value.endpoints).toEqual([
      { address: '10.244.1.5', conditions: READY | SERVING, nodeName: 'node-a', zone: 'z1' },
      { address: '10.244.2.5', conditions: 0, nodeName: 'node-a', zone: 'z1' },
    ]);
    expect(r.dropped).toBeUndefined();
  });

  it("packs each endpoint's conditions as kube-proxy reads them: ready and serving unless false, terminating only if true", () => {
    const conditions = [
      undefined,
      {},
      { ready: false },
      { serving: false },
      { terminating: true },
      { ready: false, serving: true, terminating: true },
      { ready: 'false', serving: 0, terminating: 'true' },
    ];
    const raw = f.endpointSlice('default', 'web-abc', 'web', [{ ip: '10.244.1.5' }]);
    raw.endpoints = conditions.map((c) => ({ addresses: ['10.244.1.5'], ...(c === undefined ? {} : { conditions: c }) }));
    const r = projectEndpointSlice(raw, pool);
    expect(r.ok && r.value.endpoints.map((e) => e.conditions)).toEqual([
      READY | SERVING,
      READY | SERVING,
      SERVING,
      READY,
      READY | SERVING | TERMINATING,
      SERVING | TERMINATING,
      READY | SERVING,
    ]);
  });

  it('drops bad ports and endpoints but keeps the rest (API server accepts them)', () => {
    const raw = f.endpointSlice(
      'default',
      'web-abc',
      'web',
      [{ ip: '10.244.1.5' }, { ip: '255.255.255.255' }, { ip: '010.244.001.007' }, { ip: 'fd00::1' }, { ip: '0.0.0.0' }],
      {},
      {
        ports: [
          { name: 'a', port: 0 },
          { name: 'b', port: -1 },
          { name: 'c', port: 65536 },
          { name: 'd', port: 53, protocol: 'UDP' },
          { name: 'e', port: 1, protocol: 'XTP' },
        ],
      },
    );
    const r = projectEndpointSlice(raw, pool);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.ports).toEqual([{ name: 'd', protocol: 'UDP', port: 53 }]);
    expect(r.value.endpoints.map((e) => e.address)).toEqual(['10.244.1.5', '010.244.001.007']);
    expect(r.dropped).toHaveLength(7);
  });

  it('reads IPv6 endpoint addresses with the IP codec: unroutable however spelled, no zone index', () => {
    const raw = f.endpointSlice(
      'default',
      'web-v6',
      'web',
      [{ ip: 'fd00::5' }, { ip: '0:0:0::1' }, { ip: 'FE80::1' }, { ip: 'fd00::6%eth0' }, { ip: '::ffff:010.0.0.7' }],
      {},
      {
        addressType: 'IPv6',
      },
    );
    const r = projectEndpointSlice(raw, pool);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.endpoints.map((e) => e.address)).toEqual(['fd00::5', '::ffff:010.0.0.7']);
    expect(r.dropped).toEqual([
      'endpoints[1] address 0:0:0::1 is not routable',
      'endpoints[2] address FE80::1 is not routable',
      'endpoints[3] address "fd00::6%eth0" is not IPv6',
    ]);
  });

  it('keeps only the first of the addresses of an endpoint (fungible, kube-proxy uses the first), after checking them all', () => {
    const raw = f.endpointSlice('default', 'web-abc', 'web', [{ ip: '10.244.1.5' }, { ip: '10.244.1.6' }]);
    const eps = (raw as unknown as { endpoints: Array<{ addresses: string[] }> }).endpoints;
    eps[0]!.addresses = ['10.244.1.5', '10.244.9.9'];
    eps[1]!.addresses = ['10.244.1.6', 'fd00::1'];
    const r = projectEndpointSlice(raw, pool);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.endpoints.map((e) => e.address)).toEqual(['10.244.1.5']);
    expect(r.dropped).toEqual(['endpoints[1] address "fd00::1" is not IPv4']);
  });

  it('shares one frozen port list among slices that list the same ports, and still drops bad ones', () => {
    const p = new StringPool();
    const ports = [
      { name: 'http', protocol: 'TCP', port: 8080 },
      { name: 'dns', protocol: 'UDP', port: 53 },
    ];
    const a = projectEndpointSlice(f.endpointSlice('default', 'a', 'web', [], {}, { ports }), p);
    const b = projectEndpointSlice(f.endpointSlice('other', 'b', 'api', [], {}, { ports: ports.map((x) => ({ ...x })) }), p);
    expect(a.ok && b.ok).toBe(true);
    if (!a.ok || !b.ok) return;
    expect(b.value.ports).toBe(a.value.ports);
    expect(Object.isFrozen(a.value.ports)).toBe(true);
    // The same set plus a bad port: the bad one is reported, the rest is the shared list.
    const c = projectEndpointSlice(f.endpointSlice('default', 'c', 'web', [], {}, { ports: [...ports, { name: 'x', port: 0 }] }), p);
    expect(c.ok && c.value.ports).toBe(a.value.ports);
    expect(c.ok && c.dropped).toEqual(['ports[2].port out of range: 0']);
    // Same numbers, another protocol: not the same list.
    const d = projectEndpointSlice(
      f.endpointSlice('default', 'd', 'web', [], {}, { ports: [{ ...ports[0], protocol: 'SCTP' }, ports[1]] }),
      p,
    );
    expect(d.ok && d.value.ports).toEqual([
      { name: 'http', protocol: 'SCTP', port: 8080 },
      { name: 'dns', protocol: 'UDP', port: 53 },
    ]);
  });

  it('keeps hints', () => {
    const raw = f.endpointSlice('default', 's', 'web', [{ ip: '10.244.1.5' }]);
    (raw.endpoints as Record<string, unknown>[])[0]!.hints = { forZones: [{ name: 'z1' }], forNodes: [{ name: 'node-a' }] };
    const r = projectEndpointSlice(raw, pool);
    expect(r.ok && r.value.endpoints[0]!.hints).toEqual({ forZones: ['z1'], forNodes: ['node-a'] });
  });

  it.each([
    ['no service label', { metadata: { namespace: 'default', name: 's', labels: {} } }, /kubernetes.io\/service-name missing/],
    ['bad addressType', { addressType: 'IPv5' }, /addressType unknown/],
    [
      'name too long',
      { metadata: { namespace: 'default', name: 'a'.repeat(254), labels: { 'kubernetes.io/service-name': 'web' } } },
      /longer than 253/,
    ],
  ])('rejects %s', (_w, over, reason) => {
    const r = projectEndpointSlice({ ...f.endpointSlice('default', 's', 'web', []), ...over }, pool);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(reason);
  });
});

describe('projectNode', () => {
  it('reads topology, addresses and pod CIDRs', () => {
    const r = projectNode(f.node('node-a', { 'topology.kubernetes.io/zone': 'z1', 'topology.kubernetes.io/region': 'r1' }), pool);
    expect(r.ok && r.value).toEqual({
      name: 'node-a',
      resourceVersion: '',
      zone: 'z1',
      region: 'r1',
      addresses: [{ type: 'InternalIP', address: '192.0.2.10' }],
      podCIDRs: ['10.244.1.0/24', 'fd00:10:244:1::/64'],
    });
  });
});

describe('projectNode: what /healthz reads of the Node', () => {
  it('keeps a deletionTimestamp and the autoscaler taint, and no other taint', () => {
    const raw = f.node('node-a');
    (raw.metadata as Record<string, unknown>).deletionTimestamp = '2026-11-25T12:00:00Z';
    (raw.spec as Record<string, unknown>).taints = [
      { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' },
      { key: 'ToBeDeletedByClusterAutoscaler', value: '1700000000', effect: 'NoSchedule' },
    ];
    const r = projectNode(raw, pool);
    expect(r.ok && r.value).toMatchObject({ deleting: true, taints: ['ToBeDeletedByClusterAutoscaler'] });
    const plain = f.node('node-a');
    (plain.spec as Record<string, unknown>).taints = [{ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }];
    const q = projectNode(plain, pool);
    expect(q.ok && 'taints' in q.value).toBe(false);
    expect(q.ok && 'deleting' in q.value).toBe(false);
  });
});

describe('projectEndpointSlice: the last-change trigger time', () => {
  it.each([
    ['2026-11-25T12:00:00Z', Date.UTC(2026, 10, 25, 12)],
    ['2026-11-25T13:00:00.5+01:00', Date.UTC(2026, 10, 25, 12, 0, 0, 500)],
    ['yesterday', undefined],
    [undefined, undefined],
  ])('reads %s', (value, expected) => {
    const raw = f.endpointSlice('default', 's', 'web', [{ ip: '10.244.1.5' }]);
    if (value !== undefined)
      (raw.metadata as Record<string, unknown>).annotations = { 'endpoints.kubernetes.io/last-change-trigger-time': value };
    const r = projectEndpointSlice(raw, pool);
    expect(r.ok && r.value.lastChangeTriggerTime).toBe(expected);
  });
});

describe('StringPool', () => {
  it('returns one instance per value', () => {
    const p = new StringPool();
    const a = p.intern(JSON.parse('"ip-10-0-1-23.ec2.internal"'));
    const b = p.intern(JSON.parse('"ip-10-0-1-23.ec2.internal"'));
    expect(a).toBe(b);
    expect(p.size).toBe(1);
  });

  it('leaves strings the JSON parser already internalizes to it', () => {
    const p = new StringPool();
    expect(p.intern('zone-a')).toBe('zone-a');
    expect(p.size).toBe(0);
  });

  it('relies on V8 internalizing short JSON string values (checked on this V8)', () => {
    // %IsInternalizedString needs --allow-natives-syntax: ask a child node.
    const json = `["${'x'.repeat(PARSER_INTERNALIZES_BELOW - 1)}","${'y'.repeat(PARSER_INTERNALIZES_BELOW)}"]`;
    const internalized = 'String([%IsInternalizedString(o[0]), %IsInternalizedString(o[1])])';
    const script = `const o = JSON.parse('${json}'); process.stdout.write(${internalized});`;
    const r = spawnSync(process.execPath, ['--allow-natives-syntax', '-e', script], { encoding: 'utf8' });
    // Everything about the child in the failure message: this once failed twice in a row locally, unexplained.
    expect(
      { out: r.stdout, status: r.status, signal: r.signal, stderr: r.stderr.slice(0, 500) },
      `${process.execPath} ${process.version}`,
    ).toEqual({ out: 'true,false', status: 0, signal: null, stderr: '' });
  });

  it('shares values equal by content, whatever their digest collisions', () => {
    const p = new StringPool();
    const same = (a: number[], b: number[]) => a.length === b.length && a.every((x, i) => x === b[i]);
    const a = p.share(1, [1, 2], same);
    expect(p.share(1, [1, 2], same)).toBe(a);
    const c = p.share(1, [3], same);
    expect(c).not.toBe(a);
    expect(p.share(1, [3], same)).toBe(c);
    expect(Object.isFrozen(a)).toBe(true);
    expect(p.size).toBe(2);
  });
});

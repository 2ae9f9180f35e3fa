import { describe, expect, it } from 'vitest';
import { buildServicePorts } from '../../src/model/build-service-ports.ts';
import type { ServiceInfo } from '../../src/k8s/types.ts';
import { byFamily, config, ep, node, only, service, show, slice } from './fixtures.ts';

const build = (svc: ServiceInfo, slices = [slice('web-1', [ep('10.0.1.1')])], gates = {}) =>
  buildServicePorts(svc, slices, node(), config(gates));

describe('which services produce ServicePorts', () => {
  it.each([
    ['headless (clusterIP None)', service({ clusterIPs: ['None'] })],
    ['headless dual-stack (None listed)', service({ clusterIPs: ['None', 'None'], ipFamilies: ['IPv4', 'IPv6'] })],
    ['no clusterIPs at all', service({ clusterIPs: [] })],
    ['ExternalName', service({ type: 'ExternalName', clusterIPs: [] })],
    ['ExternalName that kept a clusterIP', service({ type: 'ExternalName' })],
  ])('%s -> nothing', (_, svc) => {
    expect(build(svc).ports).toEqual([]);
  });

  it('a ClusterIP service: one ServicePort per port, ids naming ns/name/protocol/portName/family', () => {
    const svc = service({
      ports: [
        { name: 'http', protocol: 'TCP', port: 80 },
        { name: 'dns', protocol: 'UDP', port: 53 },
        { name: 'sig', protocol: 'SCTP', port: 9000 },
      ],
    });
    const slices = [
      slice('web-1', [ep('10.0.1.1')], {
        ports: [
          { name: 'http', protocol: 'TCP', port: 8080 },
          { name: 'dns', protocol: 'UDP', port: 5353 },
          { name: 'sig', protocol: 'SCTP', port: 9001 },
        ],
      }),
    ];
    const { ports, warnings } = build(svc, slices);
    expect(warnings).toEqual([]);
    expect(ports.map((p) => [p.id, p.clusterIP, p.port, show(p.cluster)])).toEqual([
      ['default/web/TCP/http/IPv4', '10.96.0.10', 80, ['10.0.1.1:8080']],
      ['default/web/UDP/dns/IPv4', '10.96.0.10', 53, ['10.0.1.1:5353']],
      ['default/web/SCTP/sig/IPv4', '10.96.0.10', 9000, ['10.0.1.1:9001']],
    ]);
    const p = ports[0]!;
    expect(p).toMatchObject({ namespace: 'default', serviceName: 'web', portName: 'http', protocol: 'TCP', family: 'IPv4' });
    expect(p.nodePort).toBeUndefined();
    expect(p.sessionAffinityTimeout).toBeUndefined();
    expect(p.healthCheckNodePort).toBeUndefined();
  });

  it('an unnamed single port has an empty port name in its id', () => {
    const svc = service({ ports: [{ name: '', protocol: 'TCP', port: 80, targetPort: 8080 }] });
    const slices = [slice('web-1', [ep('10.0.1.1')], { ports: [{ name: '', protocol: 'TCP', port: 8080 }] })];
    const p = only(build(svc, slices).ports);
    expect(p.id).toBe('default/web/TCP//IPv4');
    expect(show(p.cluster)).toEqual(['10.0.1.1:8080']);
  });
});

describe('dual-stack', () => {
  const svc = service({
    clusterIPs: ['fd00:10:96::a', '10.96.0.10'],
    ipFamilies: ['IPv6', 'IPv4'],
    type: 'LoadBalancer',
    ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 }],
    externalIPs: ['192.0.2.10', '2001:db8::10'],
    loadBalancerIngress: [{ ip: '198.51.100.7' }, { ip: '2001:db8:1::7' }, { hostname: 'lb.example.com' }],
    loadBalancerSourceRanges: ['203.0.113.0/25', '2001:db8:ff::/48'],
  });
  const slices = [
    slice('web-v4', [ep('10.0.1.1'), ep('10.0.1.2')]),
    slice('web-v6', [ep('fd00:1::1')]),
    slice('web-fqdn', [ep('web.example.com')], { addressType: 'FQDN' }),
  ];

  it('one ServicePort per family, primary family first, every field filtered to its family', () => {
    const { ports, warnings } = build(svc, slices);
    expect(warnings).toEqual([]);
    expect(ports.map((p) => p.id)).toEqual(['default/web/TCP/http/IPv6', 'default/web/TCP/http/IPv4']);
    const v6 = only(byFamily(ports, 'IPv6'));
    const v4 = only(byFamily(ports, 'IPv4'));
    expect(v6).toMatchObject({
      clusterIP: 'fd00:10:96::a',
      nodePort: 30080,
      externalIPs: ['2001:db8::10'],
      loadBalancerIPs: ['2001:db8:1::7'],
      loadBalancerSourceRanges: ['2001:db8:ff::/48'],
    });
    expect(show(v6.cluster)).toEqual(['[fd00:1::1]:8080']);
    expect(v4).toMatchObject({
      clusterIP: '10.96.0.10',
      nodePort: 30080,
      externalIPs: ['192.0.2.10'],
      loadBalancerIPs: ['198.51.100.7'],
      loadBalancerSourceRanges: ['203.0.113.0/25'],
    });
    expect(show(v4.cluster)).toEqual(['10.0.1.1:8080', '10.0.1.2:8080']);
  });

  it('a family with no slices of its own rejects while the other family has endpoints', () => {
    const { ports } = build(svc, [slices[0]!]);
    expect(show(only(byFamily(ports, 'IPv6')).cluster)).toBe('reject');
    expect(show(only(byFamily(ports, 'IPv4')).cluster)).toEqual(['10.0.1.1:8080', '10.0.1.2:8080']);
  });

  it('a single-stack service ignores slices and addresses of the other family', () => {
    const single = { ...svc, clusterIPs: ['10.96.0.10'], ipFamilies: ['IPv4' as const] };
    const { ports, warnings } = build(single, slices);
    expect(warnings).toEqual([]);
    const p = only(ports);
    expect(p.externalIPs).toEqual(['192.0.2.10']);
    expect(p.loadBalancerIPs).toEqual(['198.51.100.7']);
    expect(show(p.cluster)).toEqual(['10.0.1.1:8080', '10.0.1.2:8080']);
  });
});

describe('NodePort, LoadBalancer and external IPs', () => {
  it.each([
    ['NodePort', 'NodePort', 30080],
    ['LoadBalancer', 'LoadBalancer', 30080],
    ['ClusterIP (nodePort ignored, warned)', 'ClusterIP', undefined],
  ] as const)('%s', (_, type, expected) => {
    const { ports, warnings } = build(service({ type, ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 }] }));
    expect(only(ports).nodePort).toBe(expected);
    expect(warnings.map((w) => w.code)).toEqual(expected === undefined ? ['IGNORED_FIELD'] : []);
  });

  it('nodePort 0 means none', () => {
    const { ports, warnings } = build(service({ type: 'NodePort', ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 0 }] }));
    expect(only(ports).nodePort).toBeUndefined();
    expect(warnings).toEqual([]);
  });

  it('externalIPs are normalised and deduplicated', () => {
    const { ports } = build(service({ externalIPs: ['192.0.2.010', ' 192.0.2.10', '192.0.2.11'] }));
    expect(only(ports).externalIPs).toEqual(['192.0.2.10', '192.0.2.11']);
  });

  it('loadBalancerSourceRanges are trimmed, masked, and only kept for LoadBalancer services', () => {
    const ranges = [' 203.0.113.0/25', '198.51.100.9/24 '];
    expect(only(build(service({ type: 'LoadBalancer', loadBalancerSourceRanges: ranges })).ports).loadBalancerSourceRanges).toEqual([
      '203.0.113.0/25',
      '198.51.100.0/24',
    ]);
    expect(only(build(service({ type: 'NodePort', loadBalancerSourceRanges: ranges })).ports).loadBalancerSourceRanges).toEqual([]);
  });

  it('load balancer ingress on a service that is no longer a LoadBalancer is ignored with a warning', () => {
    const { ports, warnings } = build(service({ type: 'NodePort', loadBalancerIngress: [{ ip: '198.51.100.7' }] }));
    expect(only(ports).loadBalancerIPs).toEqual([]);
    expect(warnings).toMatchObject([{ code: 'IGNORED_FIELD', field: 'status.loadBalancer.ingress[0].ip' }]);
  });
});

describe('KEP-1860 LoadBalancer ipMode (gate LoadBalancerIPMode)', () => {
  const ingress = [
    { ip: '198.51.100.1', ipMode: 'VIP' as const },
    { ip: '198.51.100.2' },
    { ip: '198.51.100.3', ipMode: 'Proxy' as const },
    { hostname: 'lb.example.com' },
    { hostname: 'proxy.example.com', ipMode: 'Proxy' as const },
  ];
  const svc = service({ type: 'LoadBalancer', loadBalancerIngress: ingress });

  it('gate on (default): VIP and unset are programmed, Proxy is not; ipMode without ip warns', () => {
    const { ports, warnings } = build(svc);
    expect(only(ports).loadBalancerIPs).toEqual(['198.51.100.1', '198.51.100.2']);
    expect(warnings).toEqual([
      expect.objectContaining({
        code: 'IPMODE_WITHOUT_IP',
        object: 'Service default/web',
        field: 'status.loadBalancer.ingress[4].ipMode',
      }),
    ]);
  });

  it('gate off: every ingress IP is programmed, as before the KEP', () => {
    const { ports } = build(svc, undefined, { LoadBalancerIPMode: false });
    expect(only(ports).loadBalancerIPs).toEqual(['198.51.100.1', '198.51.100.2', '198.51.100.3']);
  });

  it('a dual-stack LB: ipMode applies per ingress, family per address', () => {
    const dual = service({
      type: 'LoadBalancer',
      clusterIPs: ['10.96.0.10', 'fd00:10:96::a'],
      ipFamilies: ['IPv4', 'IPv6'],
      loadBalancerIngress: [
        { ip: '198.51.100.1', ipMode: 'Proxy' },
        { ip: '2001:db8::1', ipMode: 'VIP' },
      ],
    });
    const { ports } = build(dual, []);
    expect(ports.map((p) => [p.family, p.loadBalancerIPs])).toEqual([
      ['IPv4', []],
      ['IPv6', ['2001:db8::1']],
    ]);
  });
});

describe('session affinity', () => {
  it.each([
    ['None', undefined, undefined, []],
    ['ClientIP', undefined, 10800, []],
    ['ClientIP', 60, 60, []],
    ['ClientIP', 86400, 86400, []],
    ['ClientIP', 0, 10800, ['INVALID_TIMEOUT']],
    ['ClientIP', 86401, 10800, ['INVALID_TIMEOUT']],
    ['ClientIP', 1.5, 10800, ['INVALID_TIMEOUT']],
  ] as const)('%s timeout %s -> %s', (sessionAffinity, sessionAffinityTimeoutSeconds, expected, codes) => {
    const svc = service({ sessionAffinity });
    if (sessionAffinityTimeoutSeconds !== undefined) svc.sessionAffinityTimeoutSeconds = sessionAffinityTimeoutSeconds;
    const { ports, warnings } = build(svc);
    expect(only(ports).sessionAffinityTimeout).toBe(expected);
    expect(warnings.map((w) => w.code)).toEqual(codes);
  });
});

describe('traffic policies and healthCheckNodePort', () => {
  it.each([
    // type, eTP, iTP, externalIPs, hcnp -> externalPolicyLocal, internalPolicyLocal, healthCheckNodePort
    ['LoadBalancer', 'Local', 'Cluster', [], 32000, true, false, 32000],
    ['LoadBalancer', 'Cluster', 'Local', [], undefined, false, true, undefined],
    ['NodePort', 'Local', 'Local', [], undefined, true, true, undefined],
    ['ClusterIP', 'Local', 'Cluster', [], undefined, false, false, undefined],
    ['ClusterIP', 'Local', 'Cluster', ['192.0.2.10'], undefined, true, false, undefined],
  ] as const)('%s eTP=%s iTP=%s externalIPs=%j', (type, eTP, iTP, externalIPs, hc, eLocal, iLocal, expectedHc) => {
    const svc = service({ type, externalTrafficPolicy: eTP, internalTrafficPolicy: iTP, externalIPs: [...externalIPs] });
    if (hc !== undefined) svc.healthCheckNodePort = hc;
    const p = only(build(svc).ports);
    expect([p.externalPolicyLocal, p.internalPolicyLocal, p.healthCheckNodePort]).toEqual([eLocal, iLocal, expectedHc]);
  });

  it('healthCheckNodePort without a Local external policy is ignored with a warning', () => {
    const { ports, warnings } = build(service({ type: 'LoadBalancer', externalTrafficPolicy: 'Cluster', healthCheckNodePort: 32000 }));
    expect(only(ports).healthCheckNodePort).toBeUndefined();
    expect(warnings).toMatchObject([{ code: 'IGNORED_FIELD', field: 'spec.healthCheckNodePort' }]);
  });
});

describe('targetPort resolution through the slice port name', () => {
  it('a named targetPort: each service port takes the slice port with its own name and protocol', () => {
    const svc = service({
      ports: [
        { name: 'http', protocol: 'TCP', port: 80, targetPort: 'web' },
        { name: 'metrics', protocol: 'TCP', port: 9090, targetPort: 'prom' },
        { name: 'dns', protocol: 'UDP', port: 53, targetPort: 'dns' },
      ],
    });
    const slices = [
      slice('web-1', [ep('10.0.1.1'), ep('10.0.1.2')], {
        ports: [
          { name: 'metrics', protocol: 'TCP', port: 9102 },
          { name: 'http', protocol: 'TCP', port: 8080 },
          { name: 'dns', protocol: 'TCP', port: 5353 },
        ],
      }),
    ];
    const [http, metrics, dns] = build(svc, slices).ports;
    expect(show(http!.cluster)).toEqual(['10.0.1.1:8080', '10.0.1.2:8080']);
    expect(show(metrics!.cluster)).toEqual(['10.0.1.1:9102', '10.0.1.2:9102']);
    // the slice only has a TCP port named dns: no UDP endpoints
    expect(show(dns!.cluster)).toBe('reject');
  });

  it('pods resolving a named port differently show up as two slices with different port numbers', () => {
    const svc = service({ ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 'web' }] });
    const slices = [
      slice('web-1', [ep('10.0.1.1')], { ports: [{ name: 'http', protocol: 'TCP', port: 8080 }] }),
      slice('web-2', [ep('10.0.1.2')], { ports: [{ name: 'http', protocol: 'TCP', port: 8081 }] }),
    ];
    expect(show(only(build(svc, slices).ports).cluster)).toEqual(['10.0.1.1:8080', '10.0.1.2:8081']);
  });

  it('a slice without the port contributes no endpoints to it', () => {
    const slices = [slice('web-1', [ep('10.0.1.1')], { ports: [{ name: 'other', protocol: 'TCP', port: 8080 }] })];
    expect(show(only(build(service(), slices).ports).cluster)).toBe('reject');
  });
});

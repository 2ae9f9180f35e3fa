// Every name and comment the renderer makes fits the kernel's limits by
// construction, whatever the API allows a Service to be: the rendered
// operations of any ServicePorts pass the transaction checks.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { IPFamily, Protocol } from '../../src/k8s/types.ts';
import type { ServicePort } from '../../src/model/service-port.ts';
import { FakeKernel } from '../../src/nft/fake/fake-kernel.ts';
import { validateOperations } from '../../src/nft/transaction.ts';
import { ENDPOINT_SHAPES } from '../../src/reconciler/config.ts';
import { planFullSync } from '../../src/reconciler/full-sync.ts';
import { boundedText, COMMENT_MAX } from '../../src/reconciler/names.ts';
import { Reconciler } from '../../src/reconciler/reconciler.ts';
import { renderRuleset } from '../../src/reconciler/ruleset.ts';
import { config, ep, modelReads, sp, V4, V6 } from './fixtures.ts';

const ALNUM = 'abcdefghijklmnopqrstuvwxyz0123456789'.split('');

/** A DNS-1123 label of 1..63 characters, reaching 63 often. */
const label = fc
  .tuple(fc.constantFrom(...ALNUM), fc.array(fc.constantFrom(...ALNUM, '-'), { maxLength: 61 }), fc.constantFrom(...ALNUM), fc.boolean())
  .map(([a, mid, z, full]) => (full ? `${a}${'x'.repeat(61)}${z}` : `${a}${mid.join('')}${z}`));

const protocol = fc.constantFrom<Protocol>('TCP', 'UDP', 'SCTP');
const v4 = fc.tuple(fc.integer({ min: 1, max: 254 }), fc.integer({ min: 1, max: 254 })).map(([a, b]) => `10.244.${a}.${b}`);
const v6 = fc
  .tuple(fc.integer({ min: 1, max: 0xffff }), fc.integer({ min: 1, max: 0xffff }))
  .map(([a, b]) => `fd00:1111:2222:3333:4444:5555:${a.toString(16)}:${b.toString(16)}`);
const port = fc.integer({ min: 1, max: 65535 });

function servicePortArb(names: fc.Arbitrary<string>, portNames: fc.Arbitrary<string>): fc.Arbitrary<ServicePort> {
  return fc
    .record({
      namespace: names,
      serviceName: names,
      portName: portNames,
      protocol,
      family: fc.constantFrom<IPFamily>('IPv4', 'IPv6'),
      port,
      nodePort: fc.option(fc.integer({ min: 30000, max: 32767 }), { nil: undefined }),
      affinity: fc.option(fc.integer({ min: 1, max: 86400 }), { nil: undefined }),
      endpoints: fc.integer({ min: 0, max: 4 }),
      epPorts: fc.array(port, { minLength: 4, maxLength: 4 }),
      lb: fc.boolean(),
      local: fc.boolean(),
      seed: fc.integer({ min: 0, max: 1000 }),
    })
    .chain((r) =>
      fc.array(r.family === 'IPv4' ? v4 : v6, { minLength: r.endpoints, maxLength: r.endpoints }).map((ips) =>
        sp({
          namespace: r.namespace,
          serviceName: r.serviceName,
          portName: r.portName,
          protocol: r.protocol,
          family: r.family,
          port: r.port,
          clusterIP: r.family === 'IPv4' ? `10.96.${r.seed % 250}.${(r.seed % 200) + 1}` : `fd00:96::${(r.seed + 1).toString(16)}`,
          ...(r.nodePort !== undefined ? { nodePort: r.nodePort } : {}),
          ...(r.affinity !== undefined ? { sessionAffinityTimeout: r.affinity } : {}),
          externalPolicyLocal: r.local,
          ...(r.lb
            ? {
                loadBalancerIPs: [r.family === 'IPv4' ? `203.0.113.${(r.seed % 250) + 1}` : `2001:db8:113::${(r.seed + 1).toString(16)}`],
                loadBalancerSourceRanges: r.family === 'IPv4' ? ['192.0.2.0/24', '198.51.100.7/32'] : ['2001:db8:1::/64'],
                externalIPs: [r.family === 'IPv4' ? `198.51.100.${(r.seed % 250) + 1}` : `2001:db8:100::${(r.seed + 1).toString(16)}`],
              }
            : {}),
          endpoints: ips.map((ip, i) => ep(ip, r.epPorts[i]!, { isLocal: i % 2 === 0 })),
        }),
      ),
    );
}

/**
 * Each port its own addresses and NodePort: two ports wanting one ClusterIP:port is a conflict the renderer reports, not a naming question.
 */
function distinctAddresses(p: ServicePort, i: number): ServicePort {
  const v4 = p.family === 'IPv4';
  const n = i + 1;
  return {
    ...p,
    clusterIP: v4 ? `10.96.7.${n}` : `fd00:96::7:${n.toString(16)}`,
    ...(p.nodePort !== undefined ? { nodePort: 30000 + n } : {}),
    loadBalancerIPs: p.loadBalancerIPs.map(() => (v4 ? `203.0.113.${n}` : `2001:db8:113::${n.toString(16)}`)),
    externalIPs: p.externalIPs.map(() => (v4 ? `198.51.100.${n}` : `2001:db8:100::${n.toString(16)}`)),
  };
}

/** Distinct ids (the model never hands over one port twice), up to 12 ports. */
const ports = (one: fc.Arbitrary<ServicePort>) =>
  fc.uniqueArray(one, { minLength: 1, maxLength: 12, selector: (p) => p.id }).map((list) => list.map(distinctAddresses));

function checkRendered(list: readonly ServicePort[], shape: (typeof ENDPOINT_SHAPES)[number]): void {
  const r = renderRuleset(list, config({ families: { IPv4: V4, IPv6: V6 }, endpointShape: shape }));
  expect(r.problems).toEqual([]);
  validateOperations(planFullSync(r, 'replace').ops);
}

describe('names and comments are bounded by construction', () => {
  it('a Service whose namespace, name and port name are 63 characters each does not hold back the sync', async () => {
    const long = sp({
      namespace: 'n'.repeat(63),
      serviceName: 's'.repeat(63),
      portName: 'p'.repeat(63),
      protocol: 'SCTP',
      clusterIP: '10.96.0.30',
      nodePort: 30030,
    });
    const plain = sp({ serviceName: 'plain', clusterIP: '10.96.0.10', endpoints: [ep('10.244.1.5')] });
    const kernel = new FakeKernel();
    const r = new Reconciler({
      dataplane: kernel,
      config: config({ families: { IPv4: V4 } }),
      servicePorts: modelReads(() => [long, plain]),
      now: () => 0,
    });
    const rep = await r.sync({ kind: 'incremental' });
    expect(rep.rejected).toEqual([]);
    const elements = kernel.listSync('ip', 'kube-nft-proxy')!.elements;
    const comments = elements.flatMap((e) => (e.comment ? [e.comment] : []));
    expect(comments.length).toBeGreaterThan(0);
    for (const c of comments) expect(Buffer.byteLength(c)).toBeLessThanOrEqual(COMMENT_MAX);
    expect(elements.some((e) => e.set === 'service-ips' && e.key[0] === '10.96.0.10')).toBe(true);
  });

  it('boundedText keeps texts that fit, and cuts the others whole-character with a hash of the whole', () => {
    expect(boundedText('default/web/tcp/http', COMMENT_MAX)).toBe('default/web/tcp/http');
    const a = boundedText(`${'é'.repeat(100)}a`, COMMENT_MAX);
    const b = boundedText(`${'é'.repeat(100)}b`, COMMENT_MAX);
    expect(Buffer.byteLength(a)).toBeLessThanOrEqual(COMMENT_MAX);
    expect(a).not.toBe(b);
    expect(a).not.toContain('\uFFFD');
    expect(boundedText('a\0b"c', 10)).toBe('a_b_c');
    const emoji = boundedText('😀'.repeat(60), COMMENT_MAX);
    expect(Buffer.from(emoji).toString()).toBe(emoji);
  });

  it.each(ENDPOINT_SHAPES)('any ServicePorts the API allows render to operations that pass the checks (%s shape)', (shape) => {
    fc.assert(
      fc.property(ports(servicePortArb(label, fc.oneof(label, fc.constant('')))), (list) => checkRendered(list, shape)),
      { numRuns: 120 },
    );
  });

  it('so do names no API server would accept: any text, control characters and multibyte ones included', () => {
    const anyText = fc.string({ unit: 'binary', minLength: 1, maxLength: 200 });
    fc.assert(
      fc.property(ports(servicePortArb(anyText, anyText)), fc.constantFrom(...ENDPOINT_SHAPES), (list, shape) =>
        checkRendered(list, shape),
      ),
      { numRuns: 120 },
    );
  });
});

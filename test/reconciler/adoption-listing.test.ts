import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { IPFamily } from '../../src/k8s/types.ts';
import { formatIPv4, formatIPv6 } from '../../src/net/ip.ts';
import type { TableListing } from '../../src/nft/dataplane.ts';
import { HeldElements } from '../../src/nft/fake/held-elements.ts';
import type { Element, NftMap } from '../../src/nft/objects.ts';
import { valueBytes } from '../../src/nft/values.ts';
import { derivedHairpinChanges } from '../../src/reconciler/adoption-listing.ts';
import { endpointMapTypes } from '../../src/reconciler/endpoint-slots.ts';

const T = 'kube-nft-proxy';

function map(family: IPFamily, name: string, types = endpointMapTypes(family)): NftMap {
  return { kind: 'map', family: family === 'IPv4' ? 'ip' : 'ip6', table: T, name, ...types };
}

function slots(m: NftMap, addresses: readonly string[]): Element[] {
  return addresses.map((ip, slot) => ({
    kind: 'element',
    family: m.family,
    table: T,
    set: m.name,
    key: [String(slot)],
    value: [ip, '80'],
  }));
}

/** The canonical text of an address, as a listing gives it. */
function canonical(ip: string): string {
  return ip.includes(':') ? formatIPv6(valueBytes('ipv6_addr', ip)) : formatIPv4(valueBytes('ipv4_addr', ip));
}

/**
 * A table whose endpoint maps hold `held` (read encoded) and `decoded`, beside
 * a map of another type holding `other` (not an endpoint map: not counted).
 */
function listing(family: IPFamily, held: string[], decoded: string[], other: string[]): TableListing {
  const shard = map(family, 'service-endpoints-3');
  const own = map(family, 'endpoints-ABC-default/web/tcp/http');
  const foreign = map(family, 'not-endpoints', { keyType: ['integer'], dataType: [family === 'IPv4' ? 'ipv4_addr' : 'ipv6_addr'] });
  const encodedElements = new HeldElements();
  expect(encodedElements.hold(shard, slots(shard, held))).toBe(true);
  return {
    table: { kind: 'table', family: shard.family, name: T },
    chains: [],
    rules: [],
    sets: [shard, own, foreign],
    elements: [...slots(own, decoded), ...other.map((ip, i) => ({ ...slots(foreign, [ip])[0]!, key: [String(i)], value: [ip] }))],
    flowtables: [],
    encodedElements,
  };
}

const address = (family: IPFamily) =>
  family === 'IPv4'
    ? fc.integer({ min: 0, max: 63 }).map((i) => `10.244.${i >> 4}.${i & 15}`)
    : fc.integer({ min: 0, max: 63 }).map((i) => `FD00:244::${(i >> 4).toString(16)}:${(i & 15).toString(16)}`);

describe('derivedHairpinChanges: the hairpin set as the endpoint maps say it is', () => {
  for (const family of ['IPv4', 'IPv6'] as const) {
    it(`adds the wanted addresses no endpoint map holds and removes those they hold that nothing wants (${family})`, () => {
      const some = fc.array(address(family), { maxLength: 24 });
      fc.assert(
        fc.property(
          some,
          some,
          some,
          fc.uniqueArray(address(family), { maxLength: 24, selector: canonical }),
          (held, decoded, other, wanted) => {
            const { add, remove } = derivedHairpinChanges(listing(family, held, decoded, other), family, wanted);
            const inMaps = new Set([...held, ...decoded].map(canonical));
            const wants = new Set(wanted.map(canonical));
            expect(add).toEqual(wanted.filter((ip) => !inMaps.has(canonical(ip))));
            expect(remove.sort()).toEqual([...inMaps].filter((ip) => !wants.has(ip)).sort());
          },
        ),
        { numRuns: 300 },
      );
    });
  }

  for (const family of ['IPv4', 'IPv6'] as const) {
    it(`holds as many addresses as the maps do, its table grown (${family})`, () => {
      // Past the table's first size several times over: every address held is found or reported, once.
      const ip = (n: number) =>
        family === 'IPv4' ? formatIPv4(new Uint8Array([10, 244, (n + 1) >> 8, (n + 1) & 255])) : `fd00:244::${(n + 1).toString(16)}`;
      const inMaps = Array.from({ length: 6000 }, (_, n) => ip(n));
      const wanted = Array.from({ length: 3000 }, (_, n) => ip(2 * n + 3001));
      const { add, remove } = derivedHairpinChanges(listing(family, inMaps.slice(0, 4000), inMaps.slice(3000), []), family, wanted);
      expect(add).toEqual(wanted.filter((a) => !inMaps.includes(a)));
      expect(remove.sort()).toEqual(inMaps.filter((a) => !wanted.includes(a)).sort());
    });
  }

  it('reads nothing but endpoint maps, and holds an address once however many slots name it', () => {
    const l = listing('IPv4', ['10.244.0.1', '10.244.0.1', '10.244.0.2'], ['10.244.0.2', '10.244.0.3'], ['10.244.9.9']);
    expect(derivedHairpinChanges(l, 'IPv4', ['10.244.0.1'])).toEqual({ add: [], remove: ['10.244.0.2', '10.244.0.3'] });
    expect(derivedHairpinChanges(l, 'IPv4', ['10.244.9.9', '10.244.0.1', '10.244.0.2', '10.244.0.3'])).toEqual({
      add: ['10.244.9.9'],
      remove: [],
    });
  });
});

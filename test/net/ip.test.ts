import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ipFamilyOf, isOrdinaryCanonicalIPv4, normalizeIP, parseIP, specialAddressKind } from '../../src/net/ip.ts';

describe('parseIP normalises what kube-proxy accepts', () => {
  it.each([
    // IPv4, leading zeros read as decimal (never octal)
    ['172.30.0.041', '172.30.0.41', 'IPv4'],
    ['010.000.000.001', '10.0.0.1', 'IPv4'],
    ['0000000041.1.1.1', '41.1.1.1', 'IPv4'],
    ['  203.0.113.7 ', '203.0.113.7', 'IPv4'],
    ['255.255.255.255', '255.255.255.255', 'IPv4'],
    ['0.0.0.0', '0.0.0.0', 'IPv4'],
    // IPv6, RFC 5952 output
    ['2001:DB8::1', '2001:db8::1', 'IPv6'],
    ['2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::1', 'IPv6'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1', 'IPv6'],
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1', 'IPv6'],
    ['2001:0:0:1:0:0:0:1', '2001:0:0:1::1', 'IPv6'],
    ['::', '::', 'IPv6'],
    ['::1', '::1', 'IPv6'],
    ['fd00::', 'fd00::', 'IPv6'],
    ['1:2:3:4:5:6:7::', '1:2:3:4:5:6:7:0', 'IPv6'],
    ['::2:3:4:5:6:7:8', '0:2:3:4:5:6:7:8', 'IPv6'],
    ['64:ff9b::192.0.2.33', '64:ff9b::c000:221', 'IPv6'],
    ['::1.2.3.4', '::102:304', 'IPv6'],
    // IPv4-mapped IPv6 is IPv4, as Go's net.IP (and so kube-proxy) sees it
    ['::ffff:192.0.2.1', '192.0.2.1', 'IPv4'],
    ['::FFFF:c000:0201', '192.0.2.1', 'IPv4'],
    ['0:0:0:0:0:ffff:198.51.100.010', '198.51.100.10', 'IPv4'],
  ])('%j -> %s (%s)', (input, address, family) => {
    expect(parseIP(input)).toMatchObject({ address, family });
    expect(normalizeIP(input)).toBe(address);
    expect(ipFamilyOf(input)).toBe(family);
  });

  it.each([
    '',
    '   ',
    '1.2.3',
    '1.2.3.4.5',
    '1.2.3.256',
    '1..2.3',
    '1.2.3.4.',
    '.1.2.3',
    '1.2.3.-4',
    '1.2.3.4/32',
    '00000000001.1.1.1',
    '1.2. 3.4',
    'a.b.c.d',
    '2001:db8::1::2',
    '2001:db8:::1',
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7',
    '12345::1',
    ':1:2:3:4:5:6:7',
    '1:2:3:4:5:6:7:',
    'fe80::1%eth0',
    'g::1',
    '::ffff:1.2.3',
    '1:2:3:4:5:6:7:1.2.3.4',
    '::1.2.3.4:5',
    'None',
    'example.com',
  ])('%j is not an address', (input) => {
    expect(parseIP(input)).toBeUndefined();
  });

  it('round-trips: the canonical form parses to itself', () => {
    for (const s of ['10.0.0.1', '2001:db8::1', '::', 'fe80::1:2', '1:0:0:1::']) {
      const once = normalizeIP(s)!;
      expect(normalizeIP(once)).toBe(once);
    }
  });
});

describe('specialAddressKind', () => {
  it.each([
    ['0.0.0.0', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['224.0.0.1', 'multicast'],
    ['239.1.2.3', 'multicast'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['fe80::1', 'link-local'],
    ['febf::1', 'link-local'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['10.0.0.1', undefined],
    ['203.0.113.255', undefined],
    ['240.0.0.1', undefined],
    ['fec0::1', undefined],
    ['2001:db8::1', undefined],
    ['::2', undefined],
  ])('%s -> %s', (input, kind) => {
    expect(specialAddressKind(parseIP(input)!)).toBe(kind);
  });
});

describe('IPv6 canonical form agrees with an independent serializer', () => {
  // WHATWG URL serialises IPv6 hosts with the same rules as RFC 5952
  // (lower case, longest-first zero run of two or more groups compressed).
  it('for random addresses in full, uncompressed spelling', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 0xffff })), { minLength: 8, maxLength: 8 }),
        fc.boolean(),
        (groups, upper) => {
          const mapped = groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff;
          fc.pre(!mapped);
          let text = groups.map((g) => g.toString(16).padStart(4, '0')).join(':');
          if (upper) text = text.toUpperCase();
          const expected = new URL(`http://[${text}]/`).hostname.slice(1, -1);
          expect(normalizeIP(text)).toBe(expected);
          expect(normalizeIP(expected)).toBe(expected);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('isOrdinaryCanonicalIPv4 is parseIP, canonical and not special, without allocating', () => {
  const byParseIP = (text: string) => {
    const ip = parseIP(text);
    return ip !== undefined && ip.family === 'IPv4' && ip.address === text && specialAddressKind(ip) === undefined;
  };
  // Octets spelled as the API allows (leading zeros, padding) or not, special
  // ranges and the edges of each octet, and text around or inside them.
  const octet = fc.oneof(
    fc.integer({ min: 0, max: 255 }).map(String),
    fc.constantFrom('0', '00', '01', '255', '256', '999', '1000', '', '-1', ' 1', '1 ', 'a', '0x1'),
  );
  const special = fc.constantFrom('0.0.0.0', '255.255.255.255', '127.0.0.1', '169.254.1.1', '224.0.0.1', '239.255.255.255');
  const text = fc.oneof(
    fc.array(octet, { minLength: 3, maxLength: 5 }).map((o) => o.join('.')),
    fc
      .tuple(fc.constantFrom('', ' ', '::ffff:', '.'), fc.array(octet, { minLength: 4, maxLength: 4 }), fc.constantFrom('', ' ', '.', '/8'))
      .map(([before, o, after]) => `${before}${o.join('.')}${after}`),
    special,
    fc.string({ maxLength: 16 }),
  );

  it('for random texts', () => {
    fc.assert(
      fc.property(text, (t) => {
        expect(isOrdinaryCanonicalIPv4(t)).toBe(byParseIP(t));
      }),
      { numRuns: 20_000 },
    );
  });

  it.each([
    ['10.0.0.1', true],
    ['192.0.2.255', true],
    ['223.255.255.255', true],
    ['240.0.0.1', true],
    ['010.0.0.1', false],
    ['10.0.0.01', false],
    ['10.0.0', false],
    ['10.0.0.1.', false],
    [' 10.0.0.1', false],
    ['::ffff:10.0.0.1', false],
    ['127.0.0.1', false],
    ['169.254.0.1', false],
    ['169.253.0.1', true],
    ['224.0.0.0', false],
    ['0.0.0.0', false],
    ['255.255.255.255', false],
    ['255.255.255.254', true],
  ])('%s -> %s', (t, expected) => {
    expect(isOrdinaryCanonicalIPv4(t)).toBe(expected);
    expect(byParseIP(t)).toBe(expected);
  });
});

import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { DataType } from '../../src/nft/objects.ts';
import { canonicalValue, compareBytes, NftValueError, prefixRange, typeLength, valueBytes, valueFromBytes } from '../../src/nft/values.ts';

const valid: Array<[DataType, string, string, number[] | null]> = [
  // type, input, canonical, bytes (null: a prefix, no single byte form)
  ['ipv4_addr', '10.96.0.1', '10.96.0.1', [10, 96, 0, 1]],
  ['ipv4_addr', '0.0.0.0', '0.0.0.0', [0, 0, 0, 0]],
  ['ipv4_addr', '255.255.255.255', '255.255.255.255', [255, 255, 255, 255]],
  ['ipv4_addr', '10.0.0.0/8', '10.0.0.0/8', null],
  ['ipv4_addr', '0.0.0.0/0', '0.0.0.0/0', null],
  ['ipv4_addr', '192.0.2.7/32', '192.0.2.7', null],
  ['ipv6_addr', 'fd00::1', 'fd00::1', [0xfd, 0, ...Array(13).fill(0), 1]],
  ['ipv6_addr', 'FD00:0:0:0:0:0:0:1', 'fd00::1', [0xfd, 0, ...Array(13).fill(0), 1]],
  ['ipv6_addr', '::', '::', Array(16).fill(0)],
  ['ipv6_addr', '::1', '::1', [...Array(15).fill(0), 1]],
  ['ipv6_addr', '2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1', [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1]],
  ['ipv6_addr', '2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1', [0x20, 1, 0xd, 0xb8, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]],
  ['ipv6_addr', '1:0:0:1:0:0:0:0', '1:0:0:1::', [0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]],
  ['ipv6_addr', '::ffff:192.0.2.1', '::ffff:192.0.2.1', [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1]],
  ['ipv6_addr', '0:0:0:0:0:ffff:c000:201', '::ffff:192.0.2.1', [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1]],
  // IPv4-compatible (deprecated) is plain hex, as Go prints it; only IPv4-mapped keeps the dotted tail.
  ['ipv6_addr', '::10.0.0.1', '::a00:1', [...Array(12).fill(0), 10, 0, 0, 1]],
  ['ipv6_addr', '::ffff:0:0', '::ffff:0.0.0.0', [...Array(10).fill(0), 0xff, 0xff, 0, 0, 0, 0]],
  ['ipv6_addr', 'fd00::/8', 'fd00::/8', null],
  ['ipv6_addr', 'fd00:10::/64', 'fd00:10::/64', null],
  ['ipv6_addr', 'fd00::1/128', 'fd00::1', null],
  ['inet_proto', 'tcp', 'tcp', [6]],
  ['inet_proto', '6', 'tcp', [6]],
  ['inet_proto', '17', 'udp', [17]],
  ['inet_proto', '132', 'sctp', [132]],
  ['inet_proto', 'icmpv6', 'icmpv6', [58]],
  ['inet_proto', '58', 'icmpv6', [58]],
  ['inet_proto', '1', 'icmp', [1]],
  ['inet_proto', '47', '47', [47]],
  ['inet_proto', '0', '0', [0]],
  ['inet_service', '80', '80', [0, 80]],
  ['inet_service', '0', '0', [0, 0]],
  ['inet_service', '65535', '65535', [255, 255]],
  ['mark', '0x4000', '0x4000', [0, 0, 0x40, 0]],
  ['mark', '0x00004000', '0x4000', [0, 0, 0x40, 0]],
  ['mark', '0XFFFFFFFF', '0xffffffff', [255, 255, 255, 255]],
  ['mark', '16384', '0x4000', [0, 0, 0x40, 0]],
  ['mark', '0', '0x0', [0, 0, 0, 0]],
  ['ifname', 'eth0', 'eth0', [101, 116, 104, 48, ...Array(12).fill(0)]],
  ['ifname', 'veth-0123456789', 'veth-0123456789', [...new TextEncoder().encode('veth-0123456789'), 0]],
  // nft's wildcard: only the prefix's bytes, no NUL (a prefix compare)
  ['ifname', 'cali*', 'cali*', [99, 97, 108, 105]],
];

const invalid: Array<[DataType, string]> = [
  ['ipv4_addr', '010.0.0.1'],
  ['ipv4_addr', '10.0.0.01'],
  ['ipv4_addr', '1.2.3'],
  ['ipv4_addr', '1.2.3.4.5'],
  ['ipv4_addr', '1.2.3.4.'],
  ['ipv4_addr', '.1.2.3'],
  ['ipv4_addr', '256.0.0.1'],
  ['ipv4_addr', '1..2.3'],
  ['ipv4_addr', ' 1.2.3.4'],
  ['ipv4_addr', ''],
  ['ipv4_addr', 'fd00::1'],
  ['ipv4_addr', '10.0.0.1/8'],
  ['ipv4_addr', '10.0.0.0/33'],
  ['ipv4_addr', '10.0.0.0/'],
  ['ipv4_addr', '10.0.0.0/08'],
  ['ipv6_addr', ''],
  ['ipv6_addr', ':'],
  ['ipv6_addr', ':::'],
  ['ipv6_addr', '1:2:3:4:5:6:7'],
  ['ipv6_addr', '1:2:3:4:5:6:7:8:9'],
  ['ipv6_addr', '1::2::3'],
  ['ipv6_addr', '1:2:3:4:5:6:7:8::'],
  ['ipv6_addr', ':1::2'],
  ['ipv6_addr', '1::2:'],
  ['ipv6_addr', '12345::'],
  ['ipv6_addr', 'g::1'],
  ['ipv6_addr', 'fe80::1%eth0'],
  ['ipv6_addr', '::ffff:010.0.0.1'],
  ['ipv6_addr', '10.0.0.1'],
  ['ipv6_addr', 'fd00::1/64'],
  ['ipv6_addr', 'fd00::/129'],
  ['inet_proto', 'TCP'],
  ['inet_proto', '256'],
  ['inet_proto', '-1'],
  ['inet_proto', '06'],
  ['inet_proto', ''],
  ['inet_service', '65536'],
  ['inet_service', '080'],
  ['inet_service', 'http'],
  ['inet_service', '1e3'],
  ['inet_service', ''],
  ['mark', '0x100000000'],
  ['mark', '4294967296'],
  ['mark', '0x'],
  ['mark', '0xg'],
  ['mark', '-1'],
  ['ifname', ''],
  ['ifname', 'a-name-of-16-chr'],
  ['ifname', 'eth/0'],
  ['ifname', 'eth 0'],
  ['ifname', 'a\0b'],
  ['ifname', '..'],
  ['ifname', 'ééééééééé'], // 18 bytes
  ['verdict', 'accept'],
];

describe('values: table', () => {
  it.each(valid)('%s %j → %j', (type, input, canonical, bytes) => {
    expect(canonicalValue(type, input)).toBe(canonical);
    expect(canonicalValue(type, canonical)).toBe(canonical);
    if (bytes) {
      expect([...valueBytes(type, input)]).toEqual(bytes);
      expect(valueFromBytes(type, Uint8Array.from(bytes))).toBe(canonical);
    }
  });

  it.each(invalid)('%s %j is refused', (type, input) => {
    let err: unknown;
    try {
      canonicalValue(type, input);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(NftValueError);
    expect((err as NftValueError).code).toBe('ERR_NFT_VALUE');
    expect((err as NftValueError).message).toContain(type);
    expect((err as NftValueError).message).toContain(JSON.stringify(input));
  });

  it('type lengths', () => {
    expect(['ipv4_addr', 'ipv6_addr', 'inet_proto', 'inet_service', 'ifname', 'mark'].map((t) => typeLength(t as DataType))).toEqual([
      4, 16, 1, 2, 16, 4,
    ]);
    expect(() => typeLength('verdict')).toThrow(NftValueError);
  });

  it('valueFromBytes refuses wrong lengths', () => {
    expect(() => valueFromBytes('ipv4_addr', new Uint8Array(5))).toThrow(NftValueError);
    expect(() => valueFromBytes('inet_service', new Uint8Array(4))).toThrow(NftValueError);
    expect(() => valueFromBytes('ifname', new Uint8Array(17))).toThrow(NftValueError);
    expect(() => valueFromBytes('ifname', new Uint8Array(16))).toThrow(NftValueError); // empty name
  });

  it('valueBytes refuses a prefix (prefixRange is for intervals)', () => {
    expect(() => valueBytes('ipv4_addr', '10.0.0.0/8')).toThrow(NftValueError);
    expect(() => valueBytes('ipv6_addr', 'fd00::/8')).toThrow(NftValueError);
  });
});

describe('values: prefixRange', () => {
  const cases: Array<[DataType, string, number[], number[] | null]> = [
    ['ipv4_addr', '10.0.0.0/8', [10, 0, 0, 0], [11, 0, 0, 0]],
    ['ipv4_addr', '10.0.0.7', [10, 0, 0, 7], [10, 0, 0, 8]],
    ['ipv4_addr', '10.0.0.255', [10, 0, 0, 255], [10, 0, 1, 0]],
    ['ipv4_addr', '192.0.2.128/25', [192, 0, 2, 128], [192, 0, 3, 0]],
    ['ipv4_addr', '255.0.0.0/8', [255, 0, 0, 0], null],
    ['ipv4_addr', '0.0.0.0/0', [0, 0, 0, 0], null],
    ['ipv4_addr', '255.255.255.255', [255, 255, 255, 255], null],
    ['ipv4_addr', '10.1.2.0/23', [10, 1, 2, 0], [10, 1, 4, 0]],
    ['ipv6_addr', 'fd00::/8', [0xfd, ...Array(15).fill(0)], [0xfe, ...Array(15).fill(0)]],
    ['ipv6_addr', '::/0', Array(16).fill(0), null],
    ['ipv6_addr', 'fd00::1', [0xfd, ...Array(14).fill(0), 1], [0xfd, ...Array(14).fill(0), 2]],
    ['inet_service', '80', [0, 80], [0, 81]],
    ['inet_service', '65535', [255, 255], null],
    ['inet_proto', 'tcp', [6], [7]],
  ];
  it.each(cases)('%s %s', (type, text, start, end) => {
    const r = prefixRange(type, text);
    expect([...r.start]).toEqual(start);
    expect(r.endExclusive && [...r.endExclusive]).toEqual(end);
  });
  it('refuses host bits and non-interval types', () => {
    expect(() => prefixRange('ipv4_addr', '10.0.0.1/8')).toThrow(NftValueError);
    expect(() => prefixRange('ifname', 'eth0')).toThrow(NftValueError);
  });
});

describe('values: compareBytes', () => {
  it('orders byte strings as Buffer.compare does, a shorter one first where it starts the other', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 6 }), fc.uint8Array({ maxLength: 6 }), (a, b) => {
        expect(Math.sign(compareBytes(a, b))).toBe(Buffer.compare(a, b));
      }),
    );
    expect(compareBytes(Uint8Array.of(10, 0), Uint8Array.of(10, 0, 0))).toBeLessThan(0);
    expect(compareBytes(Uint8Array.of(10, 1), Uint8Array.of(10, 0, 255))).toBeGreaterThan(0);
  });
});

describe('values: properties', () => {
  it('ipv4 bytes → text → bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 4, maxLength: 4 }), (b) => {
        const t = valueFromBytes('ipv4_addr', b);
        expect(canonicalValue('ipv4_addr', t)).toBe(t);
        expect(valueBytes('ipv4_addr', t)).toEqual(b);
      }),
    );
  });

  it('ipv6 bytes → text → bytes, and the text is what Node prints for the same address', () => {
    // Bias towards zero groups, where the compression rules matter.
    const word = fc.oneof(fc.constant(0), fc.constant(0), fc.constant(0xffff), fc.integer({ min: 0, max: 0xffff }));
    fc.assert(
      fc.property(fc.array(word, { minLength: 8, maxLength: 8 }), (words) => {
        const b = new Uint8Array(16);
        words.forEach((w, k) => {
          b[2 * k] = w >>> 8;
          b[2 * k + 1] = w & 0xff;
        });
        const t = valueFromBytes('ipv6_addr', b);
        expect(canonicalValue('ipv6_addr', t)).toBe(t);
        expect(valueBytes('ipv6_addr', t)).toEqual(b);
        // Any uncompressed spelling canonicalises to the same text.
        expect(canonicalValue('ipv6_addr', words.map((w) => w.toString(16).toUpperCase()).join(':'))).toBe(t);
        expect(t).toBe(t.toLowerCase());
      }),
      { numRuns: 2000 },
    );
  });

  it('prefixes: start + size = end, canonical text stable', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 4, maxLength: 4 }), fc.integer({ min: 0, max: 32 }), (b, len) => {
        const n =
          ((((b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]!) >>> 0) & (len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0)) >>> 0;
        const addr = `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
        const text = `${addr}/${len}`;
        const c = canonicalValue('ipv4_addr', text);
        expect(c).toBe(len === 32 ? addr : text);
        const r = prefixRange('ipv4_addr', text);
        const end = n + 2 ** (32 - len);
        if (end > 0xffffffff) expect(r.endExclusive).toBeNull();
        else
          expect(r.endExclusive && valueFromBytes('ipv4_addr', r.endExclusive)).toBe(
            `${Math.floor(end / 2 ** 24)}.${Math.floor(end / 2 ** 16) & 255}.${Math.floor(end / 256) & 255}.${end & 255}`,
          );
      }),
    );
  });

  it('inet_service, inet_proto, mark round-trip', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 65535 }), (n) => {
        expect(valueFromBytes('inet_service', valueBytes('inet_service', String(n)))).toBe(String(n));
      }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 255 }), (n) => {
        const c = canonicalValue('inet_proto', String(n));
        expect(valueFromBytes('inet_proto', valueBytes('inet_proto', c))).toBe(c);
        expect(valueBytes('inet_proto', c)[0]).toBe(n);
      }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), (n) => {
        const c = canonicalValue('mark', String(n));
        expect(c).toBe(`0x${n.toString(16)}`);
        expect(valueFromBytes('mark', valueBytes('mark', c))).toBe(c);
      }),
    );
  });

  it('ifname round-trip', () => {
    const name = fc.stringMatching(/^[a-zA-Z0-9_.@-]{1,15}$/).filter((s) => s !== '.' && s !== '..');
    fc.assert(
      fc.property(name, (s) => {
        expect(valueFromBytes('ifname', valueBytes('ifname', s))).toBe(s);
      }),
    );
  });
});

describe('values: speed', () => {
  it('parses 100k addresses and services quickly', () => {
    const texts: string[] = [];
    for (let i = 0; i < 100_000; i++) texts.push(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    const t0 = performance.now();
    let sum = 0;
    for (const t of texts) {
      sum += canonicalValue('ipv4_addr', t).length;
      sum += valueBytes('ipv4_addr', t)[3]!;
      sum += valueBytes('inet_service', '8080')[1]!;
    }
    const ms = performance.now() - t0;
    console.log(`values: 100k × (canonical ipv4 + ipv4 bytes + service bytes) in ${ms.toFixed(1)} ms`);
    expect(sum).toBeGreaterThan(0);
    expect(ms).toBeLessThan(1000);
  });
});

// A map element's data is written into the batch in place, part by part,
// instead of through dataBytes() (an array per part and one per value: a
// million of each at 100k services). dataBytes stays the reference: for every
// data type a map can hold, the batch carries exactly its bytes, and a value
// it refuses is refused with its message.
import { describe, expect, it } from 'vitest';
import { AT, ELEM_ATTR } from '../../src/nft/netlink/kernel-constants.ts';
import { encodeOperations } from '../../src/nft/netlink/encode.ts';
import { dataBytes } from '../../src/nft/netlink/operands.ts';
import { ByteWriter } from '../../src/nft/netlink/wire.ts';
import type { DataType, Element, NftMap, Operation } from '../../src/nft/objects.ts';

const T = 'knp';

function mapOps(dataType: NftMap['dataType'], values: Array<string | string[]>): { ops: Operation[]; map: NftMap } {
  const map: NftMap = { kind: 'map', family: 'ip', table: T, name: 'm', keyType: ['integer'], dataType };
  const ops: Operation[] = [
    { verb: 'add', object: { kind: 'table', family: 'ip', name: T } },
    { verb: 'add', object: map },
    ...values.map(
      (value, i): Operation => ({
        verb: 'add',
        object: { kind: 'element', family: 'ip', table: T, set: 'm', key: [String(i)], value } as Element,
      }),
    ),
  ];
  return { ops, map };
}

/** The DATA attribute as the batch spells it: id (u16), type, length (u32), bytes. */
function dataAttr(bytes: Uint8Array): Uint8Array {
  const len = bytes.length;
  return Uint8Array.of(
    ELEM_ATTR.DATA & 0xff,
    ELEM_ATTR.DATA >>> 8,
    AT.bytes,
    len & 0xff,
    (len >>> 8) & 0xff,
    (len >>> 16) & 0xff,
    len >>> 24,
    ...bytes,
  );
}

function count(hay: Uint8Array, needle: Uint8Array): number {
  let n = 0;
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    n++;
  }
  return n;
}

const CASES: Array<[NftMap['dataType'], Array<string | string[]>]> = [
  [
    ['ipv4_addr', 'inet_service'],
    [
      ['10.244.0.11', '8080'],
      ['192.0.2.1', '65535'],
      ['0.0.0.0', '0'],
    ],
  ],
  [
    ['ipv6_addr', 'inet_service'],
    [
      ['fd00:10:244::11', '8080'],
      ['2001:db8::1', '1'],
    ],
  ],
  [
    ['ipv4_addr', 'inet_proto', 'inet_service'],
    [
      ['10.0.0.1', 'tcp', '53'],
      ['10.0.0.2', '132', '3868'],
    ],
  ],
  [
    ['mark', 'ifname'],
    [
      ['0x4000', 'eth0'],
      ['0xffffffff', 'cni0'],
    ],
  ],
  [
    ['integer', 'ipv4_addr'],
    [
      ['1', '10.0.0.1'],
      ['4294967295', '10.0.0.2'],
    ],
  ],
  ['ipv4_addr', ['10.96.0.10', '203.0.113.7']],
  ['inet_service', ['80', '443']],
  ['mark', ['0x1', '0xdeadbeef']],
  ['integer', ['7', '16777216']],
  ['ifname', ['lo', 'veth1234567890a']],
];

describe('map element data in the batch', () => {
  for (const [dataType, values] of CASES) {
    it(`${Array.isArray(dataType) ? dataType.join(' . ') : dataType}: the bytes dataBytes gives, padding zeroed in a reused writer`, () => {
      const { ops } = mapOps(dataType, values);
      // A dataplane reuses its writer: what an earlier batch left there must not show through.
      const writer = new ByteWriter(1 << 16);
      writer.raw.fill(0xff);
      const { bytes } = encodeOperations(ops, () => undefined, writer);
      for (const v of values) expect(count(bytes, dataAttr(dataBytes(dataType as DataType | DataType[], v)))).toBeGreaterThanOrEqual(1);
    });
  }

  const refused: Array<[string, NftMap['dataType'], string | string[]]> = [
    ['a bad address', ['ipv4_addr', 'inet_service'], ['10.0.0.256', '80']],
    ['a port out of range', ['ipv4_addr', 'inet_service'], ['10.0.0.1', '65536']],
    ['one text for a concatenation', ['ipv4_addr', 'inet_service'], '10.0.0.1'],
    ['too few parts', ['ipv4_addr', 'inet_service'], ['10.0.0.1']],
    ['parts for a single type', 'ipv4_addr', ['10.0.0.1', '80']],
  ];
  for (const [what, dataType, value] of refused) {
    it(`refuses ${what} with the reference's message, naming the operation`, () => {
      const { ops } = mapOps(
        dataType,
        [['10.0.0.9', '80'], value].map((v, i) => (i === 0 && !Array.isArray(dataType) ? '10.0.0.9' : v)),
      );
      let reference = '';
      try {
        dataBytes(dataType as DataType | DataType[], value);
      } catch (e) {
        reference = (e as Error).message;
      }
      expect(reference).not.toBe('');
      expect(() => encodeOperations(ops)).toThrow(
        expect.objectContaining({
          code: 'ERR_NFT_ENCODE',
          index: 3,
          message: `operation 3: bad value ${JSON.stringify(value)} for m: ${reference}`,
        }),
      );
    });
  }
});

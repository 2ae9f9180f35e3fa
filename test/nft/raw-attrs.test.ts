// Listed attribute values are views into the listing's memory; their text is
// decoded in place from one Buffer over that memory, not one per string.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AT } from '../../src/nft/netlink/kernel-constants.ts';
import { ByteReader, rawStr, rawU32 } from '../../src/nft/netlink/listing-reader.ts';

describe('rawStr', () => {
  it('decodes the view, up to its first NUL, wherever it sits in its memory', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.nat(64), fc.nat(64), fc.boolean(), (text, before, after, nul) => {
        const encoded = Buffer.from(text.replaceAll('\0', ''), 'utf8');
        const memory = new Uint8Array(before + encoded.length + 1 + after).fill(0x41);
        memory.set(encoded, before);
        if (nul) memory[before + encoded.length] = 0;
        const view = memory.subarray(before, before + encoded.length + (nul ? 1 : 0));
        expect(rawStr(view)).toBe(text.replaceAll('\0', ''));
      }),
    );
  });

  it('reads each listing from its own memory, also after another one was read', () => {
    const a = new TextEncoder().encode('xxservice-ips\0');
    const b = new TextEncoder().encode('yycluster-ips\0');
    expect(rawStr(a.subarray(2))).toBe('service-ips');
    expect(rawStr(b.subarray(2))).toBe('cluster-ips');
    b.set(new TextEncoder().encode('zz'), 2);
    expect(rawStr(b.subarray(2))).toBe('zzuster-ips');
    expect(rawStr(undefined)).toBeUndefined();
    expect(rawStr(['a'])).toBeUndefined();
  });
});

/** One record's attributes in the addon's listing format: count, then id, type, length and bytes each. */
function record(attrs: Array<[id: number, type: number, bytes: Uint8Array]>): Uint8Array {
  const parts: number[] = [attrs.length & 0xff, attrs.length >> 8];
  for (const [id, type, bytes] of attrs) {
    const len = bytes.length;
    parts.push(id & 0xff, id >> 8, type, len & 0xff, (len >> 8) & 0xff, (len >> 16) & 0xff, len >>> 24, ...bytes);
  }
  return Uint8Array.from(parts);
}

describe('RawAttrs, read in place', () => {
  const u32 = (v: number) => new Uint8Array(new Uint32Array([v]).buffer);
  const u64 = (v: bigint) => new Uint8Array(new BigUint64Array([v]).buffer);
  const text = (t: string) => new TextEncoder().encode(`${t}\0`);
  const strArray = (items: string[]) => {
    const out: number[] = [items.length & 0xff, items.length >> 8];
    for (const item of items) out.push(item.length & 0xff, item.length >> 8, ...new TextEncoder().encode(item));
    return Uint8Array.from(out);
  };

  it('gives each attribute as the views did, from a record anywhere in its listing', () => {
    fc.assert(
      fc.property(fc.nat(40), fc.nat(2 ** 32 - 1), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), fc.string(), (before, n, big, name) => {
        const rec = record([
          [1, AT.bytes, text(name.replaceAll('\0', ''))],
          [2, AT.bytes, u32(n)],
          [3, AT.bytes, u64(big)],
          [4, AT.strArray, strArray(['eth0', name])],
          [5, AT.bytes, Uint8Array.of(7)],
        ]);
        const listing = new Uint8Array(before + rec.length + 3).fill(0xee);
        listing.set(rec, before);
        const r = new ByteReader(listing.subarray(before));
        const a = r.attrs();
        expect(a.size).toBe(5);
        expect([0, 1, 2, 3, 4].map((i) => a.idAt(i))).toEqual([1, 2, 3, 4, 5]);
        expect(a.str(1)).toBe(name.replaceAll('\0', ''));
        expect(a.str(1)).toBe(rawStr(a.get(1)));
        expect(a.u32(2)).toBe(n);
        expect(a.u32(2)).toBe(rawU32(a.get(2)));
        expect(a.u64(3)).toBe(big);
        expect(a.get(4)).toEqual(['eth0', name]);
        expect(a.isArrayAt(3)).toBe(true);
        expect(a.copyAt(3)).toBeUndefined();
        expect(a.u8At(4)).toBe(7);
        // Too short for what is asked: absent, as rawU32 answers.
        expect(a.u32At(4)).toBeUndefined();
        expect(a.u64At(4)).toBeUndefined();
        expect(a.u32(9)).toBeUndefined();
        expect(a.str(9)).toBeUndefined();
        // A copy is the record's bytes and no view of the listing.
        const copy = a.copyAt(0)!;
        expect(copy).toEqual(a.get(1));
        copy.fill(0);
        expect(a.str(1)).toBe(name.replaceAll('\0', ''));
      }),
    );
  });

  it('refuses a record whose attribute runs past the listing', () => {
    const rec = record([[1, AT.bytes, u32(5)]]);
    expect(() => new ByteReader(rec.subarray(0, rec.length - 1)).attrs()).toThrow(/truncated/);
  });
});

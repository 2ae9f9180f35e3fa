// Listed attribute values are views into the listing's memory; their text is
// decoded in place from one Buffer over that memory, not one per string.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { rawStr } from '../../src/nft/netlink/wire.ts';

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

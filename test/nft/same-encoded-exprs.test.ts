// sameEncodedExprs: a rule as the addon lists it (every value as bytes, text
// with its NUL, registers in the kernel's numbering, attributes the kernel
// fills in) against the same rule as the encoder writes it. Recognising what
// the kernel holds is tested on the real kernel (test/native/netlink-batch);
// here, what must not be taken for equal.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EXPR_SCHEMA, ExprSink, F, sameEncodedExprs } from '../../src/nft/netlink/kernel-exprs.ts';
import { AT, NFPROTO, NAT_TYPE, REG } from '../../src/nft/netlink/kernel-constants.ts';
import { lowerInto } from '../../src/nft/netlink/lower.ts';
import { ByteWriter } from '../../src/nft/netlink/wire.ts';
import type { Family, Statement } from '../../src/nft/objects.ts';
import { statementArb } from '../native/statement-arbitraries.ts';

type Attr = [id: number, value: Uint8Array];
const u32 = (v: number) => Uint8Array.of(v & 255, (v >>> 8) & 255, (v >>> 16) & 255, v >>> 24);
const u64 = (v: number) => Uint8Array.of(...u32(v), 0, 0, 0, 0);
const text = (s: string) => Uint8Array.from([...Buffer.from(s, 'utf8'), 0]);

/** One expression as a listing gives it: every attribute typed as bytes. */
function listed(name: string, attrs: Attr[]): number[] {
  const out = [name.length, ...Buffer.from(name, 'latin1'), attrs.length & 255, attrs.length >> 8];
  for (const [id, v] of attrs) out.push(id & 255, id >> 8, AT.bytes, ...u32(v.length), ...v);
  return out;
}

function written(write: (out: ExprSink) => void): { bytes: Uint8Array; count: number } {
  const out = new ExprSink(new ByteWriter(256));
  write(out);
  return { bytes: out.w.finish().slice(), count: out.count };
}

function same(list: number[], w: { bytes: Uint8Array; count: number }): boolean {
  const a = Uint8Array.from(list);
  return sameEncodedExprs(a, 0, a.length, w.bytes, 0, w.bytes.length, w.count);
}

const lookup = written((o) => o.begin('lookup').u32(F.lookup.sreg, REG.R32_00).str(F.lookup.set, 'service-ips').end());
const lookupListed = (flags: number, sreg: number = REG.R1) =>
  listed('lookup', [
    [F.lookup.sreg, u32(sreg)],
    [F.lookup.set, text('service-ips')],
    [F.lookup.flags, u32(flags)],
  ]);

const nat = written((o) =>
  o
    .begin('nat')
    .u32(F.nat.type, NAT_TYPE.dnat)
    .u32(F.nat.family, NFPROTO.ipv4)
    .u32(F.nat.reg_addr_min, REG.R1)
    .u32(F.nat.reg_proto_min, REG.R2)
    .end(),
);
const natListed = (over: { addrMax?: number; protoMax?: number; flags?: number } = {}) =>
  listed('nat', [
    [F.nat.type, u32(NAT_TYPE.dnat)],
    [F.nat.family, u32(NFPROTO.ipv4)],
    [F.nat.reg_addr_min, u32(REG.R1)],
    [F.nat.reg_addr_max, u32(over.addrMax ?? REG.R1)],
    [F.nat.reg_proto_min, u32(REG.R2)],
    [F.nat.reg_proto_max, u32(over.protoMax ?? REG.R2)],
    [F.nat.flags, u32(over.flags ?? 3)],
  ]);

describe('sameEncodedExprs', () => {
  it('takes the kernel’s register numbering, text terminator and zero defaults for what was written', () => {
    expect(same(lookupListed(0), lookup)).toBe(true);
    expect(same(lookupListed(0, REG.R32_00), lookup)).toBe(true);
  });

  it('refuses a filled-in attribute whose value is not the kernel’s default', () => {
    expect(same(lookupListed(1), lookup)).toBe(false);
    expect(same(lookupListed(0, REG.R2), lookup)).toBe(false);
  });

  it('takes a nat’s range end as its start and its range flags as derived from its registers, nothing else', () => {
    expect(same(natListed(), nat)).toBe(true);
    expect(same(natListed({ addrMax: REG.R2 }), nat)).toBe(false);
    expect(same(natListed({ protoMax: REG.R1 }), nat)).toBe(false);
    expect(same(natListed({ flags: 1 }), nat)).toBe(false);
    expect(same(natListed({ flags: 0x13 }), nat)).toBe(false);
  });

  it('takes whatever a counter has counted', () => {
    const counter = written((o) => o.begin('counter').end());
    const { packets, bytes } = EXPR_SCHEMA.counter!;
    expect(
      same(
        listed('counter', [
          [packets![0], u64(7)],
          [bytes![0], u64(9000)],
        ]),
        counter,
      ),
    ).toBe(true);
  });

  it('reads the register numbering only into register fields', () => {
    const payload = written((o) =>
      o.begin('payload').u32(F.payload.dreg, REG.R1).u32(F.payload.base, 1).u32(F.payload.offset, 1).u32(F.payload.len, 4).end(),
    );
    const as = (dreg: number, offset: number) =>
      listed('payload', [
        [F.payload.dreg, u32(dreg)],
        [F.payload.base, u32(1)],
        [F.payload.offset, u32(offset)],
        [F.payload.len, u32(4)],
      ]);
    expect(same(as(REG.R32_00, 1), payload)).toBe(true);
    expect(same(as(REG.R1, REG.R32_00), payload)).toBe(false);
  });

  it('refuses an attribute the writer did not write and the kernel does not fill in, a missing one, other bytes, or a cut listing', () => {
    const withExtra = listed('lookup', [
      [F.lookup.sreg, u32(REG.R1)],
      [F.lookup.dreg, u32(REG.R1)],
      [F.lookup.set, text('service-ips')],
    ]);
    expect(same(withExtra, lookup)).toBe(false);
    expect(same(listed('lookup', [[F.lookup.sreg, u32(REG.R1)]]), lookup)).toBe(false);
    expect(
      same(
        listed('lookup', [
          [F.lookup.sreg, u32(REG.R1)],
          [F.lookup.set, text('service-ipz')],
        ]),
        lookup,
      ),
    ).toBe(false);
    const whole = lookupListed(0);
    for (let cut = 0; cut < whole.length; cut++) expect(same(whole.slice(0, cut), lookup), `cut at ${cut}`).toBe(false);
    expect(same(listed('lookupx', []), lookup)).toBe(false);
  });
});

/**
 * What the kernel lists for what the encoder wrote, as the real kernel does it
 * (test/native/netlink-batch checks every statement kind there): every value
 * as bytes, text with its NUL, a register that starts a 128-bit one under the
 * 128-bit name, and the attributes it fills in.
 */
function asKernelLists(w: { bytes: Uint8Array; count: number }, counted: number): Uint8Array {
  const b = w.bytes;
  const out: number[] = [];
  const u32le = (p: number) => (b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24)) >>> 0;
  for (let p = 0, k = 0; k < w.count; k++) {
    const name = Buffer.from(b.subarray(p + 1, p + 1 + b[p]!)).toString('latin1');
    p += 1 + b[p]!;
    const n = b[p]! | (b[p + 1]! << 8);
    p += 2;
    const attrs = new Map<number, Uint8Array>();
    for (let i = 0; i < n; i++) {
      const id = b[p]! | (b[p + 1]! << 8);
      const type = b[p + 2]!;
      const len = u32le(p + 3);
      let v = b.slice(p + 7, p + 7 + len);
      const field = Object.entries(EXPR_SCHEMA[name]!).find(([, [fid]]) => fid === id)?.[0] ?? '';
      if (type === AT.str) v = Uint8Array.from([...v, 0]);
      if (/reg/.test(field) && len === 4 && u32le(p + 7) >= REG.R32_00 && (u32le(p + 7) - REG.R32_00) % 4 === 0)
        v = u32((u32le(p + 7) - REG.R32_00) / 4 + 1);
      attrs.set(id, v);
      p += 7 + len;
    }
    const fill = (field: string, v: Uint8Array) => {
      const id = EXPR_SCHEMA[name]![field]![0];
      if (!attrs.has(id)) attrs.set(id, v);
    };
    if (name === 'lookup') fill('flags', u32(0));
    if (name === 'bitwise') fill('op', u32(0));
    if (name === 'dynset') {
      fill('timeout', u64(0));
      fill('flags', u32(0));
    }
    if (name === 'counter') {
      fill('packets', u64(counted));
      fill('bytes', u64(counted * 60));
    }
    if (name === 'nat') {
      const get = (f: string) => attrs.get(EXPR_SCHEMA.nat![f]![0]);
      if (get('reg_addr_min')) fill('reg_addr_max', get('reg_addr_min')!);
      if (get('reg_proto_min')) fill('reg_proto_max', get('reg_proto_min')!);
      fill('flags', u32((get('reg_addr_min') ? 1 : 0) | (get('reg_proto_min') ? 2 : 0)));
    }
    out.push(
      ...listed(
        name,
        [...attrs].sort(([x], [y]) => x - y),
      ),
    );
  }
  return Uint8Array.from(out);
}

describe('sameEncodedExprs over any rule we write', () => {
  const lowered = (stmts: Statement[], family: Family) => written((o) => lowerInto(o, stmts, family));
  for (const family of ['ip', 'ip6', 'inet'] as const) {
    const rule = fc.array(statementArb(family), { minLength: 1, maxLength: 5 });
    it(`recognises a rule as the kernel lists it, and no other rule, in ${family} tables`, () => {
      fc.assert(
        fc.property(rule, rule, fc.nat(1000), (a, b, counted) => {
          const held = asKernelLists(lowered(a, family), counted);
          const want = lowered(a, family);
          expect(sameEncodedExprs(held, 0, held.length, want.bytes, 0, want.bytes.length, want.count)).toBe(true);
          const other = lowered(b, family);
          const same = sameEncodedExprs(held, 0, held.length, other.bytes, 0, other.bytes.length, other.count);
          // lower is one-to-one on what we write (raise(lower(x)) is x, test/native/lower-raise): other rules are never taken for it.
          expect(same).toBe(JSON.stringify(a) === JSON.stringify(b));
        }),
        { numRuns: 1000 },
      );
    });
  }
});

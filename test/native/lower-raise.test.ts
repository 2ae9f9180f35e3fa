// raise(lower(x)) === x for every statement list we can write, in every family;
// and the encoder's speed on a 100k-element transaction (printed, not asserted).

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeOperations } from '../../src/nft/netlink/encode.ts';
import type { Family, NftMap, Operation, Statement } from '../../src/nft/objects.ts';
import { lower, lowerInto } from '../../src/nft/netlink/lower.ts';
import { ByteWriter } from '../../src/nft/netlink/wire.ts';
import { NftRaiseError, raise } from '../../src/nft/netlink/raise.ts';
import { ExprSink, type KernelExpr } from '../../src/nft/netlink/kernel-exprs.ts';
import { statementArb } from './statement-arbitraries.ts';

const families: Family[] = ['ip', 'ip6', 'inet'];

describe('lower/raise', () => {
  for (const family of families) {
    it(`raise(lower(x)) equals x in ${family} tables`, () => {
      fc.assert(
        fc.property(fc.array(statementArb(family), { minLength: 1, maxLength: 6 }), (stmts) => {
          expect(raise(lower(stmts, family), family)).toEqual(stmts);
        }),
        { numRuns: 1500 },
      );
    });
  }

  for (const family of families) {
    it(`writes each expression's attributes in ascending id order, as the kernel lists them, in ${family} tables`, () => {
      // Adoption recognises a listed rule by walking both encodings in step (sameEncodedExprs).
      fc.assert(
        fc.property(fc.array(statementArb(family), { minLength: 1, maxLength: 6 }), (stmts) => {
          const out = new ExprSink(new ByteWriter(256));
          lowerInto(out, stmts, family);
          const b = out.w.finish();
          for (let p = 0, k = 0; k < out.count; k++) {
            p += 1 + b[p]!;
            const n = b[p]! | (b[p + 1]! << 8);
            p += 2;
            let last = -1;
            for (let i = 0; i < n; i++) {
              const id = b[p]! | (b[p + 1]! << 8);
              expect(id).toBeGreaterThan(last);
              last = id;
              p += 7 + (b[p + 3]! | (b[p + 4]! << 8) | (b[p + 5]! << 16) | (b[p + 6]! << 24));
            }
          }
        }),
        { numRuns: 500 },
      );
    });
  }

  it('tells tcp dport apart from an explicit meta l4proto match before th dport', () => {
    const a: Statement[] = [{ kind: 'match', left: { kind: 'payload', field: 'tcp dport' }, op: '==', right: '80' }];
    const b: Statement[] = [
      { kind: 'match', left: { kind: 'meta', key: 'l4proto' }, op: '==', right: 'tcp' },
      { kind: 'match', left: { kind: 'payload', field: 'th dport' }, op: '==', right: '80' },
    ];
    expect(raise(lower(a, 'ip'), 'ip')).toEqual(a);
    expect(raise(lower(b, 'ip'), 'ip')).toEqual(b);
  });

  it("keeps nft's interface-name wildcard: a prefix compare of the prefix's bytes, and back", () => {
    const stmts: Statement[] = [
      { kind: 'match', left: { kind: 'meta', key: 'iifname' }, op: '!=', right: 'cali*' },
      { kind: 'match', left: { kind: 'meta', key: 'iifname' }, op: '==', right: 'cbr0' },
    ];
    const exprs = lower(stmts, 'ip');
    expect(exprs.flatMap((e) => (e.name === 'cmp' ? [(e.data as Uint8Array).length] : []))).toEqual([4, 16]);
    expect(raise(exprs, 'ip')).toEqual(stmts);
  });

  it('refuses kernel expressions it does not write', () => {
    const foreign: KernelExpr[] = [{ name: 'log', prefix: 'x' }];
    expect(() => raise(foreign, 'ip')).toThrow(NftRaiseError);
    const badRegs: KernelExpr[] = [
      { name: 'payload', dreg: 3, base: 1, offset: 16, len: 4 },
      { name: 'cmp', sreg: 3, op: 0, data: new Uint8Array(4) },
    ];
    expect(() => raise(badRegs, 'ip')).toThrow(/cannot read kernel expression 0/);
    const noDep: KernelExpr[] = [{ name: 'cmp', sreg: 1, op: 0, data: new Uint8Array(2) }];
    expect(() => raise(noDep, 'ip')).toThrow(NftRaiseError);
  });
});

describe('encode', () => {
  it('encodes 100k map elements in one buffer (time printed)', () => {
    const map: NftMap = {
      kind: 'map',
      family: 'ip',
      table: 't',
      name: 'service-ips',
      keyType: ['ipv4_addr', 'inet_proto', 'inet_service'],
      dataType: 'verdict',
    };
    const ops: Operation[] = [{ verb: 'add', object: map }];
    for (let i = 0; i < 100_000; i++) {
      ops.push({
        verb: 'add',
        object: {
          kind: 'element',
          family: 'ip',
          table: 't',
          set: 'service-ips',
          key: [`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, i % 2 ? 'tcp' : 'udp', String(1 + (i % 60000))],
          value: { verdict: 'goto', chain: `service-${i.toString(36).padStart(8, '0')}-ns/name/tcp/p80` },
        },
      });
    }
    encodeOperations(ops.slice(0, 1000));
    const t0 = performance.now();
    const { bytes, records } = encodeOperations(ops);
    const ms = performance.now() - t0;
    console.log(`encode: 100k elements -> ${(bytes.length / 1e6).toFixed(1)} MB in ${ms.toFixed(1)} ms (${records} records)`);
    expect(records).toBe(2);
    expect(bytes.length).toBeGreaterThan(100_000 * 20);
  });
});

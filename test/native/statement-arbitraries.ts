// fast-check generators of valid, canonical rule statements for one table family.

import fc from 'fast-check';
import type { DataType, Family, Selector, Statement } from '../../src/nft/objects.ts';
import { CT_STATES, CT_STATUSES, FIB_TYPES, integerMax, selectorType } from '../../src/nft/rule-checks.ts';
import { valueFromBytes } from '../../src/nft/values.ts';

const bytes = (n: number) => fc.uint8Array({ minLength: n, maxLength: n });

function masked(b: Uint8Array, len: number): Uint8Array {
  const out = b.slice();
  for (let i = len; i < out.length * 8; i++) out[i >> 3]! &= ~(0x80 >> (i & 7));
  return out;
}

export const addrArb = (type: 'ipv4_addr' | 'ipv6_addr', prefix: boolean): fc.Arbitrary<string> => {
  const n = type === 'ipv4_addr' ? 4 : 16;
  const plain = bytes(n).map((b) => valueFromBytes(type, b));
  if (!prefix) return plain;
  const pfx = fc
    .tuple(bytes(n), fc.integer({ min: 0, max: n * 8 - 1 }))
    .map(([b, len]) => `${valueFromBytes(type, masked(b, len))}/${len}`);
  return fc.oneof(plain, pfx);
};

const markArb = fc
  .integer({ min: 1, max: 0xffffffff })
  .map((v) => valueFromBytes('mark', Uint8Array.of(v >>> 24, (v >>> 16) & 255, (v >>> 8) & 255, v & 255)));
const ifnameArb = fc.stringMatching(/^[a-z][a-z0-9]{0,14}$/);

function valueArb(type: DataType): fc.Arbitrary<string> {
  switch (type) {
    case 'ipv4_addr':
    case 'ipv6_addr':
      return addrArb(type, false);
    case 'inet_proto':
      return fc.integer({ min: 0, max: 255 }).map((v) => valueFromBytes('inet_proto', Uint8Array.of(v)));
    case 'inet_service':
      return fc.integer({ min: 0, max: 65535 }).map(String);
    case 'mark':
      return markArb;
    case 'ifname':
      return ifnameArb;
    default:
      throw new Error(type);
  }
}

function payloadFields(family: Family): string[] {
  const v4 = ['ip saddr', 'ip daddr', 'ip protocol'];
  const v6 = ['ip6 saddr', 'ip6 daddr', 'ip6 nexthdr'];
  const l4 = ['th sport', 'th dport', 'tcp dport', 'udp dport', 'sctp dport'];
  return [...(family !== 'ip6' ? v4 : []), ...(family !== 'ip' ? v6 : []), ...l4];
}

function ctAddrFields(family: Family): string[] {
  return [...(family !== 'ip6' ? ['ip saddr', 'ip daddr'] : []), ...(family !== 'ip' ? ['ip6 saddr', 'ip6 daddr'] : [])];
}

/** Selectors whose values can key a set. */
export function keySelectorArb(family: Family): fc.Arbitrary<Selector> {
  return fc.oneof(
    fc.constantFrom(...payloadFields(family)).map((field) => ({ kind: 'payload', field }) as Selector),
    fc.constantFrom('l4proto', 'mark', 'iifname', 'oifname').map((key) => ({ kind: 'meta', key }) as Selector),
    fc.constant({ kind: 'ct', key: 'mark' } as Selector),
    fc
      .tuple(fc.constantFrom('original', 'reply'), fc.constantFrom(...ctAddrFields(family)))
      .map(([dir, field]) => ({ kind: 'ct-addr', dir, field }) as Selector),
  );
}

export function selectorArb(family: Family): fc.Arbitrary<Selector> {
  return fc.oneof(
    keySelectorArb(family),
    fc.constantFrom('nfproto', 'iif', 'oif').map((key) => ({ kind: 'meta', key }) as Selector),
    fc.constantFrom('state', 'status', 'packets', 'bytes').map((key) => ({ kind: 'ct', key }) as Selector),
    fc.constantFrom('daddr', 'saddr').map((addr) => ({ kind: 'fib-type', addr }) as Selector),
    fc.integer({ min: 1, max: 100000 }).map((mod) => ({ kind: 'numgen', mod }) as Selector),
  );
}

function subsetText(names: readonly string[]): fc.Arbitrary<string> {
  return fc.subarray([...names], { minLength: 1 }).map((s) => s.join(','));
}

function operandArb(s: Selector, prefixOk: boolean): fc.Arbitrary<string> {
  const t = selectorType(s);
  switch (t) {
    case 'ct_state':
      return subsetText(CT_STATES);
    case 'ct_status':
      return subsetText(CT_STATUSES);
    case 'fib_type':
      return fc.constantFrom(...FIB_TYPES);
    case 'nf_proto':
      return fc.constantFrom('ipv4', 'ipv6');
    case 'integer':
      return fc.bigInt({ min: 0n, max: BigInt(integerMax(s)) }).map(String);
    case 'ipv4_addr':
    case 'ipv6_addr':
      return addrArb(t, prefixOk);
    default:
      return valueArb(t);
  }
}

export function matchArb(family: Family): fc.Arbitrary<Statement> {
  return selectorArb(family).chain((left) => {
    const t = selectorType(left);
    const ordered = t === 'integer' || t === 'inet_service' || t === 'mark';
    const ops = ordered ? (['==', '!=', '<', '>', '<=', '>='] as const) : (['==', '!='] as const);
    const maskable = t === 'integer' || t === 'mark';
    return fc
      .record(
        {
          kind: fc.constant('match' as const),
          left: fc.constant(left),
          op: fc.constantFrom(...ops),
          right: operandArb(left, t === 'ipv4_addr' || t === 'ipv6_addr'),
          mask: maskable ? operandArb(left, false) : fc.constant(undefined),
        },
        { requiredKeys: ['kind', 'left', 'op', 'right'] },
      )
      .map((m) => {
        // Masks only where allowed; addresses with a mask are never generated.
        const out: Statement = { kind: 'match', left: m.left, op: m.op, right: m.right };
        if (m.mask !== undefined) out.mask = m.mask;
        return out;
      });
  });
}

const nameArb = fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/);

export function statementArb(family: Family): fc.Arbitrary<Statement> {
  const keys = fc.array(keySelectorArb(family), { minLength: 1, maxLength: 3 });
  const addrType =
    family === 'ip'
      ? fc.constant('ipv4_addr' as const)
      : family === 'ip6'
        ? fc.constant('ipv6_addr' as const)
        : fc.constantFrom('ipv4_addr' as const, 'ipv6_addr' as const);
  const rejects = [
    'tcp reset',
    ...(family !== 'ip6' ? ['icmp port-unreachable'] : []),
    ...(family !== 'ip' ? ['icmpv6 port-unreachable'] : []),
    ...(family === 'inet' ? ['icmpx port-unreachable'] : []),
  ];
  return fc.oneof(
    { arbitrary: matchArb(family), weight: 6 },
    fc
      .tuple(keys, nameArb, fc.boolean())
      .map(([k, set, neg]) => (neg ? { kind: 'lookup', keys: k, set, negate: true } : { kind: 'lookup', keys: k, set }) as Statement),
    fc.tuple(keys, nameArb).map(([k, map]) => ({ kind: 'vmap', keys: k, map }) as Statement),
    fc.constant({ kind: 'counter' } as Statement),
    fc.constantFrom('accept', 'drop', 'return', 'continue').map((verdict) => ({ kind: 'verdict', verdict }) as Statement),
    fc.tuple(fc.constantFrom('jump', 'goto'), nameArb).map(([verdict, chain]) => ({ kind: 'verdict', verdict, chain }) as Statement),
    fc
      .tuple(
        fc.constantFrom('dnat', 'snat'),
        addrType.chain((t) => addrArb(t, false)),
        fc.option(fc.integer({ min: 0, max: 65535 }), { nil: undefined }),
      )
      .map(([kind, addr, port]) => (port === undefined ? { kind, addr } : { kind, addr, port }) as Statement),
    fc
      .tuple(
        fc.array(
          fc.oneof(
            keySelectorArb(family),
            fc.integer({ min: 1, max: 100000 }).map((mod) => ({ kind: 'numgen', mod }) as Selector),
          ),
          { minLength: 1, maxLength: 2 },
        ),
        nameArb,
        family === 'inet' ? fc.constantFrom('ip' as const, 'ip6' as const) : fc.constant(family),
      )
      .map(([k, map, fam]) => ({ kind: 'dnat-map', family: fam, keys: k, map }) as Statement),
    fc.boolean().map((r) => (r ? { kind: 'masquerade', fullyRandom: true } : { kind: 'masquerade' }) as Statement),
    fc.constantFrom(...rejects).map((w) => ({ kind: 'reject', with: w }) as Statement),
    fc
      .tuple(markArb, fc.boolean())
      .map(([value, or]) => (or ? { kind: 'mark-set', value, or: true } : { kind: 'mark-set', value }) as Statement),
    markArb.map((value) => ({ kind: 'mark-xor', value }) as Statement),
    fc
      .tuple(fc.constantFrom('add', 'update'), nameArb, keys, fc.option(fc.integer({ min: 1, max: 1_000_000 }), { nil: undefined }))
      .map(
        ([op, set, k, timeout]) =>
          (timeout === undefined
            ? { kind: 'set-update', op, set, keys: k }
            : { kind: 'set-update', op, set, keys: k, timeout }) as Statement,
      ),
    nameArb.map((flowtable) => ({ kind: 'flow-offload', flowtable }) as Statement),
    fc.constant({ kind: 'notrack' } as Statement),
  );
}

// Protocol dependencies of lowered statements (see lower.ts): `meta nfproto`
// for ip/ip6 fields in inet tables, `meta l4proto` for tcp/udp/sctp ports and
// tcp reset, each loaded into the register that says which key it belongs to.

import type { Family, Selector, Statement } from '../objects.ts';
import { CMP_OP, META_KEY, NFPROTO } from './kernel-constants.ts';
import { type ExprSink, F } from './kernel-exprs.ts';
import { NftLowerError, PAYLOAD_FIELDS } from './operands.ts';
import { assertNever } from '../../assert-never.ts';

const L4_NUMBER = { tcp: 6, udp: 17, sctp: 132 } as const;

/** A dependency of key `index`: `meta nfproto|l4proto == value`, as an explicit statement would be. */
export type Dependency = { key: 'nfproto' | 'l4proto'; value: number; index: number };

function selectorDependencies(s: Selector, family: Family, index = 0): Dependency[] {
  if (s.kind === 'payload') {
    const spec = PAYLOAD_FIELDS[s.field]!;
    if (spec.l4proto) return [{ key: 'l4proto', value: L4_NUMBER[spec.l4proto], index }];
    if (spec.nfproto && family === 'inet') return [{ key: 'nfproto', value: NFPROTO[spec.nfproto], index }];
  }
  if (s.kind === 'ct-addr' && family === 'inet') {
    return [{ key: 'nfproto', value: s.field.startsWith('ip6') ? NFPROTO.ipv6 : NFPROTO.ipv4, index }];
  }
  return [];
}

export function statementDependencies(st: Statement, family: Family): Dependency[] {
  switch (st.kind) {
    case 'match':
      return selectorDependencies(st.left, family);
    case 'lookup':
    case 'vmap':
    case 'set-update':
    case 'dnat-map':
      return st.keys.flatMap((k, i) => selectorDependencies(k, family, i));
    case 'reject':
      return st.with === 'tcp reset' ? [{ key: 'l4proto', value: L4_NUMBER.tcp, index: 0 }] : [];
    case 'verdict':
    case 'counter':
    case 'dnat':
    case 'snat':
    case 'masquerade':
    case 'mark-set':
    case 'mark-xor':
    case 'flow-offload':
    case 'notrack':
      return [];
    default:
      return assertNever(st);
  }
}

/** The register the dependency of key 0 loads into (NFT_REG32_15); key k uses 15-k. */
export const DEPENDENCY_REG = 23;
/** Keys past this one cannot carry a dependency (their register would be NFT_REG_1's). */
export const MAX_DEPENDENCY_INDEX = 14;

function writeDependency(out: ExprSink, key: 'nfproto' | 'l4proto', value: number, index: number): void {
  if (index > MAX_DEPENDENCY_INDEX) throw new NftLowerError(`key ${index} of a concatenation cannot carry a protocol dependency`);
  const reg = DEPENDENCY_REG - index;
  out.begin('meta').u32(F.meta.key, META_KEY[key]).u32(F.meta.dreg, reg).end();
  const at = out.begin('cmp').u32(F.cmp.sreg, reg).u32(F.cmp.op, CMP_OP['==']).zeros(F.cmp.data, 1);
  out.w.raw[at] = value;
  out.end();
}

/** The dependency of one selector (as selectorDependencies, without allocating). */
function writeSelectorDependency(out: ExprSink, s: Selector, family: Family, index: number): void {
  if (s.kind === 'payload') {
    const spec = PAYLOAD_FIELDS[s.field]!;
    if (spec.l4proto) writeDependency(out, 'l4proto', L4_NUMBER[spec.l4proto], index);
    else if (spec.nfproto && family === 'inet') writeDependency(out, 'nfproto', NFPROTO[spec.nfproto], index);
  } else if (s.kind === 'ct-addr' && family === 'inet') {
    writeDependency(out, 'nfproto', s.field.startsWith('ip6') ? NFPROTO.ipv6 : NFPROTO.ipv4, index);
  }
}

/** The dependencies of a statement, in statementDependencies' order. */
export function writeDependencies(out: ExprSink, st: Statement, family: Family): void {
  switch (st.kind) {
    case 'match':
      writeSelectorDependency(out, st.left, family, 0);
      return;
    case 'lookup':
    case 'vmap':
    case 'set-update':
    case 'dnat-map':
      for (let i = 0; i < st.keys.length; i++) writeSelectorDependency(out, st.keys[i]!, family, i);
      return;
    case 'reject':
      if (st.with === 'tcp reset') writeDependency(out, 'l4proto', L4_NUMBER.tcp, 0);
      return;
    case 'verdict':
    case 'counter':
    case 'dnat':
    case 'snat':
    case 'masquerade':
    case 'mark-set':
    case 'mark-xor':
    case 'flow-offload':
    case 'notrack':
      return; // nothing they read needs a protocol match first
    default:
      assertNever(st);
  }
}

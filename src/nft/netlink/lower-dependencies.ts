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

/** Called for each dependency with the caller's context: a static function, so that lowering allocates nothing per statement. */
type DependencyVisitor<C> = (context: C, key: Dependency['key'], value: number, index: number) => void;

function visitSelector<C>(s: Selector, family: Family, index: number, visit: DependencyVisitor<C>, context: C): void {
  if (s.kind === 'payload') {
    const spec = PAYLOAD_FIELDS[s.field]!;
    if (spec.l4proto) visit(context, 'l4proto', L4_NUMBER[spec.l4proto], index);
    else if (spec.nfproto && family === 'inet') visit(context, 'nfproto', NFPROTO[spec.nfproto], index);
  } else if (s.kind === 'ct-addr' && family === 'inet') {
    visit(context, 'nfproto', s.field.startsWith('ip6') ? NFPROTO.ipv6 : NFPROTO.ipv4, index);
  }
}

/** Each dependency of a statement, in order: what lowering writes before it and raising expects to find. */
function visitDependencies<C>(st: Statement, family: Family, visit: DependencyVisitor<C>, context: C): void {
  switch (st.kind) {
    case 'match':
      visitSelector(st.left, family, 0, visit, context);
      return;
    case 'lookup':
    case 'vmap':
    case 'set-update':
    case 'dnat-map':
      for (let i = 0; i < st.keys.length; i++) visitSelector(st.keys[i]!, family, i, visit, context);
      return;
    case 'reject':
      if (st.with === 'tcp reset') visit(context, 'l4proto', L4_NUMBER.tcp, 0);
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

const collect: DependencyVisitor<Dependency[]> = (list, key, value, index) => {
  list.push({ key, value, index });
};

export function statementDependencies(st: Statement, family: Family): Dependency[] {
  const list: Dependency[] = [];
  visitDependencies(st, family, collect, list);
  return list;
}

/** The register the dependency of key 0 loads into (NFT_REG32_15); key k uses 15-k. */
export const DEPENDENCY_REG = 23;
/** Keys past this one cannot carry a dependency (their register would be NFT_REG_1's). */
export const MAX_DEPENDENCY_INDEX = 14;

function writeDependency(out: ExprSink, key: Dependency['key'], value: number, index: number): void {
  if (index > MAX_DEPENDENCY_INDEX) throw new NftLowerError(`key ${index} of a concatenation cannot carry a protocol dependency`);
  const reg = DEPENDENCY_REG - index;
  out.begin('meta').u32(F.meta.key, META_KEY[key]).u32(F.meta.dreg, reg).end();
  const at = out.begin('cmp').u32(F.cmp.sreg, reg).u32(F.cmp.op, CMP_OP['==']).zeros(F.cmp.data, 1);
  out.w.raw[at] = value;
  out.end();
}

/** The dependencies of a statement, written before it (lower.ts). */
export function writeDependencies(out: ExprSink, st: Statement, family: Family): void {
  visitDependencies(st, family, writeDependency, out);
}

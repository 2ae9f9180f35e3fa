// What a rule or an element refers to in its table (chains, sets and maps,
// flowtables): the fake kernel's checks that the targets exist and fit, as
// nf_tables makes them when the rule or element is added, and its use counts,
// which decide whether a chain, set or flowtable may be deleted (EBUSY).

import { isVerdictValue, type Element, type Rule } from '../objects.ts';
import { assertNever } from '../../assert-never.ts';
import { err, type TableState } from './state.ts';

/** A jump or goto target: an existing regular chain (ENOENT; EOPNOTSUPP for a base chain). */
export function checkJumpTarget(ts: TableState, chain: string): void {
  const target = ts.chains.get(chain);
  if (!target) err('ENOENT', `chain ${chain} does not exist`);
  if (target.chain.base) err('EOPNOTSUPP', `cannot jump to base chain ${chain}`);
}

/** Each statement's references exist and fit the statement (key length, set or map, data type, flags). */
export function checkRuleReferences(ts: TableState, r: Rule): void {
  for (const st of r.exprs) {
    switch (st.kind) {
      case 'verdict':
        if (st.verdict === 'jump' || st.verdict === 'goto') checkJumpTarget(ts, st.chain);
        break;
      case 'lookup':
      case 'vmap':
      case 'set-update':
      case 'dnat-map': {
        const name = st.kind === 'vmap' || st.kind === 'dnat-map' ? st.map : st.set;
        const ss = ts.sets.get(name);
        if (!ss) err('ENOENT', `set ${name} does not exist`);
        const c = ss.set;
        const keys = st.keys.length;
        if (keys !== c.keyType.length) err('EINVAL', `key length does not match ${c.kind} ${name}`);
        if (st.kind === 'vmap' && (c.kind !== 'map' || c.dataType !== 'verdict')) err('EINVAL', `${name} is not a verdict map`);
        if (st.kind === 'lookup' && c.kind !== 'set') err('EINVAL', `${name} is a map`);
        // A lookup with a data register needs a map (the kernel checks no more: the types are ours to get right).
        if (st.kind === 'dnat-map' && (c.kind !== 'map' || c.dataType === 'verdict')) err('EINVAL', `${name} is not a data map`);
        if (st.kind === 'set-update') {
          if (c.kind !== 'set' || c.flags?.includes('interval')) err('EOPNOTSUPP', `${name} cannot be updated from the packet path`);
          if (st.timeout !== undefined && !c.flags?.includes('timeout')) err('EOPNOTSUPP', `${name} has no timeout flag`);
        }
        break;
      }
      case 'flow-offload':
        if (!ts.flowtables.has(st.flowtable)) err('ENOENT', `flowtable ${st.flowtable} does not exist`);
        break;
      case 'match':
      case 'counter':
      case 'dnat':
      case 'snat':
      case 'masquerade':
      case 'reject':
      case 'mark-set':
      case 'mark-xor':
      case 'notrack':
        break; // no reference to another object
      default:
        assertNever(st);
    }
  }
}

/** Adds `delta` to the use count of everything the rule refers to. */
export function countRuleReferences(ts: TableState, r: Rule, delta: number): void {
  for (const st of r.exprs) {
    if (st.kind === 'verdict' && (st.verdict === 'jump' || st.verdict === 'goto')) bump(ts.chainUse, st.chain, delta);
    else if (st.kind === 'lookup' || st.kind === 'set-update') bump(ts.setUse, st.set, delta);
    else if (st.kind === 'vmap' || st.kind === 'dnat-map') bump(ts.setUse, st.map, delta);
    else if (st.kind === 'flow-offload') bump(ts.flowtableUse, st.flowtable, delta);
  }
}

/** Adds `delta` to the use count of the chain an element's verdict jumps to, if any. */
export function countElementReferences(ts: TableState, e: Element, delta: number): void {
  const v = e.value;
  if (isVerdictValue(v) && (v.verdict === 'jump' || v.verdict === 'goto')) bump(ts.chainUse, v.chain, delta);
}

function bump(m: Map<string, number>, name: string, delta: number): void {
  const n = (m.get(name) ?? 0) + delta;
  if (n === 0) m.delete(name);
  else m.set(name, n);
}

// Shared pieces of the fake kernel: its state shapes, errnos and the error
// its model throws. See fake-kernel.ts for what the model does.

import type { Chain, Element, Family, Flowtable, NftMap, NftSet, Rule, Statement, Table } from '../objects.ts';
import { assertNever } from '../../assert-never.ts';

export const ERRNO: Readonly<Record<string, number>> = {
  EIO: 5,
  ENOENT: 2,
  EEXIST: 17,
  EBUSY: 16,
  EINVAL: 22,
  EMLINK: 31,
  EOPNOTSUPP: 95,
  ENOBUFS: 105,
  ENOMEM: 12,
  EPERM: 1,
};

/** Thrown inside the model; becomes an OperationFailure for the operation at hand. */
export class KernelError extends Error {
  readonly errnoCode: string;
  /** Operation index when known better than "the one being applied". */
  readonly index: number | undefined;
  constructor(code: string, message: string, index?: number) {
    super(message);
    this.errnoCode = code;
    this.index = index;
  }
}

export function err(code: string, message: string): never {
  throw new KernelError(code, message);
}

export interface ChainState {
  chain: Chain;
  rules: Rule[];
}
export interface SetState {
  set: NftSet | NftMap;
  elements: Map<string, Element>;
}
export interface TableState {
  table: Table;
  chains: Map<string, ChainState>;
  sets: Map<string, SetState>;
  flowtables: Map<string, Flowtable>;
  /** References to chains (jump/goto in rules and map elements), sets and flowtables (rules). */
  chainUse: Map<string, number>;
  setUse: Map<string, number>;
  flowtableUse: Map<string, number>;
  nextHandle: number;
}

export interface FakeKernelOptions {
  /** Whether the kernel has flowtables (CONFIG_NF_FLOW_TABLE); without, creating one fails ENOENT, as on this project's machines. */
  flowtables?: boolean;
  /** Interfaces that exist; a flowtable naming another fails ENOENT. Any name is accepted when not given. */
  devices?: readonly string[];
}

export const tableKey = (family: Family, name: string) => `${family} ${name}`;
export const elementKey = (key: readonly string[]) => key.join('\0');

export function copyChain(c: Chain): Chain {
  return { ...c, ...(c.base ? { base: { ...c.base } } : {}) };
}

export function copyContainer<C extends NftSet | NftMap>(c: C): C {
  const out = { ...c, keyType: [...c.keyType], ...(c.flags ? { flags: [...c.flags] } : {}) };
  if (out.kind === 'map' && Array.isArray(out.dataType)) out.dataType = [...out.dataType];
  return out;
}

export function copyElement(e: Element): Element {
  const v = e.value;
  return { ...e, key: [...e.key], ...(v !== undefined && typeof v !== 'string' ? { value: Array.isArray(v) ? [...v] : { ...v } } : {}) };
}

/** A rule copied deep enough that neither the caller nor a listing reader can change the model's state. */
export function copyRule(r: Rule): Rule {
  return { ...r, exprs: r.exprs.map(copyStatement) };
}

function copyStatement(s: Statement): Statement {
  switch (s.kind) {
    case 'match':
      return { ...s, left: { ...s.left } };
    case 'lookup':
    case 'vmap':
    case 'set-update':
    case 'dnat-map':
      return { ...s, keys: s.keys.map((k) => ({ ...k })) };
    case 'verdict':
    case 'counter':
    case 'dnat':
    case 'snat':
    case 'masquerade':
    case 'reject':
    case 'mark-set':
    case 'mark-xor':
    case 'flow-offload':
    case 'notrack':
      return { ...s }; // flat: a shallow copy is a deep one
    default:
      return assertNever(s);
  }
}

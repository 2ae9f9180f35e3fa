// Kernel expressions: what a rule is in the kernel (payload loads, compares,
// registers...). lower.ts produces them from Statements, raise.ts turns them
// back; this file maps their fields to libnftnl attribute ids, both ways.

import { AT, type AttrType } from './kernel-constants.ts';
import { rawStr, rawU32, rawU64, rawU8, type Attr, type ByteWriter, type RawAttrs } from './wire.ts';

export type FieldValue = number | bigint | string | Uint8Array;

/** One kernel expression: its libnftnl name and named fields. */
export interface KernelExpr {
  name: string;
  [field: string]: FieldValue;
}

type Schema = Readonly<Record<string, readonly [id: number, type: AttrType]>>;

// Field names follow libnftnl's NFTNL_EXPR_<NAME>_<FIELD>; ids count from NFTNL_EXPR_BASE (1).
export const EXPR_SCHEMA: Readonly<Record<string, Schema>> = {
  payload: { dreg: [1, 'u32'], base: [2, 'u32'], offset: [3, 'u32'], len: [4, 'u32'] },
  cmp: { sreg: [1, 'u32'], op: [2, 'u32'], data: [3, 'bytes'] },
  bitwise: { sreg: [1, 'u32'], dreg: [2, 'u32'], len: [3, 'u32'], mask: [4, 'bytes'], xor: [5, 'bytes'], op: [6, 'u32'] },
  meta: { key: [1, 'u32'], dreg: [2, 'u32'], sreg: [3, 'u32'] },
  ct: { dreg: [1, 'u32'], key: [2, 'u32'], dir: [3, 'u8'], sreg: [4, 'u32'] },
  lookup: { sreg: [1, 'u32'], dreg: [2, 'u32'], set: [3, 'str'], flags: [5, 'u32'] },
  immediate: { dreg: [1, 'u32'], data: [2, 'bytes'], verdict: [3, 'u32'], chain: [4, 'str'] },
  nat: {
    type: [1, 'u32'], family: [2, 'u32'], reg_addr_min: [3, 'u32'], reg_addr_max: [4, 'u32'],
    reg_proto_min: [5, 'u32'], reg_proto_max: [6, 'u32'], flags: [7, 'u32'],
  },
  masq: { flags: [1, 'u32'], reg_proto_min: [2, 'u32'], reg_proto_max: [3, 'u32'] },
  numgen: { dreg: [1, 'u32'], modulus: [2, 'u32'], type: [3, 'u32'], offset: [4, 'u32'] },
  counter: { packets: [1, 'u64'], bytes: [2, 'u64'] },
  reject: { type: [1, 'u32'], code: [2, 'u8'] },
  fib: { dreg: [1, 'u32'], result: [2, 'u32'], flags: [3, 'u32'] },
  dynset: { sreg_key: [1, 'u32'], sreg_data: [2, 'u32'], op: [3, 'u32'], timeout: [4, 'u64'], set: [5, 'str'], flags: [9, 'u32'] },
  flow_offload: { table: [1, 'str'] },
  byteorder: { dreg: [1, 'u32'], sreg: [2, 'u32'], op: [3, 'u32'], len: [4, 'u32'], size: [5, 'u32'] },
  notrack: {},
};

/** Writes a kernel expression's fields as batch attributes (the encoder's hot path: no Attr objects). */
export function writeExprAttrs(w: ByteWriter, e: KernelExpr): void {
  const schema = EXPR_SCHEMA[e.name];
  if (!schema) throw new Error(`no schema for kernel expression ${e.name}`);
  const countAt = w.position;
  w.u16(0);
  let n = 0;
  for (const field in e) {
    if (field === 'name') continue;
    const spec = schema[field];
    if (!spec) throw new Error(`kernel expression ${e.name} has no field ${field}`);
    const value = e[field]!;
    const type = spec[1];
    if (type === 'u32') {
      w.u16(spec[0]);
      w.u8(AT.u32);
      w.u32(4);
      w.u32(value as number);
    } else {
      w.attr({ id: spec[0], type, value });
    }
    n++;
  }
  w.patchU16(countAt, n);
}

/** Fields of a kernel expression as batch attributes. */
export function exprAttrs(e: KernelExpr): Attr[] {
  const schema = EXPR_SCHEMA[e.name];
  if (!schema) throw new Error(`no schema for kernel expression ${e.name}`);
  const out: Attr[] = [];
  for (const [field, value] of Object.entries(e)) {
    if (field === 'name') continue;
    const spec = schema[field];
    if (!spec) throw new Error(`kernel expression ${e.name} has no field ${field}`);
    out.push({ id: spec[0], type: spec[1], value });
  }
  return out;
}

/**
 * A kernel expression from listed attributes. Attributes outside the schema
 * are kept as `attr<id>` byte fields, so raise() sees that it does not know them.
 */
export function exprFromAttrs(name: string, attrs: RawAttrs): KernelExpr {
  const schema = EXPR_SCHEMA[name];
  const e: KernelExpr = { name };
  const byId = new Map<number, [string, AttrType]>();
  if (schema) for (const [field, [id, type]] of Object.entries(schema)) byId.set(id, [field, type]);
  for (const [id, raw] of attrs) {
    const spec = byId.get(id);
    if (!spec || !(raw instanceof Uint8Array)) {
      if (raw instanceof Uint8Array) e[`attr${id}`] = raw.slice();
      continue;
    }
    const [field, type] = spec;
    switch (type) {
      case 'u8':
        e[field] = rawU8(raw)!;
        break;
      case 'u32':
        e[field] = rawU32(raw)!;
        break;
      case 'u64':
        e[field] = rawU64(raw)!;
        break;
      case 'str':
        e[field] = rawStr(raw)!;
        break;
      default:
        e[field] = raw.slice();
    }
  }
  return e;
}

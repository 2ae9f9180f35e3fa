// Kernel expressions: what a rule is in the kernel (payload loads, compares,
// registers...). lower.ts writes them from Statements through an ExprSink
// straight into the batch encoding; raise.ts turns listed ones back. This file
// maps their fields to libnftnl attribute ids, both ways.

import { AT, type AttrType } from './kernel-constants.ts';
import { assertNever } from '../../assert-never.ts';
import type { RawAttrs } from './listing-reader.ts';
import type { ByteWriter } from './wire.ts';

export type FieldValue = number | bigint | string | Uint8Array;

/** One kernel expression: its libnftnl name and named fields. */
export interface KernelExpr {
  name: string;
  [field: string]: FieldValue;
}

type Schema = Readonly<Record<string, readonly [id: number, type: AttrType]>>;

// Field names follow libnftnl's NFTNL_EXPR_<NAME>_<FIELD>; ids count from NFTNL_EXPR_BASE (1).
const SCHEMA = {
  payload: { dreg: [1, 'u32'], base: [2, 'u32'], offset: [3, 'u32'], len: [4, 'u32'] },
  cmp: { sreg: [1, 'u32'], op: [2, 'u32'], data: [3, 'bytes'] },
  bitwise: { sreg: [1, 'u32'], dreg: [2, 'u32'], len: [3, 'u32'], mask: [4, 'bytes'], xor: [5, 'bytes'], op: [6, 'u32'] },
  meta: { key: [1, 'u32'], dreg: [2, 'u32'], sreg: [3, 'u32'] },
  ct: { dreg: [1, 'u32'], key: [2, 'u32'], dir: [3, 'u8'], sreg: [4, 'u32'] },
  lookup: { sreg: [1, 'u32'], dreg: [2, 'u32'], set: [3, 'str'], flags: [5, 'u32'] },
  immediate: { dreg: [1, 'u32'], data: [2, 'bytes'], verdict: [3, 'u32'], chain: [4, 'str'] },
  nat: {
    type: [1, 'u32'],
    family: [2, 'u32'],
    reg_addr_min: [3, 'u32'],
    reg_addr_max: [4, 'u32'],
    reg_proto_min: [5, 'u32'],
    reg_proto_max: [6, 'u32'],
    flags: [7, 'u32'],
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
} as const satisfies Readonly<Record<string, Schema>>;

export type ExprName = keyof typeof SCHEMA;
export const EXPR_SCHEMA: Readonly<Record<string, Schema>> = SCHEMA;

type FieldIds<S> = { readonly [F in keyof S]: S[F] extends readonly [infer Id, AttrType] ? Id : never };
function fieldIds<N extends ExprName>(name: N): FieldIds<(typeof SCHEMA)[N]> {
  const out: Record<string, number> = {};
  for (const [field, [id]] of Object.entries(SCHEMA[name] as Schema)) out[field] = id;
  return out as FieldIds<(typeof SCHEMA)[N]>;
}

/** Attribute ids of each expression's fields, for writers (ExprSink). */
export const F = {
  payload: fieldIds('payload'),
  cmp: fieldIds('cmp'),
  bitwise: fieldIds('bitwise'),
  meta: fieldIds('meta'),
  ct: fieldIds('ct'),
  lookup: fieldIds('lookup'),
  immediate: fieldIds('immediate'),
  nat: fieldIds('nat'),
  masq: fieldIds('masq'),
  numgen: fieldIds('numgen'),
  reject: fieldIds('reject'),
  fib: fieldIds('fib'),
  dynset: fieldIds('dynset'),
  flow_offload: fieldIds('flow_offload'),
  byteorder: fieldIds('byteorder'),
} as const;

/** Each expression's encoding up to its attributes: name length, name, a zero attribute count. */
const NAME_HEAD = Object.fromEntries(
  Object.keys(SCHEMA).map((name) => [name, Uint8Array.from([name.length, ...Buffer.from(name, 'latin1'), 0, 0])]),
) as Readonly<Record<ExprName, Uint8Array>>;

/**
 * Where lowering writes kernel expressions: straight into the batch
 * encoding ({ u8 name length, name, u16 attribute count, attributes }), with
 * no object per expression or field. `count` is how many were written.
 */
export class ExprSink {
  readonly w: ByteWriter;
  count = 0;
  #countAt = 0;
  #attrs = 0;

  constructor(w: ByteWriter) {
    this.w = w;
  }

  begin(name: ExprName): this {
    const w = this.w;
    const head = NAME_HEAD[name];
    const at = w.reserve(head.length);
    const buf = w.raw;
    for (let i = 0; i < head.length; i++) buf[at + i] = head[i]!;
    w.seek(at + head.length);
    this.#countAt = at + head.length - 2;
    this.#attrs = 0;
    this.count++;
    return this;
  }
  u32(id: number, v: number): this {
    this.w.attrU32(id, v);
    this.#attrs++;
    return this;
  }
  u8(id: number, v: number): this {
    this.w.attrU8(id, v);
    this.#attrs++;
    return this;
  }
  u64(id: number, v: bigint): this {
    this.w.attrU64(id, v);
    this.#attrs++;
    return this;
  }
  bytes(id: number, v: Uint8Array): this {
    this.w.attrBytes(id, v);
    this.#attrs++;
    return this;
  }
  str(id: number, v: string): this {
    this.w.attrStr(id, v);
    this.#attrs++;
    return this;
  }
  /** A byte attribute of `len` zero bytes; returns where they are in `w.raw` (valid until the next write). */
  zeros(id: number, len: number): number {
    const at = this.w.attrHeader(id, AT.bytes, len);
    const buf = this.w.raw;
    for (let i = 0; i < len; i++) buf[at + i] = 0;
    this.#attrs++;
    return at;
  }
  end(): void {
    this.w.patchU16(this.#countAt, this.#attrs);
  }
}

const BY_ID = new Map<string, Map<number, [string, AttrType]>>(
  Object.entries(EXPR_SCHEMA).map(([name, schema]) => [
    name,
    new Map(Object.entries(schema).map(([field, [id, type]]) => [id, [field, type]])),
  ]),
);

/**
 * Kernel expressions back from their batch encoding (what ExprSink wrote), so
 * that tests and tools see exactly what the encoder sends.
 */
export function readExprs(bytes: Uint8Array, count: number): KernelExpr[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: KernelExpr[] = [];
  let p = 0;
  for (let k = 0; k < count; k++) {
    const nameLen = bytes[p]!;
    const name = Buffer.from(bytes.subarray(p + 1, p + 1 + nameLen)).toString('latin1');
    p += 1 + nameLen;
    const e: KernelExpr = { name };
    const fields = BY_ID.get(name);
    const n = view.getUint16(p, true);
    p += 2;
    for (let i = 0; i < n; i++) {
      const id = view.getUint16(p, true);
      const type = bytes[p + 2]!;
      const len = view.getUint32(p + 3, true);
      const at = p + 7;
      p = at + len;
      const field = fields?.get(id)?.[0] ?? `attr${id}`;
      if (type === AT.u8) e[field] = bytes[at]!;
      else if (type === AT.u32) e[field] = view.getUint32(at, true);
      else if (type === AT.u64) e[field] = view.getBigUint64(at, true);
      else if (type === AT.str) e[field] = Buffer.from(bytes.subarray(at, at + len)).toString('utf8');
      else e[field] = bytes.slice(at, at + len);
    }
    out.push(e);
  }
  return out;
}

/** Each expression's schema by attribute id: a listing decodes hundreds of thousands of expressions. */
const FIELDS_BY_ID: ReadonlyMap<string, ReadonlyMap<number, readonly [string, AttrType]>> = new Map(
  Object.entries(EXPR_SCHEMA).map(([name, schema]) => [
    name,
    new Map(Object.entries(schema).map(([field, [id, type]]) => [id, [field, type] as const])),
  ]),
);
const NO_FIELDS: ReadonlyMap<number, readonly [string, AttrType]> = new Map();

/**
 * A kernel expression from listed attributes. Attributes outside the schema
 * are kept as `attr<id>` byte fields, so raise() sees that it does not know them.
 */
export function exprFromAttrs(name: string, attrs: RawAttrs): KernelExpr {
  const e: KernelExpr = { name };
  const byId = FIELDS_BY_ID.get(name) ?? NO_FIELDS;
  // Read in place, by index: an expression's attributes are millions in a large listing.
  for (let i = 0; i < attrs.size; i++) {
    if (attrs.isArrayAt(i)) continue;
    const id = attrs.idAt(i);
    const spec = byId.get(id);
    if (!spec) {
      e[`attr${id}`] = attrs.copyAt(i)!;
      continue;
    }
    const [field, type] = spec;
    switch (type) {
      case 'u8':
        e[field] = attrs.u8At(i)!;
        break;
      case 'u32':
        e[field] = attrs.u32At(i)!;
        break;
      case 'u64':
        e[field] = attrs.u64At(i)!;
        break;
      case 'str':
        e[field] = attrs.strAt(i)!;
        break;
      case 'u16':
      case 'bytes':
      case 'strArray':
        e[field] = attrs.copyAt(i)!;
        break;
      default:
        assertNever(type);
    }
  }
  return e;
}

// Kernel expressions: what a rule is in the kernel (payload loads, compares,
// registers...). lower.ts writes them from Statements through an ExprSink
// straight into the batch encoding; raise.ts turns listed ones back. This file
// maps their fields to libnftnl attribute ids, both ways.

import { AT, NAT_RANGE_MAP_IPS, NAT_RANGE_PROTO_SPECIFIED, REG, type AttrType } from './kernel-constants.ts';
import { assertNever } from '../../assert-never.ts';
import { fnv1a, type RawAttrs, sameRange, textEnd, u32In } from './listing-reader.ts';
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

/** The fields that name a register, in whichever expression has them. */
export const REGISTER_FIELDS = ['dreg', 'sreg', 'sreg_key', 'sreg_data', 'reg_addr_min', 'reg_addr_max', 'reg_proto_min', 'reg_proto_max'];

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

/**
 * Each expression's fields by attribute id, for every reader of encoded
 * expressions (readExprs, exprFromAttrs, sameEncodedExprs): a listing decodes
 * hundreds of thousands of expressions.
 */
const FIELDS_BY_ID: ReadonlyMap<string, ReadonlyMap<number, readonly [string, AttrType]>> = new Map(
  Object.entries(EXPR_SCHEMA).map(([name, schema]) => [
    name,
    new Map(Object.entries(schema).map(([field, [id, type]]) => [id, [field, type] as const])),
  ]),
);
const NO_FIELDS: ReadonlyMap<number, readonly [string, AttrType]> = new Map();

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
    const fields = FIELDS_BY_ID.get(name);
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

/**
 * Attributes the kernel reports whether or not they were written, and what
 * it fills in when they were not: zero (no lookup flags, a boolean bitwise,
 * the set's own timeout, no dynset flags), the value of another attribute (a
 * nat range's end is its start), a nat's range flags, derived from which
 * registers it was given (NF_NAT_RANGE_MAP_IPS, NF_NAT_RANGE_PROTO_SPECIFIED),
 * or what it has counted (a counter's packets and bytes, any value).
 */
type KernelFilled<Field = string> = 'zero' | { sameAs: Field } | 'nat range flags' | 'counted';
const KERNEL_FILLED: Readonly<Partial<Record<ExprName, Readonly<Record<string, KernelFilled>>>>> = {
  counter: { packets: 'counted', bytes: 'counted' },
  lookup: { flags: 'zero' },
  bitwise: { op: 'zero' },
  dynset: { timeout: 'zero', flags: 'zero' },
  nat: { reg_addr_max: { sameAs: 'reg_addr_min' }, reg_proto_max: { sameAs: 'reg_proto_min' }, flags: 'nat range flags' },
};

/** What comparing one expression's attributes needs, by attribute id: field and type, register or not, what the kernel fills in. */
interface ExprLayout {
  head: Uint8Array;
  fields: ReadonlyMap<number, readonly [string, AttrType]>;
  registers: ReadonlySet<number>;
  filled: ReadonlyMap<number, KernelFilled<number>>;
}

/** By a hash of the name's bytes (nameHash), checked against `head`: no name is decoded to find its layout. */
const LAYOUTS: ReadonlyMap<number, ExprLayout> = new Map(
  Object.entries(SCHEMA).map(([name, schema]) => {
    const head = NAME_HEAD[name as ExprName];
    const ids = schema as Schema;
    const fields = Object.entries(ids);
    const filled = Object.entries(KERNEL_FILLED[name as ExprName] ?? {}).map(
      ([field, how]) => [ids[field]![0], typeof how === 'string' ? how : { sameAs: ids[how.sameAs]![0] }] as const,
    );
    const layout: ExprLayout = {
      head,
      fields: FIELDS_BY_ID.get(name)!,
      registers: new Set(fields.filter(([f]) => REGISTER_FIELDS.includes(f)).map(([, [id]]) => id)),
      filled: new Map(filled),
    };
    return [nameHash(head, 0), layout];
  }),
);

/** FNV-1a over a length byte and the name after it. */
function nameHash(m: Uint8Array, p: number): number {
  return fnv1a(m, p, m[p]! + 1);
}

function layoutAt(m: Uint8Array, p: number): ExprLayout | undefined {
  const l = LAYOUTS.get(nameHash(m, p));
  return l && sameRange(l.head, 0, m, p, l.head.length - 2) ? l : undefined;
}

/**
 * A register in NFT_REG32 numbering: the kernel dumps a 32-bit register that
 * starts a 128-bit one under the 128-bit name (NFT_REG32_00 as NFT_REG_1).
 */
export function reg32(v: number): number {
  return v >= REG.R1 && v <= 4 ? REG.R32_00 + (v - 1) * 4 : v;
}

// The framing's ids and lengths, little-endian as ByteReader and ByteWriter have them; values are read with u32In.
function le32(m: Uint8Array, p: number): number {
  return (m[p]! | (m[p + 1]! << 8) | (m[p + 2]! << 16) | (m[p + 3]! << 24)) >>> 0;
}

function le16(m: Uint8Array, p: number): number {
  return m[p]! | (m[p + 1]! << 8);
}

function allZero(m: Uint8Array, p: number, len: number): boolean {
  for (let i = 0; i < len; i++) if (m[p + i] !== 0) return false;
  return true;
}

/** The u32 attributes of the expression being compared, as the listing gave them, by id (-1: not given). */
const listedU32 = new Float64Array(16);

/** Whether an attribute only the listing has is what the kernel fills in when it is not written (KERNEL_FILLED). */
function kernelFilled(l: ExprLayout, id: number, m: Uint8Array, p: number, len: number): boolean {
  const how = l.filled.get(id);
  if (how === undefined) return false;
  if (how === 'counted') return true;
  if (how === 'zero') return allZero(m, p, len);
  if (len !== 4) return false;
  const v = u32In(m, p);
  if (how === 'nat range flags') {
    const addr = listedU32[SCHEMA.nat.reg_addr_min[0]]! >= 0 ? NAT_RANGE_MAP_IPS : 0;
    const proto = listedU32[SCHEMA.nat.reg_proto_min[0]]! >= 0 ? NAT_RANGE_PROTO_SPECIFIED : 0;
    return v === (addr | proto);
  }
  const from = listedU32[how.sameAs]!;
  return from >= 0 && reg32(v) === reg32(from);
}

/** Two attribute values of one field, read by the field's type (a listing gives every value as bytes). */
function sameValue(l: ExprLayout, id: number, a: Uint8Array, p: number, la: number, b: Uint8Array, q: number, lb: number): boolean {
  switch (l.fields.get(id)?.[1]) {
    case 'u32':
      if (la < 4 || lb < 4) return false;
      return l.registers.has(id) ? reg32(u32In(a, p)) === reg32(u32In(b, q)) : u32In(a, p) === u32In(b, q);
    case 'u8':
      return la >= 1 && lb >= 1 && a[p] === b[q];
    case 'str': {
      const n = textEnd(a, p, la) - p;
      return n === textEnd(b, q, lb) - q && sameRange(a, p, b, q, n);
    }
    case 'u64':
    case 'bytes':
      return la === lb && sameRange(a, p, b, q, la);
    default:
      // Outside the schema: not recognised here (raise refuses such an attribute too).
      return false;
  }
}

/**
 * Whether two runs of encoded expressions, each `count` long, say the same:
 * `a` as the addon lists a rule (every value as bytes, as the kernel holds
 * it), `b` as ExprSink writes one. Names and attributes in the same order,
 * each value read by its field's type, registers in one numbering, text up
 * to its NUL, and what the kernel fills in where nothing was written
 * (KERNEL_FILLED). Read in place, no object per expression: adoption asks this of
 * 200k rules at 100k Services. False only means "not recognised": the
 * caller then decodes the rule and compares statements.
 */
export function sameEncodedExprs(
  a: Uint8Array,
  aFrom: number,
  aTo: number,
  b: Uint8Array,
  bFrom: number,
  bTo: number,
  count: number,
): boolean {
  let p = aFrom;
  let q = bFrom;
  for (let k = 0; k < count; k++) {
    if (p >= aTo || q >= bTo) return false;
    const nameLen = a[p]!;
    if (p + nameLen + 3 > aTo || q + nameLen + 3 > bTo || !sameRange(a, p, b, q, nameLen + 1)) return false;
    const layout = layoutAt(a, p);
    if (!layout) return false;
    listedU32.fill(-1);
    let na = le16(a, p + nameLen + 1);
    let nb = le16(b, q + nameLen + 1);
    p += nameLen + 3;
    q += nameLen + 3;
    while (na > 0 || nb > 0) {
      // An attribute each side still has: id (or -1), and the length of its value, within its run.
      const ida = na > 0 && p + 7 <= aTo ? le16(a, p) : -1;
      const idb = nb > 0 && q + 7 <= bTo ? le16(b, q) : -1;
      if ((na > 0 && ida < 0) || (nb > 0 && idb < 0)) return false;
      const la = ida < 0 ? 0 : le32(a, p + 3);
      const lb = idb < 0 ? 0 : le32(b, q + 3);
      if ((ida >= 0 && p + 7 + la > aTo) || (idb >= 0 && q + 7 + lb > bTo)) return false;
      if (ida >= 0 && ida < listedU32.length && la === 4) listedU32[ida] = u32In(a, p + 7);
      if (ida === idb) {
        if (!sameValue(layout, ida, a, p + 7, la, b, q + 7, lb)) return false;
      } else if (ida >= 0 && (idb < 0 || ida < idb) && kernelFilled(layout, ida, a, p + 7, la)) {
        // Filled in by the kernel, not written: only the listing steps on.
        p += 7 + la;
        na--;
        continue;
      } else {
        return false;
      }
      p += 7 + la;
      q += 7 + lb;
      na--;
      nb--;
    }
  }
  return p === aTo && q === bTo;
}

// Encoding a transaction into the addon's compact batch buffer
// (layout in native/libnftnl-glue/batch.h). One buffer per transaction, built
// here on the JS side, so that 100k elements cross the boundary as one copy.
// Rule statements are lowered (lower.ts); elements become key/data bytes;
// consecutive element operations on one set share one record, which the addon
// splits into messages of at most 500 elements inside the same transaction.

import type { Chain, DataType, Element, Family, Flowtable, NftMap, NftSet, Operation, Rule, Table, Verdict } from './objects.ts';
import {
  CHAIN_ATTR, DATA_VERDICT, ELEM_ATTR, ELEM_FLAG_INTERVAL_END, FAMILY_NUMBER, FLOWTABLE_ATTR, HOOK_NUMBER, KIND, MSG,
  NETDEV_INGRESS, NLM_F, RULE_ATTR, SET_ATTR, SET_FLAG, TABLE_ATTR, TYPE_BITS, TYPE_ID, UDATA_COMMENT, VERDICT_CODE,
} from './kernel-constants.ts';
import { ExprSink } from './kernel-exprs.ts';
import { keyBytes, lowerInto, writeKeyBytes } from './lower.ts';
import { prefixRange, typeLength } from './values.ts';
import { ByteWriter, type Attr } from './wire.ts';
import { AT } from './kernel-constants.ts';

const MAGIC = 0x42504e4b;
const VERSION = 1;

/** An operation that cannot be encoded (unknown set, bad value...), found before sending. */
export class NftEncodeError extends Error {
  readonly code = 'ERR_NFT_ENCODE';
  readonly index: number;
  constructor(index: number, reason: string, options?: { cause?: unknown }) {
    super(`operation ${index}: ${reason}`, options);
    this.name = 'NftEncodeError';
    this.index = index;
  }
}

export type ContainerLookup = (family: Family, table: string, name: string) => NftSet | NftMap | undefined;

export interface EncodedBatch {
  bytes: Uint8Array;
  records: number;
}

/** nft's comment TLV: type, length, NUL-terminated text. */
function commentBytes(type: number, text: string): Uint8Array {
  const body = Buffer.from(text + '\0', 'utf8');
  const u = new Uint8Array(2 + body.length);
  u[0] = type;
  u[1] = body.length;
  u.set(body, 2);
  return u;
}

function comment(type: number, text: string | undefined): Attr[] {
  if (text === undefined) return [];
  return [{ id: -1, type: 'bytes', value: commentBytes(type, text) }];
}

function withId(list: Attr[], id: number): Attr[] {
  return list.map((a) => (a.id === -1 ? { ...a, id } : a));
}

function le32(buf: Uint8Array, at: number, v: number): void {
  buf[at] = v & 0xff;
  buf[at + 1] = (v >>> 8) & 0xff;
  buf[at + 2] = (v >>> 16) & 0xff;
  buf[at + 3] = (v >>> 24) & 0xff;
}

function padTo4(n: number): number {
  return (n + 3) & ~3;
}

/** Key length of a container: concatenations pad each part to 4 bytes. */
export function keyLength(keyType: readonly import('./objects.ts').DataType[]): number {
  if (keyType.length === 1) return typeLength(keyType[0]!);
  return keyType.reduce((n, t) => n + padTo4(typeLength(t)), 0);
}

export function keyTypeId(keyType: readonly import('./objects.ts').DataType[]): number {
  return keyType.reduce((id, t) => id * (1 << TYPE_BITS) + TYPE_ID[t], 0) >>> 0;
}

function containerFlags(c: NftSet | NftMap): number {
  let f = 0;
  for (const flag of c.flags ?? []) f |= SET_FLAG[flag];
  if (c.kind === 'map') f |= SET_FLAG.map;
  // The kernel wants the concat flag whenever the description lists several fields.
  if (c.keyType.length > 1) f |= SET_FLAG.concat;
  return f;
}

function tableAttrs(t: Table, defining: boolean): Attr[] {
  const a: Attr[] = [{ id: TABLE_ATTR.NAME, type: 'str', value: t.name }];
  if (defining) a.push(...withId(comment(UDATA_COMMENT.table, t.comment), TABLE_ATTR.USERDATA));
  return a;
}

function setAttrs(c: NftSet | NftMap, defining: boolean, id = 0): Attr[] {
  const a: Attr[] = [
    { id: SET_ATTR.TABLE, type: 'str', value: c.table },
    { id: SET_ATTR.NAME, type: 'str', value: c.name },
  ];
  if (!defining) return a;
  // The kernel wants a transaction-unique id on every new set.
  a.push({ id: SET_ATTR.ID, type: 'u32', value: id });
  a.push({ id: SET_ATTR.FLAGS, type: 'u32', value: containerFlags(c) });
  a.push({ id: SET_ATTR.KEY_TYPE, type: 'u32', value: keyTypeId(c.keyType) });
  a.push({ id: SET_ATTR.KEY_LEN, type: 'u32', value: keyLength(c.keyType) });
  if (c.keyType.length > 1) {
    a.push({ id: SET_ATTR.DESC_CONCAT, type: 'bytes', value: Uint8Array.from(c.keyType.map(typeLength)) });
  }
  if (c.kind === 'map') {
    if (c.dataType === 'verdict') {
      a.push({ id: SET_ATTR.DATA_TYPE, type: 'u32', value: DATA_VERDICT });
    } else {
      a.push({ id: SET_ATTR.DATA_TYPE, type: 'u32', value: TYPE_ID[c.dataType] });
      a.push({ id: SET_ATTR.DATA_LEN, type: 'u32', value: typeLength(c.dataType) });
    }
  } else if (c.timeout !== undefined) {
    a.push({ id: SET_ATTR.TIMEOUT, type: 'u64', value: BigInt(c.timeout) * 1000n });
  }
  a.push(...withId(comment(UDATA_COMMENT.set, c.comment), SET_ATTR.USERDATA));
  return a;
}

function flowtableAttrs(f: Flowtable, defining: boolean): Attr[] {
  const a: Attr[] = [
    { id: FLOWTABLE_ATTR.TABLE, type: 'str', value: f.table },
    { id: FLOWTABLE_ATTR.NAME, type: 'str', value: f.name },
  ];
  if (!defining) return a;
  a.push({ id: FLOWTABLE_ATTR.HOOKNUM, type: 'u32', value: NETDEV_INGRESS });
  a.push({ id: FLOWTABLE_ATTR.PRIO, type: 'u32', value: f.priority >>> 0 });
  a.push({ id: FLOWTABLE_ATTR.DEVICES, type: 'strArray', value: f.devices });
  return a;
}

function subtractOne(b: Uint8Array): Uint8Array {
  const out = b.slice();
  for (let i = out.length - 1; i >= 0; i--) {
    if (out[i]! > 0) {
      out[i]!--;
      break;
    }
    out[i] = 0xff;
  }
  return out;
}

function partBytes(type: import('./objects.ts').DataType, text: string, interval: boolean): { start: Uint8Array; last: Uint8Array; endExclusive: Uint8Array | null } {
  if (!interval || type === 'ifname') {
    const b = keyBytes(type, text);
    return { start: b, last: b, endExclusive: null };
  }
  if (type === 'mark') {
    // Host-order marks do not take ranges here; a mark key is one value.
    const b = keyBytes(type, text);
    return { start: b, last: b, endExclusive: null };
  }
  const r = prefixRange(type, text);
  return { start: r.start, last: r.endExclusive ? subtractOne(r.endExclusive) : r.start.map(() => 0xff), endExclusive: r.endExclusive };
}

function concatParts(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + padTo4(p.length), 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += padTo4(p.length);
  }
  return out;
}

/**
 * A string attribute that often repeats the last one: its bytes are copied
 * from where they were last written (the writer only grows, so that stays valid).
 */
class RepeatedString {
  #text: string | undefined;
  #at = 0;
  #len = 0;

  write(w: ByteWriter, id: number, text: string): void {
    if (text === this.#text) {
      const from = this.#at;
      const len = this.#len;
      const at = w.attrHeader(id, AT.str, len);
      const buf = w.raw;
      for (let i = 0; i < len; i++) buf[at + i] = buf[from + i]!;
      return;
    }
    const start = w.position;
    w.attrStr(id, text);
    this.#text = text;
    this.#at = start + 7;
    this.#len = w.position - this.#at;
  }
}

class BatchEncoder {
  readonly w: ByteWriter;
  records = 0;
  readonly #lookup: ContainerLookup;
  readonly #added = new Map<string, NftSet | NftMap>();
  readonly #exprs: ExprSink;
  // A batch names its table in every record and a chain in the chain and then each of its rules.
  readonly #tableName = new RepeatedString();
  readonly #chainName = new RepeatedString();

  constructor(lookup: ContainerLookup, w: ByteWriter) {
    this.w = w;
    this.#exprs = new ExprSink(this.w);
    this.#lookup = lookup;
    this.w.u32(MAGIC);
    this.w.u32(VERSION);
    this.w.u32(0);
  }

  container(family: Family, table: string, name: string): NftSet | NftMap | undefined {
    return this.#added.get(`${family}\0${table}\0${name}`) ?? this.#lookup(family, table, name);
  }

  remember(c: NftSet | NftMap): void {
    this.#added.set(`${c.family}\0${c.table}\0${c.name}`, c);
  }

  header(kind: number, msg: number, flags: number, family: Family, index: number): void {
    const fam = FAMILY_NUMBER[family];
    if (fam === undefined) throw new NftEncodeError(index, `unknown family ${JSON.stringify(family)}`);
    this.w.u8(kind);
    this.w.u8(msg);
    this.w.u16(flags);
    this.w.u8(fam);
    this.w.u32(index);
    this.records++;
  }

  record(kind: number, msg: number, flags: number, family: Family, index: number, attrs: Attr[]): void {
    this.header(kind, msg, flags, family, index);
    this.w.attrs(attrs);
  }

  // Chains and rules are most of a batch: their attributes are written
  // directly, without Attr objects.
  chain(msg: number, flags: number, c: Chain, index: number): void {
    this.header(KIND.chain, msg, flags, c.family, index);
    const w = this.w;
    const countAt = w.position;
    w.u16(0);
    let n = 2;
    this.#tableName.write(w, CHAIN_ATTR.TABLE, c.table);
    this.#chainName.write(w, CHAIN_ATTR.NAME, c.name);
    if (msg === MSG.NEWCHAIN) {
      if (c.base) {
        w.attrU32(CHAIN_ATTR.HOOKNUM, HOOK_NUMBER[c.base.hook]);
        w.attrU32(CHAIN_ATTR.PRIO, c.base.priority);
        w.attrStr(CHAIN_ATTR.TYPE, c.base.type);
        n += 3;
        if (c.base.policy) {
          w.attrU32(CHAIN_ATTR.POLICY, c.base.policy === 'accept' ? 1 : 0);
          n++;
        }
      }
      if (c.comment !== undefined) {
        w.attrBytes(CHAIN_ATTR.USERDATA, commentBytes(UDATA_COMMENT.chain, c.comment));
        n++;
      }
    }
    w.patchU16(countAt, n);
  }

  rule(msg: number, flags: number, r: Rule, index: number, withExprs: boolean): void {
    this.header(KIND.rule, msg, flags, r.family, index);
    const w = this.w;
    const attrsAt = w.position;
    w.u16(0);
    let n = 1;
    this.#tableName.write(w, RULE_ATTR.TABLE, r.table);
    // Flushing a whole table is a rule deletion that names no chain.
    if (r.chain !== '') {
      this.#chainName.write(w, RULE_ATTR.CHAIN, r.chain);
      n++;
    }
    if (r.handle !== undefined) {
      w.attrU64(RULE_ATTR.HANDLE, BigInt(r.handle));
      n++;
    }
    if (withExprs && r.comment !== undefined) {
      w.attrBytes(RULE_ATTR.USERDATA, commentBytes(UDATA_COMMENT.rule, r.comment));
      n++;
    }
    w.patchU16(attrsAt, n);
    const countAt = this.w.position;
    this.w.u16(0);
    if (!withExprs) return;
    this.#exprs.count = 0;
    lowerInto(this.#exprs, r.exprs, r.family);
    this.w.patchU16(countAt, this.#exprs.count);
  }

  /** Elements ops[from, to) (same verb and set), as one record. */
  elements(ops: readonly Operation[], from: number, to: number): void {
    const first = ops[from]!.object as Element;
    const verb = ops[from]!.verb;
    const c = this.container(first.family, first.table, first.set);
    if (!c) throw new NftEncodeError(from, `set ${first.set} in ${first.family} ${first.table} is not known (add it in this transaction or list the table first)`);
    const msg = verb === 'delete' ? MSG.DELSETELEM : verb === 'destroy' ? MSG.DESTROYSETELEM : MSG.NEWSETELEM;
    const flags = verb === 'create' ? NLM_F.CREATE | NLM_F.EXCL : verb === 'add' ? NLM_F.CREATE : 0;
    this.record(KIND.elements, msg, flags, first.family, from, [
      { id: SET_ATTR.TABLE, type: 'str', value: first.table },
      { id: SET_ATTR.NAME, type: 'str', value: first.set },
    ]);
    const countAt = this.w.position;
    this.w.u32(0);
    let count = 0;
    const defining = msg === MSG.NEWSETELEM;
    const interval = c.flags?.includes('interval') ?? false;
    const concat = c.keyType.length > 1;
    const w = this.w;
    const keyLen = keyLength(c.keyType);
    const offsets: number[] = [];
    for (let k = 0, at = 0; k < c.keyType.length; k++) {
      offsets.push(at);
      at += padTo4(typeLength(c.keyType[k]!));
    }
    const verdictMap = c.kind === 'map' && c.dataType === 'verdict';
    const types = c.keyType;
    const parts = types.length;
    for (let i = from; i < to && !interval; i++) {
      const e = ops[i]!.object as Element;
      const key = e.key;
      if (key.length !== parts) throw new NftEncodeError(i, `key has ${key.length} parts, ${c.name} has ${parts}`);
      // The fixed part (op index, attribute count, key) in one reservation,
      // the key written from its texts in place.
      let p = w.reserve(13 + keyLen);
      const buf = w.raw;
      le32(buf, p, i);
      const countAt = p + 4;
      p += 6;
      buf[p] = ELEM_ATTR.KEY;
      buf[p + 1] = 0;
      buf[p + 2] = AT.bytes;
      le32(buf, p + 3, keyLen);
      p += 7;
      for (let z = 0; z < keyLen; z++) buf[p + z] = 0;
      try {
        for (let k = 0; k < parts; k++) writeKeyBytes(buf, p + offsets[k]!, types[k]!, key[k]!);
      } catch (err) {
        throw new NftEncodeError(i, `bad element key ${JSON.stringify(key)}: ${(err as Error).message}`, { cause: err });
      }
      w.seek(p + keyLen);
      let n = 1;
      if (defining) {
        const v = e.value;
        if (v !== undefined) {
          if (typeof v === 'string') {
            if (c.kind !== 'map' || verdictMap) throw new NftEncodeError(i, `${c.name} takes no value ${v}`);
            w.attrBytes(ELEM_ATTR.DATA, keyBytes((c as NftMap).dataType, v));
            n++;
          } else {
            w.attrU32(ELEM_ATTR.VERDICT, VERDICT_CODE[v.verdict]);
            n++;
            if (v.verdict === 'jump' || v.verdict === 'goto') {
              w.attrStr(ELEM_ATTR.CHAIN, v.chain);
              n++;
            }
          }
        }
        if (e.timeout !== undefined) {
          w.attr({ id: ELEM_ATTR.TIMEOUT, type: 'u64', value: BigInt(e.timeout) * 1000n });
          n++;
        }
        if (e.comment !== undefined) {
          w.attr(withId(comment(UDATA_COMMENT.element, e.comment), ELEM_ATTR.USERDATA)[0]!);
          n++;
        }
      }
      w.patchU16(countAt, n);
      count++;
    }
    for (let i = from; i < to && interval; i++) {
      const e = ops[i]!.object as Element;
      let parts;
      try {
        if (e.key.length !== c.keyType.length) throw new Error(`key has ${e.key.length} parts, ${c.name} has ${c.keyType.length}`);
        parts = e.key.map((text, k) => partBytes(c.keyType[k]!, text, interval));
      } catch (err) {
        throw new NftEncodeError(i, `bad element key ${JSON.stringify(e.key)}: ${(err as Error).message}`, { cause: err });
      }
      const key = concat ? concatParts(parts.map((p) => p.start)) : parts[0]!.start;
      const attrs: Attr[] = [{ id: ELEM_ATTR.KEY, type: 'bytes', value: key }];
      if (interval && concat) attrs.push({ id: ELEM_ATTR.KEY_END, type: 'bytes', value: concatParts(parts.map((p) => p.last)) });
      if (defining) {
        if (e.value !== undefined) {
          if (typeof e.value === 'string') {
            if (c.kind !== 'map' || c.dataType === 'verdict') throw new NftEncodeError(i, `${c.name} takes no value ${e.value}`);
            attrs.push({ id: ELEM_ATTR.DATA, type: 'bytes', value: keyBytes(c.dataType, e.value) });
          } else {
            attrs.push(...verdictAttrs(e.value));
          }
        }
        if (e.timeout !== undefined) attrs.push({ id: ELEM_ATTR.TIMEOUT, type: 'u64', value: BigInt(e.timeout) * 1000n });
        attrs.push(...withId(comment(UDATA_COMMENT.element, e.comment), ELEM_ATTR.USERDATA));
      }
      w.u32(i);
      w.attrs(attrs);
      count++;
      // A single-key interval element is a start and, unless it runs to the top, an end marker.
      const end = parts[0]!.endExclusive;
      if (interval && !concat && end) {
        w.u32(i);
        w.attrs([
          { id: ELEM_ATTR.KEY, type: 'bytes', value: end },
          { id: ELEM_ATTR.FLAGS, type: 'u32', value: ELEM_FLAG_INTERVAL_END },
        ]);
        count++;
      }
    }
    w.patchU32(countAt, count);
  }

  finish(): EncodedBatch {
    this.w.patchU32(8, this.records);
    return { bytes: this.w.finish(), records: this.records };
  }
}

function verdictAttrs(v: Verdict): Attr[] {
  const a: Attr[] = [{ id: ELEM_ATTR.VERDICT, type: 'u32', value: VERDICT_CODE[v.verdict] >>> 0 }];
  if (v.verdict === 'jump' || v.verdict === 'goto') a.push({ id: ELEM_ATTR.CHAIN, type: 'str', value: v.chain });
  return a;
}

const CREATE = NLM_F.CREATE;
const EXCL = NLM_F.CREATE | NLM_F.EXCL;

/**
 * Encodes operations (already validated by the transaction) into one batch.
 * `lookup` finds sets and maps that exist already, for their key types;
 * `writer`, when given, is reset and written into, and the result's bytes
 * are a view of it.
 */
export function encodeOperations(ops: readonly Operation[], lookup: ContainerLookup = () => undefined, writer?: ByteWriter): EncodedBatch {
  // Most operations take well under 96 bytes: one allocation, no regrowth.
  // A caller's writer is reused (its bytes are valid until its next use): a
  // full sync's 14 MB buffer is then not allocated, zeroed and faulted in again.
  // Sized once from the operation count (a rule takes ~150 bytes, an element
  // ~60): growing by doubling would copy and zero the whole batch again. Pages
  // of a large buffer that are never written are never faulted in.
  const size = Math.max(1 << 16, ops.length * 160);
  let w = writer;
  if (w) w.reset(size);
  else w = new ByteWriter(size);
  const enc = new BatchEncoder(lookup, w);
  let i = 0;
  while (i < ops.length) {
    const { verb, object: o } = ops[i]!;
    try {
      switch (o.kind) {
        case 'element': {
          let j = i + 1;
          while (j < ops.length) {
            const n = ops[j]!;
            const e = n.object;
            if (n.verb !== verb || e.kind !== 'element' || e.set !== o.set || e.table !== o.table || e.family !== o.family) break;
            j++;
          }
          enc.elements(ops, i, j);
          i = j;
          continue;
        }
        case 'table': {
          if (verb === 'flush') {
            enc.rule(MSG.DELRULE, 0, { kind: 'rule', family: o.family, table: o.name, chain: '', exprs: [] }, i, false);
            break;
          }
          const [msg, flags] = objectMsg(verb, MSG.NEWTABLE, MSG.DELTABLE, MSG.DESTROYTABLE, i);
          enc.record(KIND.table, msg, flags, o.family, i, tableAttrs(o, msg === MSG.NEWTABLE));
          break;
        }
        case 'chain': {
          if (verb === 'flush') {
            enc.rule(MSG.DELRULE, 0, { kind: 'rule', family: o.family, table: o.table, chain: o.name, exprs: [] }, i, false);
            break;
          }
          const [msg, flags] = objectMsg(verb, MSG.NEWCHAIN, MSG.DELCHAIN, MSG.DESTROYCHAIN, i);
          enc.chain(msg, flags, o, i);
          break;
        }
        case 'set':
        case 'map': {
          if (verb === 'flush') {
            enc.record(KIND.elements, MSG.DELSETELEM, 0, o.family, i, setAttrs(o, false));
            enc.w.u32(0);
            break;
          }
          const [msg, flags] = objectMsg(verb, MSG.NEWSET, MSG.DELSET, MSG.DESTROYSET, i);
          enc.record(KIND.set, msg, flags, o.family, i, setAttrs(o, msg === MSG.NEWSET, i + 1));
          if (msg === MSG.NEWSET) enc.remember(o);
          break;
        }
        case 'flowtable': {
          const [msg, flags] = objectMsg(verb, MSG.NEWFLOWTABLE, MSG.DELFLOWTABLE, MSG.DESTROYFLOWTABLE, i);
          enc.record(KIND.flowtable, msg, flags, o.family, i, flowtableAttrs(o, msg === MSG.NEWFLOWTABLE));
          break;
        }
        case 'rule':
          switch (verb) {
            case 'add':
              enc.rule(MSG.NEWRULE, CREATE | NLM_F.APPEND, o, i, true);
              break;
            case 'insert':
              enc.rule(MSG.NEWRULE, CREATE, o, i, true);
              break;
            case 'replace':
              enc.rule(MSG.NEWRULE, NLM_F.REPLACE, o, i, true);
              break;
            case 'delete':
              enc.rule(MSG.DELRULE, 0, o, i, false);
              break;
            case 'destroy':
              enc.rule(MSG.DESTROYRULE, 0, o, i, false);
              break;
            default:
              throw new NftEncodeError(i, `rule does not take the verb ${verb}`);
          }
          break;
        default:
          throw new NftEncodeError(i, `unknown object kind ${JSON.stringify((o as { kind: unknown }).kind)}`);
      }
    } catch (e) {
      if (e instanceof NftEncodeError) throw e;
      throw new NftEncodeError(i, (e as Error).message, { cause: e });
    }
    i++;
  }
  return enc.finish();
}

function objectMsg(verb: string, add: number, del: number, destroy: number, index: number): [number, number] {
  switch (verb) {
    case 'add':
      return [add, CREATE];
    case 'create':
      return [add, EXCL];
    case 'delete':
      return [del, 0];
    case 'destroy':
      return [destroy, 0];
  }
  throw new NftEncodeError(index, `verb ${verb} does not apply here`);
}

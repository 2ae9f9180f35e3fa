// Encoding a transaction into the addon's compact batch buffer
// (layout in native/libnftnl-glue/batch.h). One buffer per transaction, built
// here on the JS side, so that 100k elements cross the boundary as one buffer,
// which the addon reads in place. Rule statements are lowered (lower.ts);
// elements become key/data bytes; a run of consecutive element operations with
// one verb becomes one record per set (groupBySet in encode-elements.ts), which the addon splits into
// messages of at most 500 elements inside the same transaction.

import type { Chain, Family, Flowtable, NftMap, NftSet, Operation, Rule, Table } from '../objects.ts';
import {
  AT,
  CHAIN_ATTR,
  DATA_VERDICT,
  FAMILY_NUMBER,
  FLOWTABLE_ATTR,
  HOOK_NUMBER,
  KIND,
  MSG,
  NETDEV_INGRESS,
  NLM_F,
  RULE_ATTR,
  NFT_BYTEORDER_HOST,
  SET_ATTR,
  SET_FLAG,
  TABLE_ATTR,
  UDATA_COMMENT,
  UDATA_SET_KEYBYTEORDER,
} from './kernel-constants.ts';
import { ExprSink } from './kernel-exprs.ts';
import { lowerInto } from './lower.ts';
import { typeLength } from '../values.ts';
import { ByteWriter, type Attr } from './wire.ts';
import { writeElementRun } from './encode-elements.ts';
import { assertNever } from '../../assert-never.ts';
import {
  comment,
  commentBytes,
  dataLength,
  dataTypeId,
  keyLength,
  keyTypeId,
  NftEncodeError,
  withId,
  type ContainerLookup,
  type RecordSink,
} from './encode-parts.ts';

export { keyLength, keyTypeId, NftEncodeError, type ContainerLookup };

const MAGIC = 0x42504e4b;
const VERSION = 1;

export interface EncodedBatch {
  bytes: Uint8Array;
  records: number;
  /** Operations that add or remove a set, map or table, in order: what a dataplane learns from the batch once it landed. */
  containerChanges: Operation[];
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

/**
 * nft's userdata TLVs for a set: the key's byte order where the kernel's type
 * id does not say it (nft would print integer key 1 as 16777216 without it),
 * and the comment.
 */
function setUserdata(c: NftSet | NftMap): Uint8Array | undefined {
  const parts: Uint8Array[] = [];
  if (c.keyType.length === 1 && c.keyType[0] === 'integer') {
    // A little-endian u32 (the hosts we build for), byte by byte: a DataView
    // over `b.buffer` would move this small array off the V8 heap first.
    parts.push(
      Uint8Array.of(
        UDATA_SET_KEYBYTEORDER,
        4,
        NFT_BYTEORDER_HOST & 0xff,
        (NFT_BYTEORDER_HOST >>> 8) & 0xff,
        (NFT_BYTEORDER_HOST >>> 16) & 0xff,
        NFT_BYTEORDER_HOST >>> 24,
      ),
    );
  }
  if (c.comment !== undefined) parts.push(commentBytes(UDATA_COMMENT.set, c.comment));
  if (parts.length === 0) return undefined;
  if (parts.length === 1) return parts[0];
  return Uint8Array.from([...parts[0]!, ...parts[1]!]);
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
      a.push({ id: SET_ATTR.DATA_TYPE, type: 'u32', value: dataTypeId(c.dataType) });
      a.push({ id: SET_ATTR.DATA_LEN, type: 'u32', value: dataLength(c.dataType) });
    }
  } else if (c.timeout !== undefined) {
    a.push({ id: SET_ATTR.TIMEOUT, type: 'u64', value: BigInt(c.timeout) * 1000n });
  }
  const udata = setUserdata(c);
  if (udata) a.push({ id: SET_ATTR.USERDATA, type: 'bytes', value: udata });
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

class BatchEncoder implements RecordSink {
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

  /** Seen while encoding, so that no caller walks the operations again for them. */
  readonly containerChanges: Operation[] = [];

  finish(): EncodedBatch {
    this.w.patchU32(8, this.records);
    return { bytes: this.w.finish(), records: this.records, containerChanges: this.containerChanges };
  }
}

const CREATE = NLM_F.CREATE;
const EXCL = NLM_F.CREATE | NLM_F.EXCL;

/** What encodeOperations reserves per operation: more than any rule the renderer makes takes. */
const BATCH_BYTES_PER_OP = 320;

/**
 * Encodes operations (already validated by the transaction) into one batch.
 * `lookup` finds sets and maps that exist already, for their key types;
 * `writer`, when given, is reset and written into, and the result's bytes
 * are a view of it.
 */
export function encodeOperations(ops: readonly Operation[], lookup: ContainerLookup = () => undefined, writer?: ByteWriter): EncodedBatch {
  // A caller's writer is reused (its bytes are valid until its next use): a
  // full sync's 14 MB buffer is then not allocated, zeroed and faulted in again.
  // Sized once from the operation count, with room for the largest usual
  // operation (a rule is 150-225 bytes, an element ~60): growing by doubling
  // would copy the whole batch and leave the old buffer for the GC (~70 MiB
  // dead at the peak of a 10k-service cold sync). Pages of a large buffer that
  // are never written are never faulted in.
  const size = Math.max(1 << 16, ops.length * BATCH_BYTES_PER_OP);
  let w = writer;
  if (w) w.reset(size);
  else w = new ByteWriter(size);
  const enc = new BatchEncoder(lookup, w);
  let i = 0;
  while (i < ops.length) {
    const { verb, object: o } = ops[i]!;
    try {
      switch (o.kind) {
        case 'element':
          i = writeElementRun(enc, ops, i);
          continue;
        case 'table': {
          if (verb === 'flush') {
            enc.rule(MSG.DELRULE, 0, { kind: 'rule', family: o.family, table: o.name, chain: '', exprs: [] }, i, false);
            break;
          }
          const [msg, flags] = objectMsg(verb, MSG.NEWTABLE, MSG.DELTABLE, MSG.DESTROYTABLE, i);
          enc.record(KIND.table, msg, flags, o.family, i, tableAttrs(o, msg === MSG.NEWTABLE));
          enc.containerChanges.push(ops[i]!);
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
          enc.containerChanges.push(ops[i]!);
          break;
        }
        case 'flowtable': {
          const [msg, flags] = objectMsg(verb, MSG.NEWFLOWTABLE, MSG.DELFLOWTABLE, MSG.DESTROYFLOWTABLE, i);
          enc.record(KIND.flowtable, msg, flags, o.family, i, flowtableAttrs(o, msg === MSG.NEWFLOWTABLE));
          break;
        }
        case 'rule':
          encodeRule(enc, verb, o, i);
          break;
        default:
          assertNever(o, (x) => {
            throw new NftEncodeError(i, `unknown object kind ${JSON.stringify((x as { kind: unknown }).kind)}`);
          });
      }
    } catch (e) {
      if (e instanceof NftEncodeError) throw e;
      throw new NftEncodeError(i, (e as Error).message, { cause: e });
    }
    i++;
  }
  return enc.finish();
}

/** A rule operation: the verb picks the message and its flags. */
function encodeRule(enc: BatchEncoder, verb: Operation['verb'], o: Rule, i: number): void {
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
    case 'create':
    case 'flush':
      throw new NftEncodeError(i, `rule does not take the verb ${verb}`);
    default:
      assertNever(verb, () => {
        throw new NftEncodeError(i, `rule does not take the verb ${verb}`);
      });
  }
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

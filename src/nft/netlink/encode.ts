// Encoding a transaction into the addon's compact batch buffer
// (layout in native/libnftnl-glue/batch.h). One buffer per transaction, built
// here on the JS side, so that 100k elements cross the boundary as one buffer,
// which the addon reads in place. Rule statements are lowered (lower.ts);
// elements become key/data bytes; a run of consecutive element operations with
// one verb becomes one record per set (groupBySet in encode-elements.ts), which
// the addon splits into messages of at most 500 elements inside the same
// transaction. A full sync's operations are encoded as they are made
// (encodeOperationStream), never all listed.

import type { Chain, Element, Family, NftMap, NftSet, Operation, Rule } from '../objects.ts';
import { CHAIN_ATTR, FAMILY_NUMBER, HOOK_NUMBER, KIND, MSG, NLM_F, RULE_ATTR, UDATA_COMMENT } from './kernel-constants.ts';
import { ExprSink } from './kernel-exprs.ts';
import { lowerInto } from './lower.ts';
import { ByteWriter, type Attr, type BufferAllocator } from './wire.ts';
import { writeElementRun, writeElements } from './encode-elements.ts';
import { RunRecords } from './encode-runs.ts';
import { isElementRun, type GeneratedItem } from '../element-run.ts';
import { flowtableAttrs, setAttrs, tableAttrs } from './encode-objects.ts';
import { assertNever } from '../../assert-never.ts';
import {
  commentBytes,
  keyLength,
  keyTypeId,
  NftEncodeError,
  RepeatedString,
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
    this.#writeHeader();
  }

  #writeHeader(): void {
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

  /**
   * Ends the batch written so far as a piece of its own (a complete batch,
   * its operations numbered within the whole) and starts the next in a fresh
   * buffer of `capacity` bytes. The piece's bytes are returned.
   */
  cut(capacity: number): Uint8Array {
    const piece = this.finish().bytes;
    this.records = 0;
    this.w.restart(capacity);
    this.#tableName.forget();
    this.#chainName.forget();
    this.#writeHeader();
    return piece;
  }
}

const CREATE = NLM_F.CREATE;
const EXCL = NLM_F.CREATE | NLM_F.EXCL;

/** What an encoder reserves per operation: more than any rule the renderer makes takes. */
const BATCH_BYTES_PER_OP = 320;

/**
 * A writer for `count` operations: the caller's (its bytes are valid until its
 * next use, and a full sync's buffer is then not allocated, zeroed and faulted
 * in again), or a new one. Sized once from the operation count, with room for
 * the largest usual operation (a rule is 150-225 bytes, an element ~60):
 * growing by doubling would copy the whole batch and leave the old buffer for
 * the GC (~70 MiB dead at the peak of a 10k-service cold sync). Pages of a
 * large buffer that are never written are never faulted in.
 */
function writerFor(count: number, writer: ByteWriter | undefined): ByteWriter {
  const size = Math.max(1 << 16, count * BATCH_BYTES_PER_OP);
  if (!writer) return new ByteWriter(size);
  writer.reset(size);
  return writer;
}

/**
 * Encodes operations (already validated by the transaction) into one batch.
 * `lookup` finds sets and maps that exist already, for their key types;
 * `writer`, when given, is reset and written into, and the result's bytes
 * are a view of it.
 */
export function encodeOperations(ops: readonly Operation[], lookup: ContainerLookup = () => undefined, writer?: ByteWriter): EncodedBatch {
  const enc = new BatchEncoder(lookup, writerFor(ops.length, writer));
  let i = 0;
  while (i < ops.length) {
    const op = ops[i]!;
    if (op.object.kind === 'element') {
      const from = i;
      i = naming(from, () => writeElementRun(enc, ops, from));
    } else {
      encodeOne(enc, op, i);
      i++;
    }
  }
  return enc.finish();
}

/**
 * Operations per element record of a streamed batch: a multiple of the addon's
 * 500 elements per message, so that a set's elements go in the same messages
 * as when they are one record.
 */
const STREAMED_ELEMENTS_PER_RECORD = 2000;

/**
 * Encodes `count` operations as they come, keeping none but a window of one
 * set's elements: a full sync made on demand (Transaction.queueGenerated),
 * whose millions of operations are then never all in memory. Unlike
 * encodeOperations, it does not group a run of elements by set: the source
 * lists each set's elements together, or the kernel pays per message.
 */
export function encodeOperationStream(
  ops: Iterable<GeneratedItem>,
  count: number,
  lookup: ContainerLookup = () => undefined,
  writer?: ByteWriter,
): EncodedBatch {
  const enc = new BatchEncoder(lookup, writerFor(count, writer));
  streamInto(enc, ops, count);
  return enc.finish();
}

/** Where encodeOperationPieces hands each piece (a complete batch, its operations numbered within the whole), cut past `pieceBytes`. */
export interface PieceSink {
  readonly pieceBytes: number;
  /** `encoded`: how many of the transaction's operations the pieces so far hold (its first ones, each whole). */
  push(piece: Uint8Array, encoded: number): void;
}

/**
 * As encodeOperationStream, but the batch is handed on in pieces of about
 * `sink.pieceBytes` as it is written (the addon builds each piece's messages
 * while the next is encoded, see BatchStream), the last when all are encoded.
 * `allocate` gives each piece its buffer. Returns the batch's size in bytes.
 */
export function encodeOperationPieces(
  ops: Iterable<GeneratedItem>,
  count: number,
  lookup: ContainerLookup,
  sink: PieceSink,
  allocate: BufferAllocator,
): { bytes: number; containerChanges: Operation[] } {
  // Room past the cut for the record that crosses it; a larger one grows the buffer.
  const capacity = sink.pieceBytes + (sink.pieceBytes >> 2);
  const enc = new BatchEncoder(lookup, new ByteWriter(capacity, allocate));
  let bytes = 0;
  const hand = (piece: Uint8Array, encoded: number): void => {
    bytes += piece.length;
    sink.push(piece, encoded);
  };
  streamInto(enc, ops, count, (encoded) => {
    if (enc.w.position >= sink.pieceBytes) hand(enc.cut(capacity), encoded);
  });
  hand(enc.finish().bytes, count);
  return { bytes, containerChanges: enc.containerChanges };
}

/**
 * encodeOperationStream's loop; `recordsEnded`, when given, runs where no
 * record is open, with how many operations the records so far hold. Runs of elements (ElementRun) are written as the element
 * operations they stand for would be, in records of the same size.
 */
function streamInto(enc: BatchEncoder, items: Iterable<GeneratedItem>, count: number, recordsEnded?: (encoded: number) => void): void {
  const run: Operation[] = [];
  let runFrom = 0;
  const runs = new RunRecords(enc, STREAMED_ELEMENTS_PER_RECORD, recordsEnded);
  const flush = (): void => {
    runs.end();
    if (run.length === 0) return;
    naming(runFrom, () => writeElements(enc, run, 0, run.length, undefined, runFrom));
    const encoded = runFrom + run.length;
    run.length = 0;
    recordsEnded?.(encoded);
  };
  let i = 0;
  for (const op of items) {
    if (isElementRun(op)) {
      if (run.length > 0) flush();
      runs.add(op, i);
      i += op.length;
      continue;
    }
    runs.end();
    const o = op.object;
    if (o.kind === 'element') {
      const head = run[0];
      if (head !== undefined) {
        const e = head.object as Element;
        if (head.verb !== op.verb || e.set !== o.set || e.table !== o.table || e.family !== o.family) flush();
        else if (run.length === STREAMED_ELEMENTS_PER_RECORD) flush();
      }
      if (run.length === 0) runFrom = i;
      run.push(op);
    } else {
      flush();
      encodeOne(enc, op, i);
      recordsEnded?.(i + 1);
    }
    i++;
  }
  flush();
  if (i !== count) throw new Error(`the operation stream made ${i} operations, not the ${count} announced`);
}

/** Runs `encode` for the operation at `index`, its failures an NftEncodeError naming an operation. */
function naming<T>(index: number, encode: () => T): T {
  try {
    return encode();
  } catch (e) {
    throw named(index, e);
  }
}

function named(index: number, e: unknown): NftEncodeError {
  return e instanceof NftEncodeError ? e : new NftEncodeError(index, (e as Error).message, { cause: e });
}

/** One operation. The callers write elements in runs, one record per set; an element alone here is a record of one. */
function encodeOne(enc: BatchEncoder, op: Operation, i: number): void {
  const { verb, object: o } = op;
  try {
    switch (o.kind) {
      case 'element':
        writeElements(enc, [op], 0, 1, undefined, i);
        break;
      case 'table': {
        if (verb === 'flush') {
          enc.rule(MSG.DELRULE, 0, { kind: 'rule', family: o.family, table: o.name, chain: '', exprs: [] }, i, false);
          break;
        }
        const [msg, flags] = objectMsg(verb, MSG.NEWTABLE, MSG.DELTABLE, MSG.DESTROYTABLE, i);
        enc.record(KIND.table, msg, flags, o.family, i, tableAttrs(o, msg === MSG.NEWTABLE));
        enc.containerChanges.push(op);
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
        enc.containerChanges.push(op);
        break;
      }
      case 'flowtable': {
        const [msg, flags] = objectMsg(verb, MSG.NEWFLOWTABLE, MSG.DELFLOWTABLE, MSG.DESTROYFLOWTABLE, i);
        // A delete naming devices carries the hook too: the kernel then removes only those devices.
        enc.record(KIND.flowtable, msg, flags, o.family, i, flowtableAttrs(o, msg === MSG.NEWFLOWTABLE || o.devices.length > 0));
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
    // Not through naming(): a closure for each of a full sync's million operations.
    throw named(i, e);
  }
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

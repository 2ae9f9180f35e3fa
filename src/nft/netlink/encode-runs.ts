// Runs of element additions (see ElementRun) in the streamed batch encoding:
// written from their values as the element operations they stand for would
// be (encode-elements.ts), byte for byte, in records of the same size.

import type { ElementRun } from '../element-run.ts';
import type { Family } from '../objects.ts';
import { AT, ELEM_ATTR, MSG, NLM_F } from './kernel-constants.ts';
import type { ByteWriter } from './wire.ts';
import {
  beginElementRecord,
  dataLayout,
  type DataLayout,
  elementAttrCount,
  elementHead,
  NftEncodeError,
  writeRunParts,
  type RecordSink,
} from './encode-parts.ts';

/**
 * A record of element additions written from runs (see ElementRun): as
 * writeExactElements writes the operations a run stands for, byte for byte,
 * without making them. Open until end(); a streamed encoder adds runs of the
 * record's set to it.
 */
class RunRecord {
  readonly family: Family;
  readonly table: string;
  readonly set: string;
  /** Elements written so far. */
  count = 0;
  /** The transaction's index of the operation after its last element. */
  next = 0;
  readonly #w: ByteWriter;
  readonly #countAt: number;
  readonly #key: DataLayout;
  readonly #data: DataLayout | undefined;

  /** `index`: the transaction's index of the first element it will hold. */
  constructor(enc: RecordSink, run: ElementRun, index: number) {
    const c = enc.container(run.family, run.table, run.set);
    if (!c) throw new NftEncodeError(index, `set ${run.set} in ${run.family} ${run.table} is not known`);
    this.family = run.family;
    this.table = run.table;
    this.set = run.set;
    this.#w = enc.w;
    this.#key = dataLayout(c.keyType);
    this.#data = c.kind === 'map' && Array.isArray(c.dataType) ? dataLayout(c.dataType) : undefined;
    this.#countAt = beginElementRecord(enc, MSG.NEWSETELEM, NLM_F.CREATE, run.family, run.table, run.set, index);
  }

  holds(run: ElementRun): boolean {
    return run.set === this.set && run.table === this.table && run.family === this.family;
  }

  /** Elements [from, to) of `run`, element i the transaction's operation index + i. */
  write(run: ElementRun, from: number, to: number, index: number): void {
    const w = this.#w;
    const key = this.#key;
    const data = this.#data;
    for (let i = from; i < to; i++) {
      const op = index + i;
      const p = elementHead(w, op, key.len);
      elementAttrCount(w, p, data ? 2 : 1);
      try {
        writeRunParts(w.raw, p, key, run, i, 0);
      } catch (err) {
        throw new NftEncodeError(op, `bad element key in a run of ${run.set}: ${(err as Error).message}`, { cause: err });
      }
      w.seek(p + key.len);
      if (data) {
        const at = w.attrHeader(ELEM_ATTR.DATA, AT.bytes, data.len);
        const out = w.raw;
        for (let z = 0; z < data.len; z++) out[at + z] = 0;
        try {
          writeRunParts(out, at, data, run, i, key.types.length);
        } catch (err) {
          throw new NftEncodeError(op, `bad element value in a run of ${run.set}: ${(err as Error).message}`, { cause: err });
        }
      }
    }
    this.count += to - from;
    this.next = index + to;
  }

  end(): void {
    this.#w.patchU32(this.#countAt, this.count);
  }
}

/**
 * The records a stream's runs go in: consecutive runs of one set share
 * records of up to `perRecord` elements; any other operation between them
 * ends the open one (end()).
 */
export class RunRecords {
  readonly #enc: RecordSink;
  readonly #perRecord: number;
  readonly #ended: ((encoded: number) => void) | undefined;
  #open: RunRecord | undefined;

  /** `ended`: runs after each record ends, where no record is open, with how many operations the records so far hold. */
  constructor(enc: RecordSink, perRecord: number, ended?: (encoded: number) => void) {
    this.#enc = enc;
    this.#perRecord = perRecord;
    this.#ended = ended;
  }

  /** Writes the run, its first element the transaction's operation `index`. */
  add(run: ElementRun, index: number): void {
    if (this.#open && !this.#open.holds(run)) this.end();
    for (let from = 0; from < run.length; ) {
      if (this.#open?.count === this.#perRecord) this.end();
      this.#open ??= new RunRecord(this.#enc, run, index + from);
      const to = Math.min(run.length, from + this.#perRecord - this.#open.count);
      this.#open.write(run, from, to, index);
      from = to;
    }
  }

  /** Ends the open record, if there is one. */
  end(): void {
    const open = this.#open;
    if (!open) return;
    open.end();
    this.#open = undefined;
    this.#ended?.(open.next);
  }
}

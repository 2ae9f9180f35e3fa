// Element records of the batch encoding: element operations on one set, from
// one run of same-verb element operations, become one record (the addon splits
// it into messages), each key written in place from its texts.

import { isVerdictValue, type DataType, type Element, type NftMap, type NftSet, type Operation } from '../objects.ts';
import { AT, ELEM_ATTR, ELEM_FLAG_INTERVAL_END, MSG, NLM_F, UDATA_COMMENT, VERDICT_CODE } from './kernel-constants.ts';
import { dataBytes, keyBytes, writeKeyBytes } from './operands.ts';
import { bytesMinusOne, prefixRange } from '../values.ts';
import type { ByteWriter } from './wire.ts';
import {
  beginElementRecord,
  commentBytes,
  dataLayout,
  type DataLayout,
  elementAttrCount,
  elementHead,
  keyLength,
  NftEncodeError,
  padTo4,
  partOffsets,
  type RecordSink,
} from './encode-parts.ts';

function partBytes(
  type: DataType,
  text: string,
  interval: boolean,
): { start: Uint8Array; last: Uint8Array; endExclusive: Uint8Array | null } {
  if (!interval || type === 'ifname') {
    const b = keyBytes(type, text);
    return { start: b, last: b, endExclusive: null };
  }
  if (type === 'mark' || type === 'integer') {
    // Host-order values do not take ranges here; such a key is one value.
    const b = keyBytes(type, text);
    return { start: b, last: b, endExclusive: null };
  }
  const r = prefixRange(type, text);
  return { start: r.start, last: r.endExclusive ? bytesMinusOne(r.endExclusive) : r.start.map(() => 0xff), endExclusive: r.endExclusive };
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
 * Writes the DATA attribute of element i: dataBytes(c.dataType, v), each part
 * written in place from its text (a map of endpoints is a million of these at
 * 100k services, and building arrays for each kept the collector busy). Any
 * value the reference would refuse goes through it, for its error.
 */
function writeElementData(w: ByteWriter, layout: DataLayout, c: NftMap, v: string | string[], i: number): void {
  const shaped = layout.concat ? Array.isArray(v) && v.length === layout.types.length : typeof v === 'string';
  if (!shaped) {
    w.attrBytes(ELEM_ATTR.DATA, elementData(c, v, i));
    return;
  }
  const at = w.attrHeader(ELEM_ATTR.DATA, AT.bytes, layout.len);
  const buf = w.raw;
  for (let z = 0; z < layout.len; z++) buf[at + z] = 0;
  try {
    if (!layout.concat) writeKeyBytes(buf, at, layout.types[0]!, v as string);
    else for (let k = 0; k < layout.types.length; k++) writeKeyBytes(buf, at + layout.offsets[k]!, layout.types[k]!, (v as string[])[k]!);
  } catch {
    elementData(c, v, i);
    throw new NftEncodeError(i, `bad value ${JSON.stringify(v)} for ${c.name}`);
  }
}

function elementData(c: NftMap, v: string | string[], i: number): Uint8Array {
  try {
    return dataBytes(c.dataType, v);
  } catch (err) {
    throw new NftEncodeError(i, `bad value ${JSON.stringify(v)} for ${c.name}: ${(err as Error).message}`, { cause: err });
  }
}

/** A map's data layout, or undefined where its elements take no data (a set, a verdict map). */
function dataLayoutOf(c: NftSet | NftMap): DataLayout | undefined {
  return c.kind === 'map' && c.dataType !== 'verdict' ? dataLayout(c.dataType) : undefined;
}

/**
 * Writes what an added element defines besides its key, its value, timeout
 * and comment, in place after the key. Returns how many attributes it wrote.
 */
function writeElementDefinition(w: ByteWriter, c: NftSet | NftMap, data: DataLayout | undefined, e: Element, i: number): number {
  let n = 0;
  const v = e.value;
  if (v !== undefined) {
    if (!isVerdictValue(v)) {
      if (c.kind !== 'map' || !data) throw new NftEncodeError(i, `${c.name} takes no value ${String(v)}`);
      writeElementData(w, data, c, v, i);
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
    w.attrU64(ELEM_ATTR.TIMEOUT, BigInt(e.timeout) * 1000n);
    n++;
  }
  if (e.comment !== undefined) {
    w.attrBytes(ELEM_ATTR.USERDATA, commentBytes(UDATA_COMMENT.element, e.comment));
    n++;
  }
  return n;
}

/** Elements of a set without intervals: each key written in place from its texts. Returns how many were written. */
function writeExactElements(
  w: ByteWriter,
  c: NftSet | NftMap,
  ops: readonly Operation[],
  from: number,
  to: number,
  at: (q: number) => number,
  base: number,
  defining: boolean,
): number {
  let count = 0;
  const keyLen = keyLength(c.keyType);
  const offsets = partOffsets(c.keyType);
  const data = dataLayoutOf(c);
  const types = c.keyType;
  const parts = types.length;
  for (let q = from; q < to; q++) {
    const local = at(q);
    const e = ops[local]!.object as Element;
    const i = base + local;
    const key = e.key;
    if (key.length !== parts) throw new NftEncodeError(i, `key has ${key.length} parts, ${c.name} has ${parts}`);
    const p = elementHead(w, i, keyLen);
    const buf = w.raw;
    try {
      for (let k = 0; k < parts; k++) writeKeyBytes(buf, p + offsets[k]!, types[k]!, key[k]!);
    } catch (err) {
      throw new NftEncodeError(i, `bad element key ${JSON.stringify(key)}: ${(err as Error).message}`, { cause: err });
    }
    w.seek(p + keyLen);
    const n = 1 + (defining ? writeElementDefinition(w, c, data, e, i) : 0);
    elementAttrCount(w, p, n);
    count++;
  }
  return count;
}

/** Elements of an interval set: each a start and end, from parsed ranges. Returns how many records were written. */
function writeIntervalElements(
  w: ByteWriter,
  c: NftSet | NftMap,
  ops: readonly Operation[],
  from: number,
  to: number,
  at: (q: number) => number,
  base: number,
  defining: boolean,
): number {
  const concat = c.keyType.length > 1;
  const data = dataLayoutOf(c);
  let count = 0;
  for (let q = from; q < to; q++) {
    const local = at(q);
    const e = ops[local]!.object as Element;
    const i = base + local;
    let parts: ReturnType<typeof partBytes>[];
    try {
      if (e.key.length !== c.keyType.length) throw new Error(`key has ${e.key.length} parts, ${c.name} has ${c.keyType.length}`);
      parts = e.key.map((text, k) => partBytes(c.keyType[k]!, text, true));
    } catch (err) {
      throw new NftEncodeError(i, `bad element key ${JSON.stringify(e.key)}: ${(err as Error).message}`, { cause: err });
    }
    const key = concat ? concatParts(parts.map((p) => p.start)) : parts[0]!.start;
    const keyAt = elementHead(w, i, key.length);
    w.raw.set(key, keyAt);
    w.seek(keyAt + key.length);
    let n = 1;
    if (concat) {
      w.attrBytes(ELEM_ATTR.KEY_END, concatParts(parts.map((p) => p.last)));
      n++;
    }
    if (defining) n += writeElementDefinition(w, c, data, e, i);
    elementAttrCount(w, keyAt, n);
    count++;
    // A single-key interval element is a start and, unless it runs to the top, an end marker.
    const end = parts[0]!.endExclusive;
    if (!concat && end) {
      w.u32(i);
      w.attrs([
        { id: ELEM_ATTR.KEY, type: 'bytes', value: end },
        { id: ELEM_ATTR.FLAGS, type: 'u32', value: ELEM_FLAG_INTERVAL_END },
      ]);
      count++;
    }
  }
  return count;
}

/**
 * Elements ops[from, to), or ops[order[from]], ops[order[from + 1]]... when order is given (same verb and set), as one record.
 * `base`: the transaction's index of ops[0] (a streamed encoder passes a window of its operations).
 */
export function writeElements(
  enc: RecordSink,
  ops: readonly Operation[],
  from: number,
  to: number,
  order?: ArrayLike<number>,
  base = 0,
): void {
  const at = (q: number): number => (order ? order[q]! : q);
  const first = ops[at(from)]!.object as Element;
  const verb = ops[at(from)]!.verb;
  const firstIndex = base + at(from);
  const c = enc.container(first.family, first.table, first.set);
  if (!c)
    throw new NftEncodeError(
      firstIndex,
      `set ${first.set} in ${first.family} ${first.table} is not known (add it in this transaction or list the table first)`,
    );
  const msg = verb === 'delete' ? MSG.DELSETELEM : verb === 'destroy' ? MSG.DESTROYSETELEM : MSG.NEWSETELEM;
  const flags = verb === 'create' ? NLM_F.CREATE | NLM_F.EXCL : verb === 'add' ? NLM_F.CREATE : 0;
  const countAt = beginElementRecord(enc, msg, flags, first.family, first.table, first.set, firstIndex);
  const defining = msg === MSG.NEWSETELEM;
  const interval = c.flags?.includes('interval') ?? false;
  const count = interval
    ? writeIntervalElements(enc.w, c, ops, from, to, at, base, defining)
    : writeExactElements(enc.w, c, ops, from, to, at, base, defining);
  enc.w.patchU32(countAt, count);
}

/**
 * Writes the run of same-verb element operations from `i`: one record when
 * they are all of one set, else one per set (see groupBySet). Returns the
 * index after the run.
 */
export function writeElementRun(enc: RecordSink, ops: readonly Operation[], i: number): number {
  const { end, mixed } = elementRun(ops, i);
  if (!mixed) writeElements(enc, ops, i, end);
  else for (const group of groupBySet(ops, i, end)) writeElements(enc, ops, 0, group.length, group);
  return end;
}

/** Where the run of same-verb element operations from `i` ends, and whether it spans more than one set. */
function elementRun(ops: readonly Operation[], i: number): { end: number; mixed: boolean } {
  const { verb, object: o } = ops[i]!;
  if (o.kind !== 'element') return { end: i + 1, mixed: false };
  let j = i + 1;
  let mixed = false;
  while (j < ops.length) {
    const n = ops[j]!;
    const e = n.object;
    if (n.verb !== verb || e.kind !== 'element') break;
    if (!mixed && (e.set !== o.set || e.table !== o.table || e.family !== o.family)) mixed = true;
    j++;
  }
  return { end: j, mixed };
}

/**
 * The op indexes of a run of same-verb element operations, grouped by set in
 * order of first appearance. Adding (or deleting) distinct elements commutes,
 * and the kernel pays per message: a full sync lists each port's elements
 * together, across a dozen sets, which as written would be a message every
 * few elements (100k endpoint-map elements: 289 ms of kernel time interleaved,
 * 167 ms grouped). Counted first, then placed: one typed array of 4 bytes an
 * element, where growing a list per set left several times that for the
 * collector at the peak of a full sync (2.2M elements at 100k services).
 */
function groupBySet(ops: readonly Operation[], from: number, to: number): Uint32Array[] {
  const byFamily = new Map<string, Map<string, Map<string, number>>>();
  const counts: number[] = [];
  const groupOf = (e: Element): number => {
    let byTable = byFamily.get(e.family);
    if (!byTable) {
      byTable = new Map();
      byFamily.set(e.family, byTable);
    }
    let bySet = byTable.get(e.table);
    if (!bySet) {
      bySet = new Map();
      byTable.set(e.table, bySet);
    }
    let g = bySet.get(e.set);
    if (g === undefined) {
      g = counts.length;
      bySet.set(e.set, g);
      counts.push(0);
    }
    return g;
  };
  // Elements come in same-set runs: the maps are asked only where a run ends.
  const eachInGroup = (visit: (i: number, g: number) => void): void => {
    let last: Element | undefined;
    let g = 0;
    for (let i = from; i < to; i++) {
      const e = ops[i]!.object as Element;
      if (last === undefined || e.set !== last.set || e.table !== last.table || e.family !== last.family) {
        g = groupOf(e);
        last = e;
      }
      visit(i, g);
    }
  };
  eachInGroup((_, g) => counts[g]!++);
  const order = new Uint32Array(to - from);
  const next: number[] = [];
  let at = 0;
  for (const c of counts) {
    next.push(at);
    at += c;
  }
  const starts = [...next];
  eachInGroup((i, g) => {
    order[next[g]!++] = i;
  });
  return counts.map((c, g) => order.subarray(starts[g]!, starts[g]! + c));
}

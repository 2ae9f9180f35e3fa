// Elements of a listing (native/libnftnl-glue/list.h) decoded from their key
// and data bytes: an interval set's starts and end markers made into ranges
// and prefixes, a map's data and verdicts, timeouts and comments.

import type { DataType, Element, NftMap, NftSet, Verdict } from '../objects.ts';
import { bytesMinusOne, compareBytes, plusPowerOfTwo, typeLength } from '../values.ts';
import { dataLayout, type DataLayout } from './encode-parts.ts';
import { ELEM_ATTR, ELEM_FLAG_INTERVAL_END, UDATA_COMMENT, VERDICT_CODE } from './kernel-constants.ts';
import { type RawAttrs, udataComment } from './listing-reader.ts';
import { keyText } from './raise.ts';

const VERDICT_BY_CODE = new Map<number, Verdict['verdict']>(Object.entries(VERDICT_CODE).map(([k, v]) => [v, k as Verdict['verdict']]));

function verdictOf(a: RawAttrs): Verdict | undefined {
  const code = a.u32(ELEM_ATTR.VERDICT);
  if (code === undefined) return undefined;
  const verdict = VERDICT_BY_CODE.get(code | 0);
  if (!verdict) return undefined;
  if (verdict === 'jump' || verdict === 'goto') return { verdict, chain: a.str(ELEM_ATTR.CHAIN) ?? '' };
  return { verdict } as Verdict;
}

/** 'a/len' when [start, endExclusive) is a prefix, else undefined. */
function prefixText(type: DataType, start: Uint8Array, endExclusive: Uint8Array | null): string | undefined {
  const bits = start.length * 8;
  // size = end - start must be a power of two 2^h with start aligned to it.
  for (let h = 0; h <= bits; h++) {
    const end = plusPowerOfTwo(start, h);
    const matches = endExclusive === null ? end === null : end !== null && compareBytes(end, endExclusive) === 0;
    if (matches) {
      if (h === 0 && (type === 'inet_service' || type === 'inet_proto')) return keyText(type, start);
      const addr = keyText(type, start);
      return h === 0 ? addr : `${addr}/${bits - h}`;
    }
  }
  return undefined;
}

/** A concatenation's parts, at its layout's offsets (worked out once per set, not per element). */
function splitKey(key: Uint8Array, layout: DataLayout): Uint8Array[] {
  const { types, offsets } = layout;
  if (types.length === 1) return [key];
  return offsets.map((at, k) => key.subarray(at, at + typeLength(types[k]!)));
}

/** A key's or a map's data's texts, a part each, as its layout says. */
function partTexts(bytes: Uint8Array, layout: DataLayout): string[] {
  return splitKey(bytes, layout).map((p, k) => keyText(layout.types[k]!, p));
}

function rangeText(type: DataType, start: Uint8Array, last: Uint8Array): string {
  if (compareBytes(start, last) === 0) return keyText(type, start);
  return prefixText(type, start, plusPowerOfTwo(last, 0)) ?? `${keyText(type, start)}-${keyText(type, last)}`;
}

export function decodeElements(c: NftSet | NftMap, raw: RawAttrs[]): Element[] {
  const out: Element[] = [];
  const interval = c.flags?.includes('interval') ?? false;
  const concat = c.keyType.length > 1;
  const keyLayout = dataLayout(c.keyType);
  // A map's data other than a verdict, laid out once for the set: a concatenation's parts, or one value.
  const data = c.kind === 'map' && c.dataType !== 'verdict' ? dataLayout(c.dataType) : undefined;
  const base = (a: RawAttrs, key: string[]): Element => {
    const e: Element = { kind: 'element', family: c.family, table: c.table, set: c.name, key };
    if (c.kind === 'map') {
      if (data === undefined) {
        const v = verdictOf(a);
        if (v) e.value = v;
      } else {
        const d = a.get(ELEM_ATTR.DATA);
        if (d instanceof Uint8Array) e.value = data.concat ? partTexts(d, data) : keyText(data.types[0]!, d);
      }
    }
    // The kernel reports an element's timeout only where it differs from the set's.
    const t = a.u64(ELEM_ATTR.TIMEOUT);
    if (t !== undefined && t > 0n) e.timeout = Number(t / 1000n);
    const cm = udataComment(a.get(ELEM_ATTR.USERDATA), UDATA_COMMENT.element);
    if (cm !== undefined) e.comment = cm;
    return e;
  };
  if (interval && !concat) {
    // Starts and end markers, in whatever order the kernel dumps them.
    const type = c.keyType[0]!;
    const items = raw
      .map((a) => ({
        a,
        key: a.get(ELEM_ATTR.KEY) as Uint8Array,
        end: ((a.u32(ELEM_ATTR.FLAGS) ?? 0) & ELEM_FLAG_INTERVAL_END) !== 0,
      }))
      .filter((x) => x.key instanceof Uint8Array)
      .sort((x, y) => compareBytes(x.key, y.key) || (x.end ? -1 : 1));
    for (let i = 0; i < items.length; i++) {
      const it = items[i]!;
      if (it.end) continue;
      const next = items[i + 1];
      const endKey = next?.end ? next.key : null;
      const last = endKey ? (plusPowerOfTwo(endKey, 0) ? bytesMinusOne(endKey) : endKey) : it.key.map(() => 0xff);
      const text = prefixText(type, it.key, endKey) ?? `${keyText(type, it.key)}-${keyText(type, last)}`;
      out.push(base(it.a, [text]));
    }
    return out;
  }
  for (const a of raw) {
    const key = a.get(ELEM_ATTR.KEY);
    if (!(key instanceof Uint8Array)) continue;
    let texts: string[];
    if (interval) {
      const parts = splitKey(key, keyLayout);
      const endRaw = a.get(ELEM_ATTR.KEY_END);
      const ends = endRaw instanceof Uint8Array ? splitKey(endRaw, keyLayout) : parts;
      texts = parts.map((p, k) => rangeText(c.keyType[k]!, p, ends[k]!));
    } else {
      texts = partTexts(key, keyLayout);
    }
    out.push(base(a, texts));
  }
  return out;
}

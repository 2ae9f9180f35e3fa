// The elements of some sets as the kernel listed them, kept encoded
// (ListOptions.elementsEncodedOf) and compared in place with wanted ones, each
// written into a scratch buffer as a commit would write it (encode-runs.ts).
// An adoption at 100k Services x 10 endpoints finds a million endpoint slots
// in the shared endpoint maps: decoded into elements they were most of its
// garbage, and rewriting them instead cost the kernel ~4 s, as each element
// added to a map is checked against every rule bound to it.

import type { DataType, Element, EncodedElements, NftMap, NftSet, WantedElements } from '../objects.ts';
import { decodeElements } from './decode-elements.ts';
import { dataLayout, type DataLayout, keyLength, partOffsets } from './encode-parts.ts';
import { ELEM_ATTR } from './kernel-constants.ts';
import { type ByteReader, u32In } from './listing-reader.ts';
import { writeKeyBytes } from './operands.ts';

/** Whether a container's elements can be held encoded: a key of fixed length, no intervals, data (if any) a concatenation, as runs' are. */
export function heldEncoded(c: NftSet | NftMap): boolean {
  if (c.flags?.includes('interval')) return false;
  return c.kind === 'set' || Array.isArray(c.dataType);
}

const NONE = -1;

/** One set's listed elements: where each one's attributes, key and data lie in the listing. */
class HeldSet {
  readonly container: NftSet | NftMap;
  readonly keyType: readonly DataType[];
  readonly keyLen: number;
  readonly keyOffsets: number[];
  readonly data: DataLayout | undefined;
  count = 0;
  attrsAt = new Int32Array(0);
  /** NONE for an element with more than its key and data (a timeout, a comment, flags): never kept, so written again. */
  keyAt = new Int32Array(0);
  dataAt = new Int32Array(0);
  kept: Uint8Array | undefined;
  /** Open addressing over the keys' bytes: element index + 1, 0 for an empty slot. Made at the first keep(). */
  index: Int32Array | undefined;

  constructor(c: NftSet | NftMap) {
    this.container = c;
    this.keyType = c.keyType;
    this.keyLen = keyLength(c.keyType);
    this.keyOffsets = partOffsets(c.keyType);
    this.data = c.kind === 'map' ? dataLayout(c.dataType as readonly DataType[]) : undefined;
  }

  grow(by: number): void {
    const n = this.count + by;
    if (n <= this.attrsAt.length) return;
    const more = (a: Int32Array) => {
      const b = new Int32Array(n);
      b.set(a.subarray(0, this.count));
      return b;
    };
    this.attrsAt = more(this.attrsAt);
    this.keyAt = more(this.keyAt);
    this.dataAt = more(this.dataAt);
  }
}

function hashBytes(m: Uint8Array, at: number, len: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < len; i++) h = Math.imul(h ^ m[at + i]!, 0x01000193);
  return h >>> 0;
}

function sameBytes(a: Uint8Array, at: number, b: Uint8Array, bt: number, len: number): boolean {
  for (let i = 0; i < len; i++) if (a[at + i] !== b[bt + i]) return false;
  return true;
}

export class ListedEncodedElements implements EncodedElements {
  readonly #mem: Uint8Array;
  readonly #reader: ByteReader;
  readonly #sets = new Map<string, HeldSet>();
  #scratch = new Uint8Array(64);

  /** `reader` reads `mem`, the listing, and is where a decoded element is read back from. */
  constructor(mem: Uint8Array, reader: ByteReader) {
    this.#mem = mem;
    this.#reader = reader;
  }

  /** Reads `count` elements of `c` from `r` (an elements record's body, after its count), noting where each lies. */
  read(c: NftSet | NftMap, r: ByteReader, count: number): void {
    let s = this.#sets.get(c.name);
    if (s === undefined) {
      s = new HeldSet(c);
      this.#sets.set(c.name, s);
    }
    s.grow(count);
    const mem = this.#mem;
    const dataLen = s.data?.len ?? 0;
    for (let e = 0; e < count; e++) {
      const i = s.count++;
      s.attrsAt[i] = r.position;
      let key = NONE;
      let data = s.data ? NONE : 0;
      let plain = true;
      for (let n = r.u16(), k = 0; k < n; k++) {
        const id = r.u16();
        r.u8();
        const len = r.u32();
        const at = r.position;
        r.skip(len);
        if (id === ELEM_ATTR.KEY && len === s.keyLen) key = at;
        else if (id === ELEM_ATTR.DATA && s.data && len === dataLen) data = at;
        else if (!(id === ELEM_ATTR.FLAGS && len >= 4 && u32In(mem, at) === 0)) plain = false;
      }
      s.keyAt[i] = plain && data !== NONE ? key : NONE;
      s.dataAt[i] = data;
    }
  }

  holds(set: string): boolean {
    return this.#sets.has(set);
  }

  keep(run: WantedElements, i: number): boolean {
    const s = this.#sets.get(run.set);
    if (s === undefined) return false;
    s.index ??= this.#indexOf(s);
    s.kept ??= new Uint8Array(s.count);
    const { index, kept } = s;
    const want = this.#encode(s, run, i);
    if (want === undefined) return false;
    const mem = this.#mem;
    const mask = index.length - 1;
    for (let h = hashBytes(want, 0, s.keyLen) & mask; index[h] !== 0; h = (h + 1) & mask) {
      const e = index[h]! - 1;
      if (!sameBytes(mem, s.keyAt[e]!, want, 0, s.keyLen)) continue;
      // A set holds a key once: this is the element, as wanted or not.
      if (kept[e] === 1 || (s.data && !sameBytes(mem, s.dataAt[e]!, want, s.keyLen, s.data.len))) return false;
      kept[e] = 1;
      return true;
    }
    return false;
  }

  notKept(set: string): Element[] {
    const s = this.#sets.get(set);
    if (s === undefined) return [];
    const starts: number[] = [];
    for (let e = 0; e < s.count; e++) if (s.kept?.[e] !== 1) starts.push(s.attrsAt[e]!);
    return starts.length === 0
      ? []
      : decodeElements(
          s.container,
          starts.map((at) => this.#reader.seek(at).attrs()),
        );
  }

  #indexOf(s: HeldSet): Int32Array {
    let size = 16;
    while (size < 2 * s.count) size *= 2;
    const index = new Int32Array(size);
    const mask = size - 1;
    const mem = this.#mem;
    for (let e = 0; e < s.count; e++) {
      const at = s.keyAt[e]!;
      if (at === NONE) continue;
      let h = hashBytes(mem, at, s.keyLen) & mask;
      while (index[h] !== 0) h = (h + 1) & mask;
      index[h] = e + 1;
    }
    return index;
  }

  /** Wanted element i of `run`, key then data, in the scratch buffer; undefined when a value cannot be written (the commit says why). */
  #encode(s: HeldSet, run: WantedElements, i: number): Uint8Array | undefined {
    const len = s.keyLen + (s.data?.len ?? 0);
    if (this.#scratch.length < len) this.#scratch = new Uint8Array(2 * len);
    const b = this.#scratch;
    b.fill(0, 0, len);
    try {
      for (let k = 0; k < s.keyType.length; k++) writeKeyBytes(b, s.keyOffsets[k]!, s.keyType[k]!, run.value(i, k));
      const d = s.data;
      if (d)
        for (let k = 0; k < d.types.length; k++)
          writeKeyBytes(b, s.keyLen + d.offsets[k]!, d.types[k]!, run.value(i, s.keyType.length + k));
    } catch {
      return undefined;
    }
    return b;
  }
}

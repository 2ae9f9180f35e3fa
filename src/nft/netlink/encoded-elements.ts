// The elements of some sets as the kernel listed them, kept encoded
// (ListOptions.elementsEncodedOf) and compared by their bytes with wanted
// ones, each written into a scratch buffer as a commit would write it
// (encode-runs.ts); only those nothing wanted are decoded.
// An adoption at 100k Services x 10 endpoints finds a million endpoint slots
// in the shared endpoint maps: decoded into elements they were most of its
// garbage, and rewriting them instead cost the kernel ~4 s, as each element
// added to a map is checked against every rule bound to it.

import type { DataType, Element, EncodedElements, NftMap, NftSet, WantedElements } from '../objects.ts';
import { decodeElements } from './decode-elements.ts';
import { dataLayout, type DataLayout, writeRunParts } from './encode-parts.ts';
import { ELEM_ATTR } from './kernel-constants.ts';
import { type ByteReader, fnv1a, sameRange, u32In } from './listing-reader.ts';

/** One set's listed elements: each one's key and data bytes side by side, copied out of the listing, and where its attributes lie. */
class HeldSet {
  readonly container: NftSet | NftMap;
  readonly key: DataLayout;
  readonly data: DataLayout | undefined;
  /** Bytes of an element: its key, then its data. */
  readonly width: number;
  count = 0;
  attrsAt = new Int32Array(0);
  bytes = new Uint8Array(0);
  /** 0 for an element with more than its key and data (a timeout, a comment, flags): never kept, so written again. */
  plain = new Uint8Array(0);
  kept: Uint8Array | undefined;
  /** Open addressing over the keys' bytes: element index + 1, 0 for an empty slot. Made at the first keep(). */
  index: Int32Array | undefined;

  constructor(c: NftSet | NftMap) {
    this.container = c;
    this.key = dataLayout(c.keyType);
    this.data = c.kind === 'map' ? dataLayout(c.dataType as readonly DataType[]) : undefined;
    this.width = this.key.len + (this.data?.len ?? 0);
  }

  grow(by: number): void {
    const n = this.count + by;
    if (n <= this.attrsAt.length) return;
    const attrsAt = new Int32Array(n);
    attrsAt.set(this.attrsAt.subarray(0, this.count));
    this.attrsAt = attrsAt;
    const bytes = new Uint8Array(n * this.width);
    bytes.set(this.bytes.subarray(0, this.count * this.width));
    this.bytes = bytes;
    const plain = new Uint8Array(n);
    plain.set(this.plain.subarray(0, this.count));
    this.plain = plain;
  }
}

function indexOf(s: HeldSet): Int32Array {
  let size = 16;
  while (size < 2 * s.count) size *= 2;
  const index = new Int32Array(size);
  const mask = size - 1;
  for (let e = 0; e < s.count; e++) {
    if (s.plain[e] === 0) continue;
    let h = fnv1a(s.bytes, e * s.width, s.key.len) & mask;
    while (index[h] !== 0) h = (h + 1) & mask;
    index[h] = e + 1;
  }
  return index;
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

  /** Reads `count` elements of `c` from `r` (an elements record's body, after its count): their keys' and data's bytes, and places. */
  read(c: NftSet | NftMap, r: ByteReader, count: number): void {
    let s = this.#sets.get(c.name);
    if (s === undefined) {
      s = new HeldSet(c);
      this.#sets.set(c.name, s);
    }
    s.grow(count);
    const mem = this.#mem;
    const { width, bytes } = s;
    const keyLen = s.key.len;
    const dataLen = s.data?.len ?? 0;
    for (let e = 0; e < count; e++) {
      const i = s.count++;
      s.attrsAt[i] = r.position;
      let key = false;
      let data = s.data === undefined;
      let plain = true;
      for (let n = r.u16(), k = 0; k < n; k++) {
        const id = r.u16();
        r.u8();
        const len = r.u32();
        const at = r.position;
        r.skip(len);
        // Copied a byte at a time: a view per value would be two million at 100k Services.
        if (id === ELEM_ATTR.KEY && len === keyLen) {
          for (let z = 0, o = i * width; z < len; z++) bytes[o + z] = mem[at + z]!;
          key = true;
        } else if (id === ELEM_ATTR.DATA && len === dataLen && !data) {
          for (let z = 0, o = i * width + keyLen; z < len; z++) bytes[o + z] = mem[at + z]!;
          data = true;
        } else if (!(id === ELEM_ATTR.FLAGS && len >= 4 && u32In(mem, at) === 0)) plain = false;
      }
      s.plain[i] = plain && key && data ? 1 : 0;
    }
  }

  holds(set: string): boolean {
    return this.#sets.has(set);
  }

  keep(run: WantedElements, i: number): boolean {
    const s = this.#sets.get(run.set);
    if (s === undefined) return false;
    s.index ??= indexOf(s);
    s.kept ??= new Uint8Array(s.count);
    const { index, kept, bytes, width } = s;
    const keyLen = s.key.len;
    const want = this.#encode(s, run, i);
    if (want === undefined) return false;
    const mask = index.length - 1;
    for (let h = fnv1a(want, 0, keyLen) & mask; index[h] !== 0; h = (h + 1) & mask) {
      const e = index[h]! - 1;
      if (!sameRange(bytes, e * width, want, 0, keyLen)) continue;
      // A set holds a key once: this is the element, as wanted or not.
      if (kept[e] === 1 || !sameRange(bytes, e * width + keyLen, want, keyLen, width - keyLen)) return false;
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

  forEachData(set: string, fn: (bytes: Uint8Array, at: number) => void): void {
    const s = this.#sets.get(set);
    if (s?.data === undefined) return;
    for (let e = 0; e < s.count; e++) fn(s.bytes, e * s.width + s.key.len);
  }

  /** Wanted element i of `run`, key then data, in the scratch buffer; undefined when a value cannot be written (the commit says why). */
  #encode(s: HeldSet, run: WantedElements, i: number): Uint8Array | undefined {
    const len = s.width;
    if (this.#scratch.length < len) this.#scratch = new Uint8Array(2 * len);
    const b = this.#scratch;
    b.fill(0, 0, len);
    try {
      writeRunParts(b, 0, s.key, run, i, 0);
      if (s.data) writeRunParts(b, s.key.len, s.data, run, i, s.key.types.length);
    } catch {
      return undefined;
    }
    return b;
  }
}

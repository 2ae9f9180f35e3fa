// Reader for the listing the addon returns (native/libnftnl-glue/list.h):
// records of attributes, each value read in place from the listing's memory.

import { AT } from './kernel-constants.ts';

/** Attributes as read back: raw bytes by id (strings keep no NUL, arrays are decoded). */
export type RawAttr = Uint8Array | string[];

/**
 * One record's attributes as the addon's listing gives them, by id. A record
 * has a few, and a listing hundreds of thousands of records (millions of
 * attributes at 100k Services): each attribute is where its bytes sit in the
 * listing, read in place (u32, str, ...) without a view of its own, which get()
 * makes for those that want one. Ids and places alternate in one array looked
 * up by a scan, not a hash table per record.
 */
export class RawAttrs {
  readonly #mem: Uint8Array;
  /** id, start, then the length (or the decoded string array), for each attribute. */
  readonly #flat: (number | string[])[];

  constructor(mem: Uint8Array, flat: (number | string[])[]) {
    this.#mem = mem;
    this.#flat = flat;
  }

  /** How many attributes the record has; `idAt(i)` and the `…At(i)` readers take an index below it. */
  get size(): number {
    return this.#flat.length / 3;
  }

  idAt(i: number): number {
    return this.#flat[3 * i] as number;
  }

  /** The attribute's value: a view of its bytes (or its strings); undefined when absent. */
  get(id: number): RawAttr | undefined {
    const i = this.#find(id);
    return i < 0 ? undefined : this.valueAt(i);
  }

  valueAt(i: number): RawAttr {
    const f = this.#flat;
    const len = f[3 * i + 2]!;
    if (typeof len !== 'number') return len;
    const start = f[3 * i + 1] as number;
    return this.#mem.subarray(start, start + len);
  }

  /** A copy of the attribute's bytes (undefined for a string array). */
  copyAt(i: number): Uint8Array | undefined {
    const f = this.#flat;
    const len = f[3 * i + 2]!;
    if (typeof len !== 'number') return undefined;
    const start = f[3 * i + 1] as number;
    return this.#mem.slice(start, start + len);
  }

  isArrayAt(i: number): boolean {
    return typeof this.#flat[3 * i + 2] !== 'number';
  }

  u8At(i: number): number | undefined {
    const len = this.#flat[3 * i + 2];
    return typeof len === 'number' && len >= 1 ? this.#mem[this.#flat[3 * i + 1] as number] : undefined;
  }

  u32At(i: number): number | undefined {
    const len = this.#flat[3 * i + 2];
    return typeof len === 'number' && len >= 4 ? u32In(this.#mem, this.#flat[3 * i + 1] as number) : undefined;
  }

  u64At(i: number): bigint | undefined {
    const len = this.#flat[3 * i + 2];
    return typeof len === 'number' && len >= 8 ? u64In(this.#mem, this.#flat[3 * i + 1] as number) : undefined;
  }

  /** The text up to the first NUL. */
  strAt(i: number): string | undefined {
    const len = this.#flat[3 * i + 2];
    return typeof len === 'number' ? textIn(this.#mem, this.#flat[3 * i + 1] as number, len) : undefined;
  }

  u32(id: number): number | undefined {
    const i = this.#find(id);
    return i < 0 ? undefined : this.u32At(i);
  }

  u64(id: number): bigint | undefined {
    const i = this.#find(id);
    return i < 0 ? undefined : this.u64At(i);
  }

  str(id: number): string | undefined {
    const i = this.#find(id);
    return i < 0 ? undefined : this.strAt(i);
  }

  /** Each id with its value, in the record's order. */
  forEach(fn: (id: number, value: RawAttr) => void): void {
    for (let i = 0; i < this.size; i++) fn(this.idAt(i), this.valueAt(i));
  }

  #find(id: number): number {
    const f = this.#flat;
    for (let i = 0; i < f.length; i += 3) if (f[i] === id) return i / 3;
    return -1;
  }
}

export class ByteReader {
  readonly #buf: Uint8Array;
  readonly #view: DataView;
  #pos = 0;

  constructor(buf: Uint8Array) {
    // A plain view: a Buffer's slice() would alias instead of copying.
    this.#buf = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
    this.#view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  get position(): number {
    return this.#pos;
  }

  /** Reads on from `position` (a record's start this reader gave). */
  seek(position: number): this {
    if (position < 0 || position > this.#buf.length) throw new RangeError('listing position out of range');
    this.#pos = position;
    return this;
  }

  /** Steps over a rule's expressions (a count, then each one's name and attributes) without reading them; returns the count. */
  skipExprs(): number {
    const n = this.u16();
    for (let i = 0; i < n; i++) {
      this.skip(this.u8());
      const attrs = this.u16();
      for (let k = 0; k < attrs; k++) {
        this.skip(3);
        this.skip(this.u32());
      }
    }
    return n;
  }

  skip(n: number): void {
    if (this.#pos + n > this.#buf.length) throw new RangeError('listing buffer is truncated');
    this.#pos += n;
  }

  get done(): boolean {
    return this.#pos >= this.#buf.length;
  }
  u8(): number {
    return this.#buf[this.#pos++]!;
  }
  u16(): number {
    const v = this.#view.getUint16(this.#pos, true);
    this.#pos += 2;
    return v;
  }
  u32(): number {
    const v = this.#view.getUint32(this.#pos, true);
    this.#pos += 4;
    return v;
  }
  bytes(n: number): Uint8Array {
    const b = this.#buf.subarray(this.#pos, this.#pos + n);
    if (b.length !== n) throw new RangeError('listing buffer is truncated');
    this.#pos += n;
    return b;
  }
  text(n: number): string {
    const start = this.#pos;
    this.bytes(n);
    const offset = this.#buf.byteOffset;
    return bufferOver(this.#buf.buffer).toString('utf8', offset + start, offset + start + n);
  }

  attrs(): RawAttrs {
    const n = this.u16();
    const flat: (number | string[])[] = [];
    for (let i = 0; i < n; i++) {
      const id = this.u16();
      const type = this.u8();
      const len = this.u32();
      const start = this.#pos;
      if (start + len > this.#buf.length) throw new RangeError('listing buffer is truncated');
      this.#pos += len;
      if (type === AT.strArray) {
        const r = new ByteReader(this.#buf.subarray(start, start + len));
        const count = r.u16();
        const items: string[] = [];
        for (let k = 0; k < count; k++) items.push(r.text(r.u16()));
        flat.push(id, start, items);
      } else {
        flat.push(id, start, len);
      }
    }
    return new RawAttrs(this.#buf, flat);
  }
}

// Raw attribute values are libnftnl's host-order memory.
export const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export function rawU32(b: Uint8Array | string[] | undefined): number | undefined {
  return b instanceof Uint8Array && b.length >= 4 ? u32In(b, 0) : undefined;
}
/** The comment of a table's, chain's, rule's, set's or element's user data (`type` its kind's comment tag). */
export function udataComment(b: Uint8Array | string[] | undefined, type: number): string | undefined {
  if (!(b instanceof Uint8Array)) return undefined;
  for (let i = 0; i + 2 <= b.length; ) {
    const t = b[i]!;
    const len = b[i + 1]!;
    if (t === type) return rawStr(b.subarray(i + 2, i + 2 + len));
    i += 2 + len;
  }
  return undefined;
}

export function rawStr(b: Uint8Array | string[] | undefined): string | undefined {
  return b instanceof Uint8Array ? textIn(b, 0, b.length) : undefined;
}

/** Whether `len` bytes of `a` at `p` and of `b` at `q` are the same. */
export function sameRange(a: Uint8Array, p: number, b: Uint8Array, q: number, len: number): boolean {
  for (let i = 0; i < len; i++) if (a[p + i] !== b[q + i]) return false;
  return true;
}

/** 32-bit FNV-1a over `len` bytes of `m` at `p`. */
export function fnv1a(m: Uint8Array, p: number, len: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < len; i++) h = Math.imul(h ^ m[p + i]!, 0x01000193);
  return h >>> 0;
}

/** The host-order u32 at `p` of `m`; by hand, not a DataView per value: a listing reads millions. */
export function u32In(m: Uint8Array, p: number): number {
  return (
    (LITTLE
      ? m[p]! | (m[p + 1]! << 8) | (m[p + 2]! << 16) | (m[p + 3]! << 24)
      : (m[p]! << 24) | (m[p + 1]! << 16) | (m[p + 2]! << 8) | m[p + 3]!) >>> 0
  );
}

function u64In(m: Uint8Array, p: number): bigint {
  return new DataView(m.buffer, m.byteOffset + p, 8).getBigUint64(0, LITTLE);
}

/** Where the text of `m`'s `len` bytes at `start` ends: its first NUL, or its end (the kernel and the writer differ on the terminator). */
export function textEnd(m: Uint8Array, start: number, len: number): number {
  let end = start;
  while (end < start + len && m[end] !== 0) end++;
  return end;
}

/** The text of `m`'s `len` bytes at `start`, up to the first NUL. */
function textIn(m: Uint8Array, start: number, len: number): string {
  return bufferOver(m.buffer).toString('utf8', m.byteOffset + start, m.byteOffset + textEnd(m, start, len));
}

// One Buffer over each listing's memory to decode text from, not one per string:
// a listing at 100k Services holds a million strings. Held weakly, as the
// listing's bytes are.
const buffers = new WeakMap<ArrayBufferLike, Buffer>();
function bufferOver(memory: ArrayBufferLike): Buffer {
  let b = buffers.get(memory);
  if (b === undefined) {
    b = Buffer.from(memory);
    buffers.set(memory, b);
  }
  return b;
}

// Byte writer and reader for the addon's encodings: the batch the addon sends
// (native/libnftnl-glue/batch.h) and the listing it returns (list.h). Integers
// are little-endian on the wire; the addon converts to host order.

import { AT, type AttrType } from './kernel-constants.ts';
import { assertNever } from '../../assert-never.ts';

export type AttrValue = number | bigint | string | Uint8Array | readonly string[];

/** One libnftnl attribute: id, wire type, value. */
export interface Attr {
  id: number;
  type: AttrType;
  value: AttrValue;
}

const UTF8 = new TextEncoder();
const AT_U8 = AT.u8;
const AT_U32 = AT.u32;
const AT_U64 = AT.u64;
const AT_STR = AT.str;
const AT_BYTES = AT.bytes;

/** Where a ByteWriter gets its buffers: a plain one, or one of the addon's (NativeAddon.allocateBatch). */
export type BufferAllocator = (size: number) => Uint8Array;

const plainBuffer: BufferAllocator = (size) => new Uint8Array(size);

export class ByteWriter {
  #buf: Uint8Array;
  #view: DataView;
  #pos = 0;
  readonly #allocate: BufferAllocator;

  constructor(initial = 1 << 16, allocate: BufferAllocator = plainBuffer) {
    this.#allocate = allocate;
    this.#buf = allocate(initial);
    this.#view = new DataView(this.#buf.buffer, this.#buf.byteOffset, this.#buf.byteLength);
  }

  get position(): number {
    return this.#pos;
  }

  /** Bytes the writer holds before it has to grow. */
  get capacity(): number {
    return this.#buf.length;
  }

  /** Whether its buffer was taken (detached) by the addon's commit: then it is done with. */
  get taken(): boolean {
    // ES2024's ArrayBuffer#detached (Node 22+), beyond the es2023 lib we compile against.
    return (this.#buf.buffer as ArrayBuffer & { readonly detached: boolean }).detached;
  }

  /**
   * Starts over at position 0, keeping the buffer (earlier finish() views see
   * new bytes), grown at once to `capacity` if it is smaller.
   */
  reset(capacity = 0): void {
    this.#pos = 0;
    if (capacity > this.#buf.length) this.#use(this.#allocate(capacity));
  }

  #use(buf: Uint8Array): void {
    this.#buf = buf;
    this.#view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  #ensure(n: number): void {
    if (this.#pos + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#pos + n) size *= 2;
    const next = this.#allocate(size);
    next.set(this.#buf.subarray(0, this.#pos));
    this.#use(next);
  }

  u8(v: number): void {
    this.#ensure(1);
    this.#buf[this.#pos++] = v;
  }
  u16(v: number): void {
    this.#ensure(2);
    this.#view.setUint16(this.#pos, v, true);
    this.#pos += 2;
  }
  u32(v: number): void {
    this.#ensure(4);
    this.#view.setUint32(this.#pos, v >>> 0, true);
    this.#pos += 4;
  }
  u64(v: bigint): void {
    this.#ensure(8);
    this.#view.setBigUint64(this.#pos, v, true);
    this.#pos += 8;
  }
  bytes(b: Uint8Array): void {
    this.#ensure(b.length);
    this.#buf.set(b, this.#pos);
    this.#pos += b.length;
  }
  /** UTF-8 bytes of s, returning how many were written. */
  utf8(s: string): number {
    const n = s.length;
    this.#ensure(n * 3);
    // Names are almost always ASCII: copy char codes, fall back for the rest.
    const buf = this.#buf;
    const start = this.#pos;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c > 0x7f) {
        const { written } = UTF8.encodeInto(s, buf.subarray(start));
        this.#pos = start + written;
        return written;
      }
      buf[start + i] = c;
    }
    this.#pos = start + n;
    return n;
  }
  /** Appends n zero bytes and returns where they start; write them through `raw`. */
  zeros(n: number): number {
    this.#ensure(n);
    const at = this.#pos;
    this.#buf.fill(0, at, at + n);
    this.#pos += n;
    return at;
  }
  /** Makes room for n bytes at the position and returns it: write them through `raw`, then seek past them. */
  reserve(n: number): number {
    this.#ensure(n);
    return this.#pos;
  }
  /** Moves the position to `pos`, which must lie within what reserve() made room for. */
  seek(pos: number): void {
    if (pos > this.#buf.length) throw new RangeError('seek past the reserved bytes');
    this.#pos = pos;
  }
  /** The current backing array (replaced when the writer grows). */
  get raw(): Uint8Array {
    return this.#buf;
  }
  patchU8(at: number, v: number): void {
    this.#buf[at] = v;
  }
  patchU16(at: number, v: number): void {
    this.#view.setUint16(at, v, true);
  }
  patchU32(at: number, v: number): void {
    this.#view.setUint32(at, v >>> 0, true);
  }

  /**
   * The header of one attribute (id, type, length) with room for its value;
   * returns where the value goes in `raw` (valid until the next write).
   */
  attrHeader(id: number, type: number, len: number): number {
    this.#ensure(7 + len);
    const b = this.#buf;
    const p = this.#pos;
    b[p] = id & 0xff;
    b[p + 1] = id >>> 8;
    b[p + 2] = type;
    b[p + 3] = len & 0xff;
    b[p + 4] = (len >>> 8) & 0xff;
    b[p + 5] = (len >>> 16) & 0xff;
    b[p + 6] = len >>> 24;
    this.#pos = p + 7 + len;
    return p + 7;
  }

  /** One u32 attribute (negative numbers as their two's complement). */
  attrU32(id: number, v: number): void {
    const at = this.attrHeader(id, AT_U32, 4);
    const b = this.#buf;
    b[at] = v & 0xff;
    b[at + 1] = (v >>> 8) & 0xff;
    b[at + 2] = (v >>> 16) & 0xff;
    b[at + 3] = (v >>> 24) & 0xff;
  }

  attrU8(id: number, v: number): void {
    const at = this.attrHeader(id, AT_U8, 1); // may grow the buffer: take it after
    this.#buf[at] = v;
  }

  attrU64(id: number, v: bigint): void {
    const at = this.attrHeader(id, AT_U64, 8); // may grow the buffer: take the view after
    this.#view.setBigUint64(at, v, true);
  }

  attrBytes(id: number, v: Uint8Array): void {
    const at = this.attrHeader(id, AT_BYTES, v.length);
    const b = this.#buf;
    // Values are a few bytes: a loop beats TypedArray#set's call overhead.
    for (let i = 0; i < v.length; i++) b[at + i] = v[i]!;
  }

  attrStr(id: number, s: string): void {
    const lenAt = this.attrHeader(id, AT_STR, 0) - 4;
    this.patchU32(lenAt, this.utf8(s));
  }

  attrs(list: readonly Attr[]): void {
    this.u16(list.length);
    for (const a of list) this.attr(a);
  }

  attr(a: Attr): void {
    this.u16(a.id);
    this.u8(AT[a.type]);
    switch (a.type) {
      case 'u8':
        this.u32(1);
        this.u8(a.value as number);
        return;
      case 'u16':
        this.u32(2);
        this.u16(a.value as number);
        return;
      case 'u32':
        this.u32(4);
        this.u32(a.value as number);
        return;
      case 'u64':
        this.u32(8);
        this.u64(BigInt(a.value as number | bigint));
        return;
      case 'str': {
        const lenAt = this.#pos;
        this.u32(0);
        this.patchU32(lenAt, this.utf8(a.value as string));
        return;
      }
      case 'bytes': {
        const b = a.value as Uint8Array;
        this.u32(b.length);
        this.bytes(b);
        return;
      }
      case 'strArray': {
        const items = a.value as readonly string[];
        const lenAt = this.#pos;
        this.u32(0);
        const start = this.#pos;
        this.u16(items.length);
        for (const s of items) {
          const at = this.#pos;
          this.u16(0);
          this.patchU16(at, this.utf8(s));
        }
        this.patchU32(lenAt, this.#pos - start);
        return;
      }
      default:
        assertNever(a.type);
    }
  }

  finish(): Uint8Array {
    return this.#buf.subarray(0, this.#pos);
  }
}

/** Attributes as read back: raw bytes by id (strings keep no NUL, arrays are decoded). */
export type RawAttr = Uint8Array | string[];

/**
 * One record's attributes as the addon's listing gives them, by id. A record
 * has a few, and a listing hundreds of thousands of records: ids and values
 * alternate in one array looked up by a scan, not a hash table per record.
 */
export class RawAttrs {
  readonly #flat: (number | RawAttr)[];

  constructor(flat: (number | RawAttr)[] = []) {
    this.#flat = flat;
  }

  get(id: number): RawAttr | undefined {
    const f = this.#flat;
    for (let i = 0; i < f.length; i += 2) if (f[i] === id) return f[i + 1] as RawAttr;
    return undefined;
  }

  /** Each id with its value, in the record's order. */
  forEach(fn: (id: number, value: RawAttr) => void): void {
    const f = this.#flat;
    for (let i = 0; i < f.length; i += 2) fn(f[i] as number, f[i + 1] as RawAttr);
  }
}

export class ByteReader {
  readonly #buf: Uint8Array;
  readonly #view: DataView;
  /** The same bytes, to decode text from without copying them first. */
  readonly #chars: Buffer;
  #pos = 0;

  constructor(buf: Uint8Array) {
    // A plain view: a Buffer's slice() would alias instead of copying.
    this.#buf = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
    this.#view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    this.#chars = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
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
    return this.#chars.toString('utf8', start, start + n);
  }

  attrs(): RawAttrs {
    const n = this.u16();
    const flat: (number | RawAttr)[] = [];
    for (let i = 0; i < n; i++) {
      const id = this.u16();
      const type = this.u8();
      const len = this.u32();
      const b = this.bytes(len);
      if (type === AT.strArray) {
        const r = new ByteReader(b);
        const count = r.u16();
        const items: string[] = [];
        for (let k = 0; k < count; k++) items.push(r.text(r.u16()));
        flat.push(id, items);
      } else {
        flat.push(id, b);
      }
    }
    return new RawAttrs(flat);
  }
}

// Raw attribute values are libnftnl's host-order memory.
export const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export function rawU32(b: Uint8Array | string[] | undefined): number | undefined {
  if (!(b instanceof Uint8Array) || b.length < 4) return undefined;
  // By hand, not a DataView per value: a listing reads hundreds of thousands.
  return (LITTLE ? b[0]! | (b[1]! << 8) | (b[2]! << 16) | (b[3]! << 24) : (b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]!) >>> 0;
}
export function rawU8(b: Uint8Array | string[] | undefined): number | undefined {
  if (!(b instanceof Uint8Array) || b.length < 1) return undefined;
  return b[0];
}
export function rawU64(b: Uint8Array | string[] | undefined): bigint | undefined {
  if (!(b instanceof Uint8Array) || b.length < 8) return undefined;
  return new DataView(b.buffer, b.byteOffset, 8).getBigUint64(0, LITTLE);
}
export function rawStr(b: Uint8Array | string[] | undefined): string | undefined {
  if (!(b instanceof Uint8Array)) return undefined;
  const end = b.indexOf(0);
  return bufferOver(b.buffer).toString('utf8', b.byteOffset, b.byteOffset + (end < 0 ? b.length : end));
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

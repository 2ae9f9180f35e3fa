// Byte writer for the addon's batch encoding (native/libnftnl-glue/batch.h);
// listing-reader.ts reads what it returns. Integers are little-endian on the
// wire; the addon converts to host order.

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

  /** Starts over at position 0 in a fresh buffer of `capacity` bytes: the last one's finish() view stays as it was (a piece handed on). */
  restart(capacity: number): void {
    this.#pos = 0;
    this.#use(this.#allocate(capacity));
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

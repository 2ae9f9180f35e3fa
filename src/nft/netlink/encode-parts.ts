// Pieces of the batch encoder (encode.ts) and of its record writers (encode-elements.ts, encode-runs.ts).

import type { DataType, Family, NftMap, NftSet, WantedElements } from '../objects.ts';
import { AT, ELEM_ATTR, KIND, SET_ATTR, TYPE_BITS, TYPE_ID } from './kernel-constants.ts';
import { typeLength } from '../values.ts';
import type { Attr, ByteWriter } from './wire.ts';
import { writeKeyBytes } from './operands.ts';

/** An operation that cannot be encoded (unknown set, bad value...), found before sending. */
export class NftEncodeError extends Error {
  readonly code = 'ERR_NFT_ENCODE';
  readonly index: number;
  constructor(index: number, reason: string, options?: { cause?: unknown }) {
    super(`operation ${index}: ${reason}`, options);
    this.name = 'NftEncodeError';
    this.index = index;
  }
}

export type ContainerLookup = (family: Family, table: string, name: string) => NftSet | NftMap | undefined;

/** nft's comment TLV: type, length, NUL-terminated text. */
export function commentBytes(type: number, text: string): Uint8Array {
  const body = Buffer.from(`${text}\0`, 'utf8');
  const u = new Uint8Array(2 + body.length);
  u[0] = type;
  u[1] = body.length;
  u.set(body, 2);
  return u;
}

export function comment(type: number, text: string | undefined): Attr[] {
  if (text === undefined) return [];
  return [{ id: -1, type: 'bytes', value: commentBytes(type, text) }];
}

export function withId(list: Attr[], id: number): Attr[] {
  return list.map((a) => (a.id === -1 ? { ...a, id } : a));
}

export function le32(buf: Uint8Array, at: number, v: number): void {
  buf[at] = v & 0xff;
  buf[at + 1] = (v >>> 8) & 0xff;
  buf[at + 2] = (v >>> 16) & 0xff;
  buf[at + 3] = (v >>> 24) & 0xff;
}

export function padTo4(n: number): number {
  return (n + 3) & ~3;
}

/** Key length of a container: concatenations pad each part to 4 bytes. */
export function keyLength(keyType: readonly DataType[]): number {
  if (keyType.length === 1) return typeLength(keyType[0]!);
  return keyType.reduce((n, t) => n + padTo4(typeLength(t)), 0);
}

export function keyTypeId(keyType: readonly DataType[]): number {
  return keyType.reduce((id, t) => id * (1 << TYPE_BITS) + TYPE_ID[t], 0) >>> 0;
}

/** Data length and type id of a map's data (a concatenation is laid out as keys are). */
export function dataLength(dataType: DataType | readonly DataType[]): number {
  return Array.isArray(dataType) ? keyLength(dataType) : typeLength(dataType as DataType);
}

export function dataTypeId(dataType: DataType | readonly DataType[]): number {
  return Array.isArray(dataType) ? keyTypeId(dataType) : TYPE_ID[dataType as DataType];
}

/** What the element writer needs of the encoder. */
export interface RecordSink {
  readonly w: ByteWriter;
  container(family: Family, table: string, name: string): NftSet | NftMap | undefined;
  record(kind: number, msg: number, flags: number, family: Family, index: number, attrs: Attr[]): void;
}

/** Where each part of a map's data lies: one value unpadded, or a concatenation of 4-byte aligned parts (as dataBytes lays them out). */
export interface DataLayout {
  concat: boolean;
  types: readonly DataType[];
  offsets: number[];
  len: number;
}

export function dataLayout(type: DataType | readonly DataType[]): DataLayout {
  if (!Array.isArray(type)) return { concat: false, types: [type as DataType], offsets: [0], len: typeLength(type as DataType) };
  const types = type as readonly DataType[];
  return { concat: true, types, offsets: partOffsets(types), len: keyLength(types) };
}

/**
 * Writes the values `first`, `first + 1`, ... of element i of `run` at `at`,
 * laid out as `layout` says (a key's, a map's concatenated data; bytes
 * between parts left as they are, zero): a run's element as a commit writes
 * it (encode-runs.ts), or as adoption compares it with a listed one
 * (encoded-elements.ts). Throws on a value its type cannot hold.
 */
export function writeRunParts(buf: Uint8Array, at: number, layout: DataLayout, run: WantedElements, i: number, first: number): void {
  const { types, offsets } = layout;
  let last: string | number | undefined;
  for (let k = 0; k < types.length; k++) {
    const value = run.value(i, first + k);
    // A part that repeats the one before it in the same type (a hairpin's `ip . ip`) is parsed once.
    if (k > 0 && value === last && types[k] === types[k - 1]) buf.copyWithin(at + offsets[k]!, at + offsets[k - 1]!, at + offsets[k]!);
    else writeKeyBytes(buf, at + offsets[k]!, types[k]!, value);
    last = value;
  }
}

/**
 * An element's fixed part in one reservation: its operation's index, its
 * attribute count (0 until elementAttrCount sets it) and its key attribute's
 * header, the key's bytes zeroed. Returns where the key's bytes go; the
 * caller writes them and seeks past them.
 */
export function elementHead(w: ByteWriter, op: number, keyLen: number): number {
  const p = w.reserve(13 + keyLen);
  const buf = w.raw;
  le32(buf, p, op);
  buf[p + 4] = 0;
  buf[p + 5] = 0;
  buf[p + 6] = ELEM_ATTR.KEY;
  buf[p + 7] = 0;
  buf[p + 8] = AT.bytes;
  le32(buf, p + 9, keyLen);
  for (let z = 0; z < keyLen; z++) buf[p + 13 + z] = 0;
  return p + 13;
}

/** Sets the attribute count of the element whose key elementHead placed at `keyAt`. */
export function elementAttrCount(w: ByteWriter, keyAt: number, n: number): void {
  w.patchU16(keyAt - 9, n);
}

/** Starts a record of element operations on one set; returns where its element count goes, for the caller to patch. */
export function beginElementRecord(
  enc: RecordSink,
  msg: number,
  flags: number,
  family: Family,
  table: string,
  set: string,
  index: number,
): number {
  enc.record(KIND.elements, msg, flags, family, index, [
    { id: SET_ATTR.TABLE, type: 'str', value: table },
    { id: SET_ATTR.NAME, type: 'str', value: set },
  ]);
  const countAt = enc.w.position;
  enc.w.u32(0);
  return countAt;
}

/** Where each part of a concatenation starts: each padded to 4 bytes. */
export function partOffsets(types: readonly DataType[]): number[] {
  const offsets: number[] = [];
  for (let k = 0, offset = 0; k < types.length; k++) {
    offsets.push(offset);
    offset += padTo4(typeLength(types[k]!));
  }
  return offsets;
}

/**
 * A string attribute that often repeats the last one: its bytes are copied
 * from where they were last written (the writer only grows, so that stays valid).
 */
export class RepeatedString {
  #text: string | undefined;
  #at = 0;
  #len = 0;

  /** The writer moved to a fresh buffer: nothing written before is there. */
  forget(): void {
    this.#text = undefined;
  }

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

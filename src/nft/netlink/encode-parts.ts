// Pieces the batch encoder's record writers share (encode.ts, encode-elements.ts).

import type { DataType, Family, NftMap, NftSet } from '../objects.ts';
import { TYPE_BITS, TYPE_ID } from './kernel-constants.ts';
import { typeLength } from '../values.ts';
import type { Attr, ByteWriter } from './wire.ts';

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

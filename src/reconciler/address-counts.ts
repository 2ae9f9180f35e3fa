// Counts per endpoint address (the hairpin counts: how many ServicePorts want
// each address in `hairpin-endpoints`). A full render counts every endpoint
// address of the cluster, a million at 100k Services x 10 endpoints: in a Map
// of strings that took ~0.5 s of the render (hashing each new string, the
// table rehashed as it doubled). Canonical IPv4 addresses (as the one IP
// codec reads them strictly) are counted here by their 32-bit value in an
// open-addressing table of typed arrays, keeping the address's own string for
// iteration; anything else (IPv6) in a Map. Iteration order is the table's,
// not insertion order.

import { readIPv4 } from '../net/ip.ts';

const EMPTY_TABLE = 1 << 10;

const QUAD = new Uint8Array(4);

/** The 32-bit value of a canonical dotted quad (read strictly: no leading zeros), or -1. */
export function canonicalIPv4Value(s: string): number {
  if (readIPv4(s, 0, s.length, QUAD, 0, 'strict') !== undefined) return -1;
  return ((QUAD[0]! << 24) | (QUAD[1]! << 16) | (QUAD[2]! << 8) | QUAD[3]!) >>> 0;
}

/** Fibonacci hashing: the top bits of the product, `shift` being 32 less the table's log2 size. */
export function slotOf(value: number, shift: number): number {
  return Math.imul(value, 0x9e3779b1) >>> shift;
}

export class AddressCounts implements ReadonlyMap<string, number> {
  #values: Uint32Array;
  #counts: Uint32Array;
  /** The address at each slot; undefined where the slot is free. */
  #addresses: Array<string | undefined>;
  #shift: number;
  #used = 0;
  readonly #others = new Map<string, number>();

  /** `slots`: the table's first size, a power of two (small ones for tests, where entries collide and wrap around). */
  constructor(slots = EMPTY_TABLE) {
    if (!(slots >= 2 && (slots & (slots - 1)) === 0)) throw new RangeError('AddressCounts: slots must be a power of two from 2');
    this.#values = new Uint32Array(slots);
    this.#counts = new Uint32Array(slots);
    this.#addresses = new Array(slots).fill(undefined);
    this.#shift = 32 - Math.log2(slots);
  }

  get size(): number {
    return this.#used + this.#others.size;
  }

  get(address: string): number | undefined {
    const value = canonicalIPv4Value(address);
    if (value < 0) return this.#others.get(address);
    const slot = this.#find(value);
    return slot < 0 ? undefined : this.#counts[slot];
  }

  has(address: string): boolean {
    return this.get(address) !== undefined;
  }

  /** One more for `address`. */
  add(address: string): void {
    const value = canonicalIPv4Value(address);
    if (value < 0) {
      this.#others.set(address, (this.#others.get(address) ?? 0) + 1);
      return;
    }
    if ((this.#used + 1) * 2 > this.#values.length) this.#grow();
    const mask = this.#values.length - 1;
    for (let slot = slotOf(value, this.#shift); ; slot = (slot + 1) & mask) {
      if (this.#addresses[slot] === undefined) {
        this.#values[slot] = value;
        this.#counts[slot] = 1;
        this.#addresses[slot] = address;
        this.#used++;
        return;
      }
      if (this.#values[slot] === value) {
        this.#counts[slot]!++;
        return;
      }
    }
  }

  /** One fewer for `address`, forgotten at none. */
  remove(address: string): void {
    const value = canonicalIPv4Value(address);
    if (value < 0) {
      const n = this.#others.get(address) ?? 0;
      if (n > 1) this.#others.set(address, n - 1);
      else this.#others.delete(address);
      return;
    }
    const slot = this.#find(value);
    if (slot < 0) return;
    if (this.#counts[slot]! > 1) this.#counts[slot]!--;
    else this.#free(slot);
  }

  #find(value: number): number {
    const mask = this.#values.length - 1;
    for (let slot = slotOf(value, this.#shift); this.#addresses[slot] !== undefined; slot = (slot + 1) & mask) {
      if (this.#values[slot] === value) return slot;
    }
    return -1;
  }

  /** Frees a slot and moves back the entries after it that probed past it (linear probing keeps no tombstones). */
  #free(slot: number): void {
    const mask = this.#values.length - 1;
    let hole = slot;
    for (let next = (hole + 1) & mask; this.#addresses[next] !== undefined; next = (next + 1) & mask) {
      const home = slotOf(this.#values[next]!, this.#shift);
      // Whether `home` lies cyclically in (hole, next]: then the entry stays.
      const stays = hole <= next ? hole < home && home <= next : hole < home || home <= next;
      if (stays) continue;
      this.#values[hole] = this.#values[next]!;
      this.#counts[hole] = this.#counts[next]!;
      this.#addresses[hole] = this.#addresses[next];
      hole = next;
    }
    this.#addresses[hole] = undefined;
    this.#used--;
  }

  #grow(): void {
    const values = this.#values;
    const counts = this.#counts;
    const addresses = this.#addresses;
    const size = values.length * 2;
    this.#values = new Uint32Array(size);
    this.#counts = new Uint32Array(size);
    this.#addresses = new Array(size).fill(undefined);
    this.#shift--;
    const mask = size - 1;
    for (let i = 0; i < values.length; i++) {
      const address = addresses[i];
      if (address === undefined) continue;
      let slot = slotOf(values[i]!, this.#shift);
      while (this.#addresses[slot] !== undefined) slot = (slot + 1) & mask;
      this.#values[slot] = values[i]!;
      this.#counts[slot] = counts[i]!;
      this.#addresses[slot] = address;
    }
  }

  *entries(): MapIterator<[string, number]> {
    for (let i = 0; i < this.#addresses.length; i++) {
      const address = this.#addresses[i];
      if (address !== undefined) yield [address, this.#counts[i]!];
    }
    yield* this.#others;
  }

  /** keys() in a new array, without a generator's step per address (~5× quicker at 100k addresses). */
  keyList(): string[] {
    const out: string[] = [];
    const addresses = this.#addresses;
    for (let i = 0; i < addresses.length; i++) {
      const address = addresses[i];
      if (address !== undefined) out.push(address);
    }
    for (const address of this.#others.keys()) out.push(address);
    return out;
  }

  *keys(): MapIterator<string> {
    for (const address of this.#addresses) if (address !== undefined) yield address;
    yield* this.#others.keys();
  }

  *values(): MapIterator<number> {
    for (const [, n] of this.entries()) yield n;
  }

  [Symbol.iterator](): MapIterator<[string, number]> {
    return this.entries();
  }

  forEach(fn: (count: number, address: string, map: ReadonlyMap<string, number>) => void): void {
    for (const [address, n] of this.entries()) fn(n, address, this);
  }
}

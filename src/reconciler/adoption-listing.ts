// What an adoption reads back of our tables, and what it derives instead of
// reading (adopt.ts): the listing's options, and the hairpin set's elements
// from the endpoint maps.

import type { IPFamily } from '../k8s/types.ts';
import { formatIPv4, formatIPv6 } from '../net/ip.ts';
import type { TableListing } from '../nft/dataplane.ts';
import type { ListOptions } from '../nft/objects.ts';
import { writeValueBytes } from '../nft/values.ts';
import { canonicalIPv4Value, slotOf } from './address-counts.ts';
import { ENDPOINT_MAP_SHARDS, isEndpointMap, shardMapName } from './endpoint-slots.ts';
import { SET } from './names.ts';
import { addrType } from './statements.ts';

/**
 * Sets whose elements adoption does not read back: the hairpin set, an
 * element per endpoint address, a million at 100k Services x 10 endpoints.
 * The kernel dumps a set's elements by walking the set again for every 32 KiB
 * message it fills, quadratic, ~16 s for that one set. What it holds follows
 * from the endpoint maps, which are read anyway (derivedHairpinChanges says
 * why), so only the difference to what is wanted is committed; where the
 * tables may not hold all of a commit (a first start's stages, cut short
 * before its base chains), the set is flushed and refilled whole instead.
 */
export const DERIVED_ON_ADOPTION: readonly string[] = [SET.hairpinEndpoints];

/**
 * Sets whose elements adoption reads back encoded and compares by their bytes
 * (ListOptions.elementsEncodedOf): the shared endpoint maps, 512 of ~2,000
 * elements each at 100k Services x 10 endpoints, which the kernel dumps
 * quickly. Rewritten whole, as they were, they cost the kernel ~4 s of a
 * restart at that size (each element added to a map is checked against every
 * rule bound to it); decoded into elements, ~4 s of garbage.
 */
export const READ_ENCODED_ON_ADOPTION: readonly string[] = Array.from({ length: ENDPOINT_MAP_SHARDS }, (_, shard) => shardMapName(shard));

/** How an adoption lists our tables: the sets above derived or read encoded, rules decoded a chain at a time. */
export const ADOPTION_LIST_OPTIONS: ListOptions = {
  skipElementsOf: DERIVED_ON_ADOPTION,
  elementsEncodedOf: READ_ENCODED_ON_ADOPTION,
  rulesOnDemand: true,
};

/**
 * The hairpin addresses to add to a listed table's hairpin set (wanted, and not
 * in its endpoint maps) and to delete from it (in its maps, and not wanted),
 * without reading the set: every commit writes a map-shaped port's slots and
 * their distinct addresses, its hairpin addresses, together
 * (service-rules.ts), so the set holds what the maps hold.
 */
export function derivedHairpinChanges(
  listing: TableListing,
  family: IPFamily,
  wanted: readonly string[],
): { add: string[]; remove: string[] } {
  const listed = new ListedEndpointAddresses(family);
  const held = listing.encodedElements;
  const decoded = new Set<string>();
  for (const c of listing.sets) {
    if (!isEndpointMap(c)) continue;
    if (held?.holds(c.name)) held.forEachData(c.name, (bytes, at) => listed.addBytes(bytes, at));
    else decoded.add(c.name);
  }
  for (const e of listing.elements) if (decoded.has(e.set) && Array.isArray(e.value)) listed.addText(e.value[0]!);
  return { add: wanted.filter((ip) => !listed.take(ip)), remove: listed.untaken() };
}

const FREE = 0;
const LISTED = 1;
const TAKEN = 2;

/**
 * The endpoint addresses a listed table's endpoint maps hold, by their bytes.
 * At 100k Services x 10 endpoints the maps hold a million slots: kept in an
 * open-addressing table of typed arrays, one 32-bit word an IPv4 address and
 * four an IPv6 one, no string made but for those reported unwanted (a million
 * IPv6 addresses kept as text in a Map took 3.1-3.9 s to derive the set from,
 * 0.75-1.3 s so). A wanted address is read into bytes too, so that any text of
 * it finds it.
 */
class ListedEndpointAddresses {
  readonly #type: 'ipv4_addr' | 'ipv6_addr';
  readonly #words: 1 | 4;
  /** #words words an entry. */
  #keys: Uint32Array;
  /** At each slot: FREE, LISTED, or TAKEN (listed, and found by take()). */
  #state = new Uint8Array(1024);
  #shift = 32 - 10;
  #used = 0;
  /** The address at hand, in words. */
  readonly #key = new Uint32Array(4);
  readonly #bytes = new Uint8Array(16);

  constructor(family: IPFamily) {
    this.#type = addrType(family);
    this.#words = family === 'IPv4' ? 1 : 4;
    this.#keys = new Uint32Array(this.#state.length * this.#words);
  }

  /** An address as a map's element holds it: 4 or 16 bytes (as the family's) at `at` of `bytes`. */
  addBytes(bytes: Uint8Array, at: number): void {
    // Grown first: growing moves every key through #key.
    if ((this.#used + 1) * 2 > this.#state.length) this.#grow();
    const slot = this.#slot(this.#read(bytes, at));
    if (this.#state[slot] !== FREE) return;
    this.#place(slot, LISTED);
    this.#used++;
  }

  /** An address as a decoded element gives it. */
  addText(ip: string): void {
    writeValueBytes(this.#bytes, 0, this.#type, ip);
    this.addBytes(this.#bytes, 0);
  }

  /** Whether the maps hold `ip` (a wanted hairpin address); marks it found. */
  take(ip: string): boolean {
    // An IPv4 address's value straight from its text (canonical, as the model's are), else through its bytes.
    let first = this.#words === 1 ? canonicalIPv4Value(ip) : -1;
    if (first >= 0) this.#key[0] = first;
    else {
      writeValueBytes(this.#bytes, 0, this.#type, ip);
      first = this.#read(this.#bytes, 0);
    }
    const slot = this.#slot(first);
    if (this.#state[slot] === FREE) return false;
    this.#state[slot] = TAKEN;
    return true;
  }

  /** The addresses take() did not find, as texts. */
  untaken(): string[] {
    const out: string[] = [];
    const words = this.#words;
    const b = this.#bytes;
    for (let slot = 0; slot < this.#state.length; slot++) {
      if (this.#state[slot] !== LISTED) continue;
      for (let k = 0; k < words; k++) {
        const w = this.#keys[slot * words + k]!;
        b[4 * k] = w >>> 24;
        b[4 * k + 1] = (w >>> 16) & 0xff;
        b[4 * k + 2] = (w >>> 8) & 0xff;
        b[4 * k + 3] = w & 0xff;
      }
      out.push(words === 1 ? formatIPv4(b) : formatIPv6(b));
    }
    return out;
  }

  /** Reads the address at `at` of `bytes` into #key; returns its first word. */
  #read(bytes: Uint8Array, at: number): number {
    const key = this.#key;
    for (let k = 0; k < this.#words; k++, at += 4)
      key[k] = ((bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!) >>> 0;
    return key[0]!;
  }

  /**
   * Where #key is, or the free slot where it would go: linear probing from
   * AddressCounts' hash, of an IPv4 address's value (`first`, its one word),
   * of an IPv6 address's four words mixed.
   */
  #slot(first: number): number {
    const keys = this.#keys;
    const state = this.#state;
    const mask = state.length - 1;
    if (this.#words === 1) {
      let slot = slotOf(first, this.#shift);
      while (state[slot] !== FREE && keys[slot] !== first) slot = (slot + 1) & mask;
      return slot;
    }
    const key = this.#key;
    const h = Math.imul(Math.imul(Math.imul(first ^ (first >>> 15), 0x85ebca6b) ^ key[1]!, 0x85ebca6b) ^ key[2]!, 0x85ebca6b) ^ key[3]!;
    let slot = slotOf(h, this.#shift);
    for (; state[slot] !== FREE; slot = (slot + 1) & mask) {
      const at = slot * 4;
      if (keys[at] === first && keys[at + 1] === key[1] && keys[at + 2] === key[2] && keys[at + 3] === key[3]) break;
    }
    return slot;
  }

  /** Writes #key at `slot`, in `state`. */
  #place(slot: number, state: number): void {
    for (let k = 0; k < this.#words; k++) this.#keys[slot * this.#words + k] = this.#key[k]!;
    this.#state[slot] = state;
  }

  #grow(): void {
    const words = this.#words;
    const keys = this.#keys;
    const state = this.#state;
    this.#state = new Uint8Array(state.length * 2);
    this.#keys = new Uint32Array(this.#state.length * words);
    this.#shift--;
    for (let slot = 0; slot < state.length; slot++) {
      if (state[slot] === FREE) continue;
      for (let k = 0; k < words; k++) this.#key[k] = keys[slot * words + k]!;
      this.#place(this.#slot(this.#key[0]!), state[slot]!);
    }
  }
}

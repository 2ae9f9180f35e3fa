// What an adoption reads back of our tables, and what it derives instead of
// reading (adopt.ts): the listing's options, and the hairpin set's elements
// from the endpoint maps.

import type { IPFamily } from '../k8s/types.ts';
import { formatIPv4, formatIPv6 } from '../net/ip.ts';
import type { TableListing } from '../nft/dataplane.ts';
import type { ListOptions } from '../nft/objects.ts';
import { valueBytes } from '../nft/values.ts';
import { canonicalIPv4Value, slotOf } from './address-counts.ts';
import { ENDPOINT_MAP_SHARDS, isEndpointMap, shardMapName } from './endpoint-slots.ts';
import { SET } from './names.ts';

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
  const listed = new ListedEndpointAddresses();
  const width = family === 'IPv4' ? 4 : 16;
  const held = listing.encodedElements;
  const decoded = new Set<string>();
  for (const c of listing.sets) {
    if (!isEndpointMap(c)) continue;
    if (held?.holds(c.name)) held.forEachData(c.name, (bytes, at) => listed.addBytes(bytes, at, width));
    else decoded.add(c.name);
  }
  for (const e of listing.elements) if (decoded.has(e.set) && Array.isArray(e.value)) listed.addText(e.value[0]!);
  return { add: wanted.filter((ip) => !listed.take(ip)), remove: listed.untaken() };
}

const FREE = 0;
const LISTED = 1;
const TAKEN = 2;

/**
 * The endpoint addresses a listed table's endpoint maps hold. At 100k Services
 * x 10 endpoints the maps hold a million slots: IPv4 addresses are kept by
 * their 32-bit values in an open-addressing table of typed arrays (as
 * AddressCounts keeps the wanted ones), IPv6 ones (rarer) by their text.
 */
class ListedEndpointAddresses {
  #values = new Uint32Array(1024);
  /** At each slot: FREE, LISTED, or TAKEN (listed, and found by take()). */
  #state = new Uint8Array(1024);
  #shift = 32 - 10;
  #used = 0;
  /** IPv6 addresses by canonical text: whether take() found them. */
  readonly #v6 = new Map<string, boolean>();

  /** An address as a map's element holds it: 4 or 16 bytes at `at` of `bytes`. */
  addBytes(bytes: Uint8Array, at: number, length: 4 | 16): void {
    if (length === 16) {
      this.#v6.set(formatIPv6(bytes.subarray(at, at + 16)), false);
      return;
    }
    const value = ((bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!) >>> 0;
    if ((this.#used + 1) * 2 > this.#values.length) this.#grow();
    const slot = this.#slot(value);
    if (this.#state[slot] !== FREE) return;
    this.#values[slot] = value;
    this.#state[slot] = LISTED;
    this.#used++;
  }

  /** An address as a decoded element gives it (canonical text, as the listing formats it). */
  addText(ip: string): void {
    if (ip.includes(':')) this.addBytes(valueBytes('ipv6_addr', ip), 0, 16);
    else this.addBytes(valueBytes('ipv4_addr', ip), 0, 4);
  }

  /** Whether the maps hold `ip` (a wanted hairpin address); marks it found. */
  take(ip: string): boolean {
    if (ip.includes(':')) {
      // The model's addresses are canonical, as the listed ones: only one not found is read to be sure.
      let text = ip;
      let found = this.#v6.get(text);
      if (found === undefined) {
        text = formatIPv6(valueBytes('ipv6_addr', ip));
        if (text !== ip) found = this.#v6.get(text);
        if (found === undefined) return false;
      }
      if (!found) this.#v6.set(text, true);
      return true;
    }
    let value = canonicalIPv4Value(ip);
    if (value < 0) value = canonicalIPv4Value(formatIPv4(valueBytes('ipv4_addr', ip)));
    const slot = this.#slot(value);
    if (this.#state[slot] === FREE) return false;
    this.#state[slot] = TAKEN;
    return true;
  }

  /** The addresses take() did not find, as texts. */
  untaken(): string[] {
    const out: string[] = [];
    const quad = new Uint8Array(4);
    for (let i = 0; i < this.#state.length; i++) {
      if (this.#state[i] !== LISTED) continue;
      const v = this.#values[i]!;
      quad[0] = v >>> 24;
      quad[1] = (v >>> 16) & 0xff;
      quad[2] = (v >>> 8) & 0xff;
      quad[3] = v & 0xff;
      out.push(formatIPv4(quad));
    }
    for (const [ip, found] of this.#v6) if (!found) out.push(ip);
    return out;
  }

  /** Where `value` is, or the free slot where it would go (linear probing from AddressCounts' hash). */
  #slot(value: number): number {
    const mask = this.#values.length - 1;
    let slot = slotOf(value, this.#shift);
    while (this.#state[slot] !== FREE && this.#values[slot] !== value) slot = (slot + 1) & mask;
    return slot;
  }

  #grow(): void {
    const values = this.#values;
    const state = this.#state;
    this.#values = new Uint32Array(values.length * 2);
    this.#state = new Uint8Array(values.length * 2);
    this.#shift--;
    for (let i = 0; i < values.length; i++) {
      if (state[i] === FREE) continue;
      const slot = this.#slot(values[i]!);
      this.#values[slot] = values[i]!;
      this.#state[slot] = state[i]!;
    }
  }
}

// What an adoption reads back of our tables, and what it derives instead of
// reading (adopt.ts): the listing's options, and the hairpin set's elements
// from the endpoint maps.

import type { IPFamily } from '../k8s/types.ts';
import { formatIPv4, formatIPv6 } from '../net/ip.ts';
import type { TableListing } from '../nft/dataplane.ts';
import type { ListOptions } from '../nft/objects.ts';
import { valueBytes } from '../nft/values.ts';
import { canonicalIPv4Value } from './address-counts.ts';
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

/**
 * The endpoint addresses a listed table's endpoint maps hold. At 100k Services
 * x 10 endpoints the maps hold a million slots: IPv4 addresses are kept as
 * 32-bit values in a typed array, sorted and made distinct once, and looked up
 * by halving; IPv6 ones (rarer) by their text.
 */
class ListedEndpointAddresses {
  #v4 = new Uint32Array(1024);
  #v4Count = 0;
  /** Set once the IPv4 values are sorted and distinct: which of them take() found. */
  #v4Taken: Uint8Array | undefined;
  /** IPv6 addresses by canonical text: whether take() found them. */
  readonly #v6 = new Map<string, boolean>();

  /** An address as a map's element holds it: 4 or 16 bytes at `at` of `bytes`. */
  addBytes(bytes: Uint8Array, at: number, length: 4 | 16): void {
    if (this.#v4Taken) throw new Error('ListedEndpointAddresses: addresses added after the first take()');
    if (length === 16) {
      this.#v6.set(formatIPv6(bytes.subarray(at, at + 16)), false);
      return;
    }
    if (this.#v4Count === this.#v4.length) {
      const grown = new Uint32Array(this.#v4.length * 2);
      grown.set(this.#v4);
      this.#v4 = grown;
    }
    this.#v4[this.#v4Count++] = ((bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!) >>> 0;
  }

  /** An address as a decoded element gives it (canonical text, as the listing formats it). */
  addText(ip: string): void {
    if (ip.includes(':')) this.addBytes(valueBytes('ipv6_addr', ip), 0, 16);
    else this.addBytes(valueBytes('ipv4_addr', ip), 0, 4);
  }

  /** Whether the maps hold `ip` (a wanted hairpin address); marks it found. */
  take(ip: string): boolean {
    const taken = this.#seal();
    if (ip.includes(':')) {
      const text = formatIPv6(valueBytes('ipv6_addr', ip));
      const found = this.#v6.get(text);
      if (found === undefined) return false;
      if (!found) this.#v6.set(text, true);
      return true;
    }
    let value = canonicalIPv4Value(ip);
    if (value < 0) value = canonicalIPv4Value(formatIPv4(valueBytes('ipv4_addr', ip)));
    const v4 = this.#v4;
    let lo = 0;
    let hi = this.#v4Count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (v4[mid]! < value) lo = mid + 1;
      else hi = mid;
    }
    if (lo === this.#v4Count || v4[lo] !== value) return false;
    taken[lo] = 1;
    return true;
  }

  /** The addresses take() did not find, as texts. */
  untaken(): string[] {
    const taken = this.#seal();
    const out: string[] = [];
    const quad = new Uint8Array(4);
    for (let i = 0; i < this.#v4Count; i++) {
      if (taken[i] === 1) continue;
      const v = this.#v4[i]!;
      quad[0] = v >>> 24;
      quad[1] = (v >>> 16) & 0xff;
      quad[2] = (v >>> 8) & 0xff;
      quad[3] = v & 0xff;
      out.push(formatIPv4(quad));
    }
    for (const [ip, found] of this.#v6) if (!found) out.push(ip);
    return out;
  }

  /** Sorts the IPv4 values and drops repeats (an address serves several ports), once. */
  #seal(): Uint8Array {
    if (this.#v4Taken) return this.#v4Taken;
    const v4 = this.#v4.subarray(0, this.#v4Count).sort();
    let n = 0;
    for (let i = 0; i < v4.length; i++) if (n === 0 || v4[i] !== v4[n - 1]) v4[n++] = v4[i]!;
    this.#v4Count = n;
    this.#v4Taken = new Uint8Array(n);
    return this.#v4Taken;
  }
}

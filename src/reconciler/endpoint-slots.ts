// Where a policy chain's endpoints live in its family's shared endpoint map
// (endpoint shape 'map').
//
// The maps of a family, `service-endpoints-<shard>`, are keyed by a slot
// number: a policy chain with N endpoints DNATs through `numgen random mod N
// offset K`, and its elements are `K+i : ip . port`. Named sets are what the
// kernel is slow to create in numbers (each rule's lookup finds its set by
// walking the table's list of sets), so 10k ports share a few hundred maps
// instead of owning one each. Not one map either: every element added to a map
// is checked against every rule bound to it, so one map for 10k rules x 100k
// elements cost 29 s at a cold sync; a region's map is its start block modulo
// ENDPOINT_MAP_SHARDS, which divides that by the shard count. A shard's map
// exists while some region starts in it.
//
// Placement is canonical — a pure function of the current ServicePorts — so a
// full render equals what any run of incremental renders yields:
// - a region starts at block hash(label) mod blocks (16 slots a block) and
//   spans ceil(N/16) blocks. K does not depend on N: a change of N changes the
//   rule's modulus and the elements, never where the region is;
// - a region that shares a block with any other region of the family (another
//   port's, or the other policy chain of the same port) is not placed: every
//   overlapping region falls back to a private per-port map (keys 0..N-1). With
//   2^26 blocks, 10k ports expect well under one collision. A private region
//   still claims its blocks, so the rule stays symmetric.
// The block index is derived from the previous ruleset's (OverlayMap): an
// incremental render updates it for the ports that changed, then re-renders
// the ports whose collision status flipped.

import type { IPFamily } from '../k8s/types.ts';
import { type DataType, type NftMap, type NftSet, sameTypes } from '../nft/objects.ts';
import { fnv1a32, mix } from './names.ts';
import { OverlayMap } from './overlay-map.ts';
import { addrType } from './statements.ts';

export const SLOTS_PER_BLOCK = 16;
/**
 * Blocks in a map: K = 16·block stays below 2^30, so that the slot numbers
 * (and nft 1.0.6's JSON, which prints offsets of 2^31 and more as negative
 * numbers) stay clear of the sign bit.
 */
export const DEFAULT_ENDPOINT_MAP_BLOCKS = 2 ** 26;
/**
 * Maps per family the slot ranges are spread over. Cold-sync kernel cost is
 * about elements x rules / shards x 26 ns (element checks) plus rules x shards
 * x ~5 ns (finding a set by name): 512 keeps both well under 100 ms at 10k
 * services x 10 endpoints.
 */
export const ENDPOINT_MAP_SHARDS = 512;

/** An endpoint map's types, a shard's or a policy chain's own: a slot number to its endpoint's address and port. */
export function endpointMapTypes(family: IPFamily): { keyType: DataType[]; dataType: DataType[] } {
  return { keyType: ['integer'], dataType: [addrType(family), 'inet_service'] };
}

/** Whether a listed container is an endpoint map (a shard or a policy chain's own): of endpointMapTypes. */
export function isEndpointMap(c: NftSet | NftMap): boolean {
  if (c.kind !== 'map' || !Array.isArray(c.dataType)) return false;
  const want = endpointMapTypes(c.family === 'ip6' ? 'IPv6' : 'IPv4');
  return sameTypes(c.keyType, want.keyType) && sameTypes(c.dataType as readonly DataType[], want.dataType);
}

export function shardOf(r: EndpointRegion): number {
  return r.block % ENDPOINT_MAP_SHARDS;
}

export function shardMapName(shard: number): string {
  return `${SHARD_MAP_PREFIX}${shard}`;
}
export const SHARD_MAP_PREFIX = 'service-endpoints-';

/** The slot range a policy chain wants in the shared map. */
export interface EndpointRegion {
  /** The chain's private map name, which is also its identity in the shared map. */
  readonly label: string;
  /** First block; the region's first slot is SLOTS_PER_BLOCK · block. */
  readonly block: number;
  /** Blocks spanned: ceil(N / SLOTS_PER_BLOCK). */
  readonly blocks: number;
}

/** 32-bit FNV-1a with a final avalanche, so that labels differing in one character land far apart. */
export function hash32(text: string): number {
  return mix(fnv1a32(text));
}

export function endpointRegion(label: string, endpoints: number, mapBlocks: number): EndpointRegion {
  return { label, block: hash32(label) % mapBlocks, blocks: Math.max(1, Math.ceil(endpoints / SLOTS_PER_BLOCK)) };
}

export function regionOffset(r: EndpointRegion): number {
  return r.block * SLOTS_PER_BLOCK;
}

/** A region in the index, with the ServicePort it belongs to. */
interface Claim {
  readonly owner: string;
  readonly region: EndpointRegion;
}

/** Blocks to the regions that claim them, for one family. */
type BlockIndex = OverlayMap<number, readonly Claim[]>;

/** One family's block index, and how many regions start in each shard. */
export interface FamilySlots {
  readonly blocks: BlockIndex;
  readonly shards: OverlayMap<number, number>;
}

/** Every family's block index, derived from the previous ruleset's without changing it. */
export class EndpointSlots {
  readonly #families = new Map<IPFamily, FamilySlots>();
  /**
   * Owners of regions whose blocks gained or lost a claim since construction, and owners added onto a claimed block: their status may have
   * flipped.
   */
  readonly #touched = new Set<string>();

  constructor(from?: ReadonlyMap<IPFamily, FamilySlots>) {
    for (const [f, slots] of from ?? [])
      this.#families.set(f, { blocks: new OverlayMap(slots.blocks), shards: new OverlayMap(slots.shards) });
  }

  get families(): ReadonlyMap<IPFamily, FamilySlots> {
    return this.#families;
  }

  #slots(family: IPFamily): FamilySlots {
    let slots = this.#families.get(family);
    if (!slots) {
      slots = { blocks: new OverlayMap(), shards: new OverlayMap() };
      this.#families.set(family, slots);
    }
    return slots;
  }

  add(family: IPFamily, owner: string, regions: readonly EndpointRegion[]): void {
    const { blocks: index, shards } = this.#slots(family);
    for (const region of regions) {
      const claim: Claim = { owner, region };
      shards.set(shardOf(region), (shards.get(shardOf(region)) ?? 0) + 1);
      for (let b = region.block; b < region.block + region.blocks; b++) {
        const list = index.get(b);
        if (list) {
          for (const c of list) this.#touched.add(c.owner);
          this.#touched.add(owner);
        }
        index.set(b, list ? [...list, claim] : [claim]);
      }
    }
  }

  remove(family: IPFamily, owner: string, regions: readonly EndpointRegion[]): void {
    const { blocks: index, shards } = this.#slots(family);
    for (const region of regions) {
      const left = (shards.get(shardOf(region)) ?? 0) - 1;
      if (left > 0) shards.set(shardOf(region), left);
      else shards.delete(shardOf(region));
      for (let b = region.block; b < region.block + region.blocks; b++) {
        const list = index.get(b);
        if (!list) continue;
        const rest = list.filter((c) => !(c.owner === owner && c.region.label === region.label));
        for (const c of rest) this.#touched.add(c.owner);
        if (rest.length === 0) index.delete(b);
        else index.set(b, rest);
      }
    }
  }

  /** ServicePorts whose regions share or shared a block with a region added or removed, the added ones among them included. */
  get touched(): ReadonlySet<string> {
    return this.#touched;
  }

  /** Shards some region of the family starts in, ascending: their maps must exist. */
  usedShards(family: IPFamily): number[] {
    const shards = this.#families.get(family)?.shards;
    return shards ? [...shards.keys()].sort((a, b) => a - b) : [];
  }

  /** The labels among `regions` that must fall back to a private map: they share a block with another region. */
  privateLabels(family: IPFamily, regions: readonly EndpointRegion[]): ReadonlySet<string> {
    const index = this.#families.get(family)?.blocks;
    let out: Set<string> | undefined;
    for (const region of regions) {
      for (let b = region.block; b < region.block + region.blocks; b++) {
        if ((index?.get(b)?.length ?? 0) > 1) {
          out ??= new Set();
          out.add(region.label);
          break;
        }
      }
    }
    return out ?? NO_LABELS;
  }
}

/** No private labels: every policy chain in the shared map. */
export const NO_LABELS: ReadonlySet<string> = new Set();

export function sameLabels(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}

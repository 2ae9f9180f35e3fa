// Which ServicePort an operation belongs to, so that a transaction the kernel
// refuses can be traced to the port whose rules it refused. Pure.
//
// Only needed after a refused commit: the index is built then, by walking the
// rulesets' fragments once (10k ports: a few ms), never on the hot path.

import type { IPFamily } from '../k8s/types.ts';
import type { Family, Operation } from '../nft/objects.ts';
import { skeletonFamily, skeletonOwner } from './element-claims.ts';
import { SHARD_MAP_PREFIX, SLOTS_PER_BLOCK } from './endpoint-slots.ts';
import { claimKey } from './fragment.ts';
import { SET } from './names.ts';
import type { Ruleset } from './ruleset.ts';
import { tableFamily } from './statements.ts';

/** Maps `family table name` of chains and sets, and element keys, to their owner. */
export class OperationOwners {
  readonly #containers = new Map<string, string>();
  /** `family ip` of hairpin elements to a port that wants it. */
  readonly #hairpin = new Map<string, string>();
  readonly #rulesets: readonly Ruleset[];

  constructor(rulesets: ReadonlyArray<Ruleset | undefined>) {
    this.#rulesets = rulesets.filter((r): r is Ruleset => r !== undefined);
    // The first owner found wins: the desired ruleset's, then the applied one's.
    const first = (map: Map<string, string>, key: string, owner: string): void => {
      if (!map.has(key)) map.set(key, owner);
    };
    for (const r of this.#rulesets) {
      // The skeleton's objects are owned as claims name them: no ServicePort.
      for (const [family, s] of r.skeletons) {
        for (const c of s.chains) first(this.#containers, containerKey(c.chain.family, c.chain.table, c.chain.name), skeletonOwner(family));
        for (const set of s.sets) first(this.#containers, containerKey(set.family, set.table, set.name), skeletonOwner(family));
      }
      for (const [id, sp] of r.services) {
        const f = sp.fragment;
        for (const ip of f.hairpin ?? []) first(this.#hairpin, hairpinKey(tableFamily(sp.port.family), ip), id);
        for (const c of f.chains) first(this.#containers, containerKey(c.chain.family, c.chain.table, c.chain.name), id);
        for (const set of f.sets) first(this.#containers, containerKey(set.family, set.table, set.name), id);
      }
    }
  }

  #slotOwner(family: Family, slot: number): string | undefined {
    const f: IPFamily = family === 'ip6' ? 'IPv6' : 'IPv4';
    for (const r of this.#rulesets) {
      const claims = r.endpointSlots.get(f)?.blocks.get(Math.floor(slot / SLOTS_PER_BLOCK));
      if (claims?.length === 1) return claims[0]!.owner;
    }
    return undefined;
  }

  /** The ServicePort id, or undefined for the skeleton's objects, tables and anything unknown. */
  servicePortOf(op: Operation): string | undefined {
    const o = op.object;
    let owner: string | undefined;
    switch (o.kind) {
      case 'chain':
        owner = this.#containers.get(containerKey(o.family, o.table, o.name));
        break;
      case 'rule':
        owner = this.#containers.get(containerKey(o.family, o.table, o.chain));
        break;
      case 'set':
      case 'map':
        owner = this.#containers.get(containerKey(o.family, o.table, o.name));
        break;
      case 'element': {
        // An element of a shared set belongs to whoever claimed it, a slot of a
        // shared endpoint map to the port whose range holds it, a hairpin
        // element to a port that wants it (the first found); one of a port's
        // own map to that port.
        const key = claimKey(o);
        for (const r of this.#rulesets) {
          owner = r.claims.get(key);
          if (owner !== undefined) break;
        }
        if (o.set === SET.hairpinEndpoints) owner ??= this.#hairpin.get(hairpinKey(o.family, o.key[0]!));
        else if (o.set.startsWith(SHARD_MAP_PREFIX)) owner ??= this.#slotOwner(o.family, Number(o.key[0]));
        owner ??= this.#containers.get(containerKey(o.family, o.table, o.set));
        break;
      }
      default:
        return undefined;
    }
    return owner === undefined || skeletonFamily(owner) !== undefined ? undefined : owner;
  }
}

function containerKey(family: string, table: string, name: string): string {
  return `${family} ${table} ${name}`;
}

function hairpinKey(family: string, ip: string): string {
  return `${family} ${ip}`;
}

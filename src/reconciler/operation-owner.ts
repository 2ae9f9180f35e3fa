// Which ServicePort an operation belongs to, so that a transaction the kernel
// refuses can be traced to the port whose rules it refused. Pure.
//
// Only needed after a refused commit: the index is built then, by walking the
// rulesets' fragments once (10k ports: a few ms), never on the hot path.

import { objectKey, type Operation } from '../nft/objects.ts';
import type { Ruleset } from './ruleset.ts';

const SKELETON = 'skeleton';

/** Maps `family table name` of chains and sets, and element keys, to their owner. */
export class OperationOwners {
  readonly #containers = new Map<string, string>();
  readonly #rulesets: readonly Ruleset[];

  constructor(rulesets: ReadonlyArray<Ruleset | undefined>) {
    this.#rulesets = rulesets.filter((r): r is Ruleset => r !== undefined);
    for (const r of this.#rulesets) {
      for (const s of r.skeletons.values()) {
        for (const c of s.chains) this.#containers.set(containerKey(c.chain.family, c.chain.table, c.chain.name), SKELETON);
        for (const set of s.sets) this.#containers.set(containerKey(set.family, set.table, set.name), SKELETON);
      }
      for (const [id, sp] of r.services) {
        const f = sp.fragment;
        for (const c of f.chains) if (!this.#containers.has(containerKey(c.chain.family, c.chain.table, c.chain.name))) this.#containers.set(containerKey(c.chain.family, c.chain.table, c.chain.name), id);
        for (const set of f.sets) if (!this.#containers.has(containerKey(set.family, set.table, set.name))) this.#containers.set(containerKey(set.family, set.table, set.name), id);
      }
    }
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
        // An element of a shared map belongs to whoever claimed it; one of a
        // port's own set to that port.
        const key = objectKey(o);
        for (const r of this.#rulesets) {
          const claim = r.elements.get(key);
          if (claim) {
            owner = claim.owner;
            break;
          }
        }
        owner ??= this.#containers.get(containerKey(o.family, o.table, o.set));
        break;
      }
      default:
        return undefined;
    }
    return owner === undefined || owner === SKELETON || owner.startsWith(`${SKELETON}:`) ? undefined : owner;
  }
}

function containerKey(family: string, table: string, name: string): string {
  return `${family} ${table} ${name}`;
}

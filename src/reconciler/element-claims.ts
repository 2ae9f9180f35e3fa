// Which fragment's element is in the ruleset, when several may want the same.
//
// Three kinds of elements, kept three ways (at 10k services x 10 endpoints in
// the 'map' endpoint shape there are ~100k endpoint-map slots and ~100k hairpin
// elements against ~20k of the others; a claim for every one of them kept
// ~100 MiB of heap):
// - claimed (Fragment.elements): a ClusterIP in `cluster-ips` (every port of a
//   service wants it), an externalIP:port two services may both want with
//   different verdicts. Of several claims, the skeleton's, then the lowest
//   ServicePort id's, wins; the others are reported as conflicts.
// - own (Fragment.ownElements): endpoint-map slots, unique by placement, and a
//   port's private maps' elements. Nothing to resolve: they are diffed with
//   their fragment, which re-renders on demand, and nothing is kept.
// - hairpin (Fragment.hairpin): `ip . ip` is the same element whoever wants
//   it, so a count of wanting ports per address is all that is needed.
// Claims and counts are derived from the previous ruleset's (OverlayMap), so an
// incremental render costs the change.

import type { IPFamily } from '../k8s/types.ts';
import { type Element, objectKey } from '../nft/objects.ts';
import type { Fragment } from './fragment.ts';
import { SET } from './names.ts';
import { OverlayMap } from './overlay-map.ts';
import { tableFamily } from './statements.ts';

export interface ElementClaim {
  /** The fragment that wants it: a ServicePort id, or `skeleton:<family>`. */
  owner: string;
  element: Element;
}

const rank = (owner: string): string => (owner.startsWith('skeleton:') ? `\0${owner}` : owner);

/** Element claims, copied from the previous ruleset's and patched for what changed. */
export class Claims {
  readonly elements: OverlayMap<string, ElementClaim>;
  readonly contested: Map<string, readonly ElementClaim[]>;
  constructor(prev?: ReadonlyMap<string, ElementClaim>, contested?: ReadonlyMap<string, readonly ElementClaim[]>) {
    if (prev instanceof OverlayMap) this.elements = new OverlayMap(prev);
    else {
      this.elements = new OverlayMap();
      for (const [k, c] of prev ?? []) this.elements.set(k, c);
    }
    this.contested = new Map(contested);
  }

  add(owner: string, fragment: Fragment): void {
    for (const element of fragment.elements) {
      const key = objectKey(element);
      const cur = this.elements.get(key);
      if (!cur) {
        this.elements.set(key, { owner, element });
        continue;
      }
      const list = this.contested.get(key) ?? [cur];
      if (list.some((c) => c.owner === owner)) continue;
      const next = [...list, { owner, element }].sort((a, b) => (rank(a.owner) < rank(b.owner) ? -1 : 1));
      this.contested.set(key, next);
      this.elements.set(key, next[0]!);
    }
  }

  remove(owner: string, fragment: Fragment): void {
    for (const element of fragment.elements) {
      const key = objectKey(element);
      const list = this.contested.get(key);
      if (!list) {
        if (this.elements.get(key)?.owner === owner) this.elements.delete(key);
        continue;
      }
      const next = list.filter((c) => c.owner !== owner);
      if (next.length === 1) this.contested.delete(key);
      else this.contested.set(key, next);
      this.elements.set(key, next[0]!);
    }
  }
}

/** Per family: how many ServicePorts want each address in `hairpin-endpoints`. */
export type HairpinCounts = ReadonlyMap<IPFamily, ReadonlyMap<string, number>>;

/** Hairpin counts derived from the previous ruleset's without changing them. */
export class HairpinCounter {
  /** Derived from the previous counts; or, for a family counted from nothing, a plain Map (cheaper to fill). */
  readonly #families = new Map<IPFamily, OverlayMap<string, number> | Map<string, number>>();

  constructor(from?: HairpinCounts) {
    for (const [f, counts] of from ?? []) this.#families.set(f, counts instanceof OverlayMap ? new OverlayMap(counts) : new Map(counts));
  }

  /** The counts; the counter must not be used any more. */
  get counts(): HairpinCounts {
    const out = new Map<IPFamily, OverlayMap<string, number>>();
    for (const [f, counts] of this.#families) out.set(f, counts instanceof OverlayMap ? counts : new OverlayMap(counts));
    return out;
  }

  add(family: IPFamily, fragment: Fragment): void {
    if (!fragment.hairpin) return;
    let counts = this.#families.get(family);
    if (!counts) this.#families.set(family, (counts = new Map()));
    for (const ip of fragment.hairpin) {
      const n = counts.get(ip);
      counts.set(ip, n === undefined ? 1 : n + 1);
    }
  }

  remove(family: IPFamily, fragment: Fragment): void {
    const counts = this.#families.get(family);
    if (!fragment.hairpin || !counts) return;
    for (const ip of fragment.hairpin) {
      const n = counts.get(ip) ?? 0;
      if (n > 1) counts.set(ip, n - 1);
      else counts.delete(ip);
    }
  }
}

export function hairpinElement(family: IPFamily, table: string, ip: string): Element {
  return { kind: 'element', family: tableFamily(family), table, set: SET.hairpinEndpoints, key: [ip, ip] };
}

// Which fragment's element is in the ruleset, when several may want the same.
//
// Three kinds of elements, kept three ways (at 10k services x 10 endpoints in
// the 'map' endpoint shape there are ~100k endpoint-map slots and ~100k hairpin
// elements against ~20k of the others; a claim with its element for every one
// of them kept 108 MiB of heap, the ruleset now keeps 12 MiB in all):
// - claimed (Fragment.elements): a ClusterIP in `cluster-ips` (every port of a
//   service wants it), an externalIP:port two services may both want with
//   different verdicts. Of several claims, the skeleton's, then the lowest
//   ServicePort id's, wins; the others are reported as conflicts. Only the
//   winner's id is kept per key: its element is in its fragment.
// - own (Fragment.ownElements): endpoint-map slots, unique by placement, and a
//   port's private maps' elements. Nothing to resolve: they are diffed with
//   their fragment, which re-renders on demand, and nothing is kept.
// - hairpin (Fragment.hairpin): `ip . ip` is the same element whoever wants
//   it, so a count of wanting ports per address is all that is needed.
// Claims and counts are derived from the previous ruleset's (OverlayMap), so an
// incremental render costs the change.

import type { IPFamily } from '../k8s/types.ts';
import type { DataType, Element, Family } from '../nft/objects.ts';
import type { ElementRun } from '../nft/element-run.ts';
import { claimKeysOf, type Fragment } from './fragment.ts';
import { SET } from './names.ts';
import type { RenderedServicePort } from './rendered-service-port.ts';
import { AddressCounts } from './address-counts.ts';
import { OverlayMap } from './overlay-map.ts';
import { addrType, tableFamily } from './statements.ts';

export interface ElementClaim {
  /** The fragment that wants it: a ServicePort id, or `skeleton:<family>`. */
  owner: string;
  element: Element;
}

/** The first element of a fragment under a claim key (a fragment that wants a key twice claims its first). */
export function claimedIn(fragment: Fragment | undefined, key: string): Element | undefined {
  if (!fragment) return undefined;
  const i = claimKeysOf(fragment).indexOf(key);
  return i < 0 ? undefined : fragment.elements[i];
}

const SKELETON_OWNER = 'skeleton:';

/** The owner name of a family's skeleton in claims (`skeleton:IPv4`): no ServicePort id looks like it. */
export function skeletonOwner(family: IPFamily): string {
  return `${SKELETON_OWNER}${family}`;
}

/** The fragment of a claim's owner: its family's skeleton, or a ServicePort's rendering. */
export function ownerFragment(
  owner: string,
  skeletons: ReadonlyMap<IPFamily, Fragment>,
  services: ReadonlyMap<string, RenderedServicePort>,
): Fragment | undefined {
  const family = skeletonFamily(owner);
  return family !== undefined ? skeletons.get(family) : services.get(owner)?.fragment;
}

/** The family of a skeleton's owner name; undefined for a ServicePort id. */
export function skeletonFamily(owner: string): IPFamily | undefined {
  return owner.startsWith(SKELETON_OWNER) ? (owner.slice(SKELETON_OWNER.length) as IPFamily) : undefined;
}

const rank = (owner: string): string => (skeletonFamily(owner) !== undefined ? `\0${owner}` : owner);

/**
 * Element claims, derived from the previous ruleset's and patched for what
 * changed. Only the winner's id is kept per key (its element is in its
 * fragment, which re-renders on demand); keys wanted by several fragments keep
 * every claim with its element, for the conflict report. `elementOf` finds an
 * owner's element in the ruleset being built.
 */
export class Claims {
  readonly owners: OverlayMap<string, string>;
  readonly contested: Map<string, readonly ElementClaim[]>;
  readonly #elementOf: (owner: string, key: string) => Element | undefined;

  constructor(
    elementOf: (owner: string, key: string) => Element | undefined,
    prev?: OverlayMap<string, string>,
    contested?: ReadonlyMap<string, readonly ElementClaim[]>,
  ) {
    this.#elementOf = elementOf;
    this.owners = new OverlayMap(prev);
    this.contested = new Map(contested);
  }

  add(owner: string, fragment: Fragment): void {
    const keys = claimKeysOf(fragment);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      const element = fragment.elements[i]!;
      const cur = this.owners.get(key);
      if (cur === undefined) {
        this.owners.set(key, owner);
        continue;
      }
      // Its own already (a fragment that wants a key twice): the winner heads any contested list, so nothing would change; skip the element
      // lookup.
      if (cur === owner) continue;
      const list = this.contested.get(key) ?? [{ owner: cur, element: this.#elementOf(cur, key)! }];
      if (list.some((c) => c.owner === owner)) continue;
      const next = [...list, { owner, element }].sort((a, b) => (rank(a.owner) < rank(b.owner) ? -1 : 1));
      this.contested.set(key, next);
      this.owners.set(key, next[0]!.owner);
    }
  }

  remove(owner: string, fragment: Fragment): void {
    for (const key of claimKeysOf(fragment)) {
      const list = this.contested.get(key);
      if (!list) {
        if (this.owners.get(key) === owner) this.owners.delete(key);
        continue;
      }
      const next = list.filter((c) => c.owner !== owner);
      if (next.length === 1) this.contested.delete(key);
      else this.contested.set(key, next);
      this.owners.set(key, next[0]!.owner);
    }
  }
}

/** Per family: how many ServicePorts want each address in `hairpin-endpoints` (the next render derives its counts from them). */
export type HairpinCounts = ReadonlyMap<IPFamily, OverlayMap<string, number>>;

/** Hairpin counts derived from the previous ruleset's without changing them. */
export class HairpinCounter {
  /** Derived from the previous counts; or, for a family counted from nothing, AddressCounts (cheaper to fill). */
  readonly #families = new Map<IPFamily, OverlayMap<string, number> | AddressCounts>();

  constructor(from?: HairpinCounts) {
    for (const [f, counts] of from ?? []) this.#families.set(f, new OverlayMap(counts));
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
    if (!counts) {
      counts = new AddressCounts();
      this.#families.set(family, counts);
    }
    if (counts instanceof AddressCounts) {
      for (const ip of fragment.hairpin) counts.add(ip);
      return;
    }
    for (const ip of fragment.hairpin) {
      const n = counts.get(ip);
      counts.set(ip, n === undefined ? 1 : n + 1);
    }
  }

  remove(family: IPFamily, fragment: Fragment): void {
    const counts = this.#families.get(family);
    if (!fragment.hairpin || !counts) return;
    if (counts instanceof AddressCounts) {
      for (const ip of fragment.hairpin) counts.remove(ip);
      return;
    }
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

/** The hairpin set's key: an endpoint's address twice (source and destination). */
export function hairpinKeyType(family: IPFamily): DataType[] {
  const addr = addrType(family);
  return [addr, addr];
}

const HAIRPIN_KEY: Readonly<Record<IPFamily, readonly DataType[]>> = { IPv4: hairpinKeyType('IPv4'), IPv6: hairpinKeyType('IPv6') };

/** One family's hairpin elements (`ip . ip`, from its counts) as the additions they are, for a full sync's encoding (see ElementRun). */
export class HairpinElements implements ElementRun {
  readonly kind = 'element-run';
  readonly set = SET.hairpinEndpoints;
  readonly family: Family;
  readonly table: string;
  readonly keyType: readonly DataType[];
  readonly dataType = undefined;
  readonly #ipFamily: IPFamily;
  readonly #ips: readonly string[];

  /** `ips`: the addresses counted (their counts' keys), each checked by the render that counted it. */
  constructor(family: IPFamily, table: string, ips: readonly string[]) {
    this.#ipFamily = family;
    this.table = table;
    this.family = tableFamily(family);
    this.keyType = HAIRPIN_KEY[family];
    this.#ips = ips;
  }

  get length(): number {
    return this.#ips.length;
  }

  value(i: number): string {
    return this.#ips[i]!;
  }

  element(i: number): Element {
    return hairpinElement(this.#ipFamily, this.table, this.#ips[i]!);
  }
}

// A full render that keeps no rendering (renderRuleset's `keepRenderings:
// false`, a full sync's): each port's rendering is claimed, counted and
// tallied as it is made and then dropped, where a kept render claims and
// counts them once all are made and holds every one until then. A weak
// reference keeps its target to the end of the turn that made it, and a full
// sync renders, plans and encodes in one turn: every rendering held to the
// end of the render was most of a large full sync's peak. The full sync
// renders each port again as its operations reach it (full-sync.ts).

import type { IPFamily } from '../k8s/types.ts';
import { Claims, claimedIn, HairpinCounter, ownerFragment, skeletonOwner } from './element-claims.ts';
import { emptyTally, type Fragment, tallyFragment } from './fragment.ts';
import { OverlayMap } from './overlay-map.ts';
import type { RenderedServicePort } from './rendered-service-port.ts';

/** Takes each rendering of an unkept render as it is made. */
export type TakeRendering = (id: string, family: IPFamily, fragment: Fragment) => void;

/** An unkept render's claims, hairpin counts and tally, made from each rendering as it is made. */
export class UnkeptRender {
  readonly services = new OverlayMap<string, RenderedServicePort>();
  readonly tally = emptyTally();
  #skeletons: ReadonlyMap<IPFamily, Fragment> = new Map();
  readonly #claims = new Claims((owner, key) => claimedIn(ownerFragment(owner, this.#skeletons, this.services), key));
  readonly #hairpin = new HairpinCounter();

  readonly take: TakeRendering = (id, family, fragment) => {
    this.#claims.add(id, fragment);
    this.#hairpin.add(family, fragment);
    tallyFragment(this.tally, fragment, 1);
  };

  /** A port placeEndpoints rendered again: the earlier rendering's claims, counts and tally undone. */
  readonly replaced = (before: RenderedServicePort, after: RenderedServicePort): void => {
    const earlier = before.unkeptFragment();
    this.#claims.remove(before.id, earlier);
    this.#hairpin.remove(before.family, earlier);
    tallyFragment(this.tally, earlier, -1);
    this.take(after.id, after.family, after.fragment);
  };

  /** The claims and counts, the skeletons' claims added (claims do not depend on their order). */
  withSkeletons(skeletons: ReadonlyMap<IPFamily, Fragment>): { claims: Claims; hairpin: HairpinCounter } {
    this.#skeletons = skeletons;
    for (const [family, s] of skeletons) this.#claims.add(skeletonOwner(family), s);
    return { claims: this.#claims, hairpin: this.#hairpin };
  }
}

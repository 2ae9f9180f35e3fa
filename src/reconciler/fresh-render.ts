// A render from nothing (no earlier ruleset to derive from: the first sync's,
// or a new config's): each port's rendering is claimed and its hairpin
// addresses counted as it is made, with it in hand, not in a walk over every
// port afterwards. A full sync's render also keeps no rendering
// (renderRuleset's `keepRenderings: false`): a weak reference keeps its
// target to the end of the turn that made it, and a full sync renders, plans
// and encodes in one turn, so every rendering held to the end of the render
// was most of a large full sync's peak. It tallies each rendering instead
// (Ruleset.unkept), and the full sync renders each port again as its
// operations reach it (full-sync.ts).

import type { IPFamily } from '../k8s/types.ts';
import type { ServicePort } from '../model/service-port.ts';
import { Claims, claimedIn, HairpinCounter, ownerFragment, skeletonOwner } from './element-claims.ts';
import { emptyTally, type Fragment, type FragmentTally, tallyFragment } from './fragment.ts';
import { OverlayMap } from './overlay-map.ts';
import { type PortAgain, type RenderContext, RenderedServicePort } from './rendered-service-port.ts';

/** A render from nothing's claims, hairpin counts and (renderings not kept) tally, made from each rendering as it is made. */
export class FreshRender {
  readonly services = new OverlayMap<string, RenderedServicePort>();
  /** What the renderings held, when they are not kept. */
  readonly tally: FragmentTally | undefined;
  #skeletons: ReadonlyMap<IPFamily, Fragment> = new Map();
  readonly #claims = new Claims((owner, key) => claimedIn(ownerFragment(owner, this.#skeletons, this.services), key));
  readonly #hairpin = new HairpinCounter();

  constructor(keepRenderings: boolean) {
    this.tally = keepRenderings ? undefined : emptyTally();
  }

  /** Renders a port (throws ServicePortRenderError) and claims and counts what it renders. */
  render(port: ServicePort, context: RenderContext, privateLabels: ReadonlySet<string>, again?: PortAgain): RenderedServicePort {
    if (this.tally === undefined) {
      const rendered = RenderedServicePort.render(port, context, privateLabels, again);
      this.#take(rendered, rendered.fragment);
      return rendered;
    }
    const { rendered, fragment } = RenderedServicePort.renderUnkept(port, context, privateLabels, again);
    this.#take(rendered, fragment);
    return rendered;
  }

  /** A port placeEndpoints rendered again: the earlier rendering's claims, counts and tally undone. */
  readonly replaced = (before: RenderedServicePort, after: RenderedServicePort): void => {
    const earlier = before.unkeptFragment();
    this.#claims.remove(before.id, earlier);
    this.#hairpin.remove(before.family, earlier);
    if (this.tally) tallyFragment(this.tally, earlier, -1);
    this.#take(after, after.fragment);
  };

  /** The claims and counts, the skeletons' claims added (claims do not depend on their order). */
  withSkeletons(skeletons: ReadonlyMap<IPFamily, Fragment>): { claims: Claims; hairpin: HairpinCounter } {
    this.#skeletons = skeletons;
    for (const [family, s] of skeletons) this.#claims.add(skeletonOwner(family), s);
    return { claims: this.#claims, hairpin: this.#hairpin };
  }

  #take(rendered: RenderedServicePort, fragment: Fragment): void {
    this.#claims.add(rendered.id, fragment);
    this.#hairpin.add(rendered.family, fragment);
    if (this.tally) tallyFragment(this.tally, fragment, 1);
  }
}

// One ServicePort in the desired ruleset, kept compact: what its rendering
// needs, not its objects, and the ServicePort itself only weakly when the
// model can derive it again (the change tracker keeps what it was derived
// from, not the port). At 10k services x 10 endpoints the rendered chains, rules and
// statements take ~110 MiB, while the syncs that need them (a full sync, the
// diff of the few ports that changed) are rare and short: the fragment is
// rendered again whenever it is asked for and no rendering is around any more.
//
// The last rendering is held weakly, so the render that validated a port and
// claimed its elements and the plan that follows it in the same sync share one
// rendering; once the operations are committed and dropped, the collector may
// take it. Rendering and the model are deterministic, so a re-derived port and
// a re-rendered fragment equal the ones they replace: what the diff sees does
// not depend on when GC ran.

import type { ServicePort } from '../model/service-port.ts';
import type { FamilyConfig, RulesetConfig } from './config.ts';
import type { EndpointRegion } from './endpoint-slots.ts';
import type { Fragment } from './fragment.ts';
import { PREFIX } from './names.ts';
import { renderServicePort } from './service-rules.ts';

const NO_REGIONS: readonly EndpointRegion[] = [];

export interface RenderContext {
  readonly fc: FamilyConfig;
  readonly config: RulesetConfig;
}

/**
 * How to derive a port again, by its id, once nothing holds it (the change
 * tracker's again(): one per service, shared by its ports); none: the
 * rendering holds the port.
 */
export interface PortAgain {
  derive(id: string): ServicePort;
}

export class RenderedServicePort {
  readonly id: string;
  readonly family: ServicePort['family'];
  /** Endpoint chains of its fragment (for the sync report). */
  readonly endpointChains: number;
  /** Slot ranges its policy chains want in the shared endpoint map. */
  readonly regions: readonly EndpointRegion[];
  /** Those of its policy chains that use a map of their own (their range collides in the shared one). */
  readonly privateLabels: ReadonlySet<string>;
  readonly #context: RenderContext;
  /** The port, held weakly when it can be derived again (#again), else strongly. */
  #port: WeakRef<ServicePort> | ServicePort;
  readonly #again: PortAgain | undefined;
  /** Its last rendering, held weakly; none when it was rendered for one walk (renderUnkept). */
  #last: WeakRef<Fragment> | undefined;

  /** Renders the port now, which validates it: throws ServicePortRenderError. */
  static render(port: ServicePort, context: RenderContext, privateLabels: ReadonlySet<string>, again?: PortAgain): RenderedServicePort {
    const { rendered, fragment } = RenderedServicePort.renderUnkept(port, context, privateLabels, again);
    rendered.#last = new WeakRef(fragment);
    return rendered;
  }

  /**
   * render(), the rendering given to the caller and not kept, not even
   * weakly: a weak reference keeps its target to the end of the turn that made
   * or read it, and a full sync renders every port in one turn. Unheld, each
   * rendering dies young once the caller is done with it (see unkeptFragment).
   */
  static renderUnkept(
    port: ServicePort,
    context: RenderContext,
    privateLabels: ReadonlySet<string>,
    again?: PortAgain,
  ): { rendered: RenderedServicePort; fragment: Fragment } {
    const fragment = render(port, context, privateLabels);
    return { rendered: new RenderedServicePort(port, context, privateLabels, fragment, again), fragment };
  }

  private constructor(
    port: ServicePort,
    context: RenderContext,
    privateLabels: ReadonlySet<string>,
    fragment: Fragment,
    again: PortAgain | undefined,
  ) {
    this.id = port.id;
    this.family = port.family;
    this.#port = again ? new WeakRef(port) : port;
    this.#again = again;
    this.#context = context;
    this.regions = fragment.regions ?? NO_REGIONS;
    this.privateLabels = privateLabels;
    let n = 0;
    for (const c of fragment.chains) if (c.chain.name.startsWith(PREFIX.endpoint)) n++;
    this.endpointChains = n;
  }

  /** The ServicePort it renders (derived again, equal, when nothing held it any more). */
  get port(): ServicePort {
    if (!(this.#port instanceof WeakRef)) return this.#port;
    const held = this.#port.deref();
    if (held) return held;
    const port = this.#again!.derive(this.id);
    this.#port = new WeakRef(port);
    return port;
  }

  /** The same port rendered with other private labels. */
  withLabels(context: RenderContext, privateLabels: ReadonlySet<string>): RenderedServicePort {
    return RenderedServicePort.render(this.port, context, privateLabels, this.#again);
  }

  /** Its chains, sets and elements; never mutate them (they may be shared with the last caller). */
  get fragment(): Fragment {
    const f = this.#last?.deref();
    if (f) return f;
    const again = render(this.port, this.#context, this.privateLabels, true);
    this.#last = new WeakRef(again);
    return again;
  }

  /** Its fragment for one walk (a full sync's operations): rendered again when none is held, and then not kept (see renderUnkept). */
  unkeptFragment(): Fragment {
    return this.#last?.deref() ?? render(this.port, this.#context, this.privateLabels, true);
  }
}

/** `again`: the port rendered with these labels before, which checked it (see renderServicePort). */
function render(port: ServicePort, context: RenderContext, privateLabels: ReadonlySet<string>, again = false): Fragment {
  return renderServicePort(port, context.fc, context.config, privateLabels, again);
}

// The desired ruleset: a pure function of the ServicePorts and the config.
//
// It is kept as fragments (each family's skeleton, each ServicePort) rather than
// one flat list so that the diff can skip every ServicePort whose entry is the
// very same object as in the last applied ruleset: rendering reuses the entry
// of every ServicePort the caller does not name as changed (the change tracker
// says which: nothing here compares ServicePorts), so an incremental sync costs
// what changed, not what exists. A ServicePort's objects are not kept (see
// rendered-service-port.ts); of its elements only those other fragments may
// want too are (see element-claims.ts).

import type { IPFamily } from '../k8s/types.ts';
import type { ServicePort } from '../model/service-port.ts';
import type { Element, Table } from '../nft/objects.ts';
import type { FamilyConfig, RulesetConfig } from './config.ts';
import { EndpointSlots, type FamilySlots, NO_LABELS, sameLabels } from './endpoint-slots.ts';
import {
  Claims,
  claimedIn,
  type ElementClaim,
  HairpinCounter,
  type HairpinCounts,
  hairpinElement,
  ownerFragment,
  skeletonOwner,
} from './element-claims.ts';
import { claimKeysOf, forEachElementOf, type Fragment, type FragmentTally, type SlotRun } from './fragment.ts';
import { FreshRender } from './fresh-render.ts';
import { OverlayMap } from './overlay-map.ts';
import { type PortAgain, type RenderContext, RenderedServicePort } from './rendered-service-port.ts';
import { ownershipMark } from './ownership.ts';
import { ServicePortRenderError } from './service-rules.ts';
import { renderSkeleton } from './skeleton.ts';
import { tableFamily } from './statements.ts';

export { RenderedServicePort };

/** Why a ServicePort or an element is not in the ruleset. */
export interface RenderProblem {
  servicePortId: string;
  code: 'ERR_SERVICE_PORT_RENDER' | 'ERR_FAMILY_NOT_CONFIGURED' | 'ERR_DUPLICATE_SERVICE_PORT' | 'ERR_ELEMENT_CONFLICT';
  message: string;
}

export interface Ruleset {
  config: RulesetConfig;
  /** One table per configured family. */
  tables: Table[];
  /** Static objects of each family's table, by family. */
  skeletons: ReadonlyMap<IPFamily, Fragment>;
  /** By ServicePort id; derived from the previous render's without copying it (see overlay-map.ts). */
  services: OverlayMap<string, RenderedServicePort>;
  /** The ServicePorts' endpoint chains, counted as they are rendered. */
  endpointChains: number;
  /**
   * The owner of each claimed element (Fragment.elements) by claimKey: of
   * several claims, the skeleton's, then the lowest ServicePort id's, wins
   * (see claimedElement for the element itself). The next render derives its own from it.
   */
  claims: OverlayMap<string, string>;
  /** Keys claimed by more than one fragment, with every claim, winner first. */
  contested: ReadonlyMap<string, readonly ElementClaim[]>;
  /** How many ServicePorts want each address in `hairpin-endpoints`, by family. */
  hairpin: HairpinCounts;
  /** Each family's index of the shared endpoint maps' blocks (endpoint shape 'map'; see endpoint-slots.ts). */
  endpointSlots: ReadonlyMap<IPFamily, FamilySlots>;
  /** Each family's shared endpoint maps in use (their skeleton holds them). */
  endpointShards: ReadonlyMap<IPFamily, readonly number[]>;
  problems: RenderProblem[];
  /**
   * What the ServicePorts' fragments hold, counted as they were rendered:
   * present when their renderings were not kept (renderRuleset's
   * `keepRenderings: false`), so that a full sync plans without rendering them again.
   */
  unkept?: FragmentTally;
  /** This rendering's identity, for `changes` of a later one (an empty object: nothing is kept through it). */
  generation: object;
  /** When rendered from an earlier ruleset: its generation, and the ServicePorts whose entry may differ from its (a superset). */
  changes?: { since: object; ids: ReadonlySet<string> };
}

const FAMILIES: readonly IPFamily[] = ['IPv4', 'IPv6'];

/** What a render reads of the model. */
export interface PortSource {
  /** Every ServicePort: walked only when every one is rendered. */
  all: Iterable<ServicePort>;
  /** One ServicePort by id (undefined: the model has none): what an incremental render reads. */
  get(id: string): ServicePort | undefined;
  /** How to derive a port again (RenderedServicePort holds it weakly then); none: renderings hold their ports. */
  again?: (port: ServicePort) => PortAgain | undefined;
}

/** A PortSource over a list (tests, the dry run): indexed once, when first asked by id; of one id twice the first counts. */
export function portsOf(list: Iterable<ServicePort>): PortSource {
  let byId: Map<string, ServicePort> | undefined;
  return {
    all: list,
    get: (id) => {
      if (byId === undefined) {
        byId = new Map();
        for (const sp of list) if (!byId.has(sp.id)) byId.set(sp.id, sp);
      }
      return byId.get(id);
    },
  };
}

type ContextFor = (family: IPFamily, fc: FamilyConfig) => RenderContext;

interface RenderedPorts {
  services: OverlayMap<string, RenderedServicePort>;
  /**
   * Ids whose entry may differ from the previous ruleset's: what the rest of
   * the render (and the diff) looks at, so that a change costs itself, not
   * another pass over every port.
   */
  rendered: Set<string>;
}

/** One port's entry, or a problem (then `before`, its previous entry, stays in force when there is one). `fresh`: renders and claims it. */
function renderOne(
  sp: ServicePort,
  config: RulesetConfig,
  before: RenderedServicePort | undefined,
  contextFor: ContextFor,
  problems: RenderProblem[],
  again: PortSource['again'],
  fresh?: FreshRender,
): RenderedServicePort | undefined {
  const fc = config.families[sp.family];
  if (!fc) {
    problems.push({
      servicePortId: sp.id,
      code: 'ERR_FAMILY_NOT_CONFIGURED',
      message: `service port ${sp.id}: ${sp.family} is not configured on this node`,
    });
    return undefined;
  }
  try {
    // Placed in the shared endpoint map for a start; placeEndpoints() re-renders the few whose ranges collide.
    return (fresh ?? RenderedServicePort).render(sp, contextFor(sp.family, fc), NO_LABELS, again?.(sp));
  } catch (e) {
    if (!(e instanceof ServicePortRenderError)) throw e;
    // As for a port whose operations were refused: its previous rendering stays in force.
    problems.push({ servicePortId: sp.id, code: e.code, message: before ? `${e.message}; its previous rules stay` : e.message });
    return before;
  }
}

/** Every ServicePort rendered; refused ones go to `problems`, and those `reuse` had that went are named in `rendered`. */
function renderEveryPort(
  model: PortSource,
  config: RulesetConfig,
  reuse: Ruleset | undefined,
  contextFor: ContextFor,
  problems: RenderProblem[],
  fresh: FreshRender | undefined,
): RenderedPorts {
  const services = fresh?.services ?? new OverlayMap<string, RenderedServicePort>();
  const rendered = new Set<string>();
  for (const sp of model.all) {
    if (services.has(sp.id)) {
      problems.push({
        servicePortId: sp.id,
        code: 'ERR_DUPLICATE_SERVICE_PORT',
        message: `service port ${sp.id} appears twice; the first is used`,
      });
      continue;
    }
    const before = reuse?.services.get(sp.id);
    const entry = renderOne(sp, config, before, contextFor, problems, model.again, fresh);
    if (entry === undefined) continue;
    services.set(sp.id, entry);
    if (entry !== before) rendered.add(sp.id);
  }
  if (reuse) for (const id of reuse.services.keys()) if (!services.has(id)) rendered.add(id);
  return { services, rendered };
}

/** The entries of `reuse`, with those of the ids in `changed` rendered again from the model (or gone from it): costs the change. */
function renderChangedPorts(
  model: PortSource,
  config: RulesetConfig,
  reuse: Ruleset,
  changed: ReadonlySet<string>,
  contextFor: ContextFor,
  problems: RenderProblem[],
): RenderedPorts {
  const services = new OverlayMap(reuse.services);
  const rendered = new Set<string>();
  for (const id of changed) {
    const before = reuse.services.get(id);
    const sp = model.get(id);
    const entry = sp === undefined ? undefined : renderOne(sp, config, before, contextFor, problems, model.again);
    if (entry === before) continue;
    if (entry === undefined) services.delete(id);
    else services.set(id, entry);
    rendered.add(id);
  }
  return { services, rendered };
}

/** The element claims and hairpin counts derived from `reuse`'s: only what changed is re-claimed and re-counted. */
function claimElements(
  skeletons: Map<IPFamily, Fragment>,
  services: OverlayMap<string, RenderedServicePort>,
  reuse: Ruleset,
  rendered: ReadonlySet<string>,
): { claims: Claims; hairpin: HairpinCounter } {
  // Only what changed is re-claimed and re-counted: an incremental render costs the change, not the ruleset.
  const claims = new Claims((owner, key) => claimedIn(ownerFragment(owner, skeletons, services), key), reuse.claims, reuse.contested);
  const hairpin = new HairpinCounter(reuse.hairpin);
  for (const [family, s] of reuse.skeletons) {
    if (skeletons.get(family) === s) continue;
    claims.remove(skeletonOwner(family), s);
    claims.add(skeletonOwner(family), skeletons.get(family)!);
  }
  for (const id of rendered) {
    const r = reuse.services.get(id);
    if (!r || services.get(id) === r) continue;
    const f = r.fragment;
    claims.remove(id, f);
    hairpin.remove(r.family, f);
  }
  for (const id of rendered) {
    const r = services.get(id);
    if (!r || reuse.services.get(id) === r) continue;
    const f = r.fragment;
    claims.add(id, f);
    hairpin.add(r.family, f);
  }
  return { claims, hairpin };
}

export interface RenderOptions {
  /**
   * false: a render of every port (no `previous` to reuse) for one full sync,
   * which does not keep the ports' renderings, not even weakly: each is
   * claimed, counted and dropped as it is made (Ruleset.unkept), and the
   * full sync renders it again as it walks it. Every rendering held to the
   * end of the render was most of a large full sync's peak.
   */
  keepRenderings?: boolean;
}

/**
 * Renders the desired ruleset. With `previous`, the entry of every ServicePort
 * not in `changed` (ids added, updated or removed since `previous` was
 * rendered; undefined: every one) is taken over from it as it is.
 */
export function renderRuleset(
  model: PortSource | readonly ServicePort[],
  config: RulesetConfig,
  previous?: Ruleset,
  changed?: ReadonlySet<string>,
  options: RenderOptions = {},
): Ruleset {
  const source = Array.isArray(model) ? portsOf(model) : (model as PortSource);
  const reuse = previous !== undefined && sameConfig(previous.config, config) ? previous : undefined;
  const fresh = reuse === undefined ? new FreshRender(options.keepRenderings ?? true) : undefined;
  const problems: RenderProblem[] = [];
  const tables: Table[] = [];
  for (const family of FAMILIES) {
    if (config.families[family])
      tables.push({ kind: 'table', family: tableFamily(family), name: config.tableName, comment: ownershipMark() });
  }

  const contexts = new Map<IPFamily, RenderContext>();
  const contextFor: ContextFor = (family, fc) => {
    let context = contexts.get(family);
    if (!context) {
      context = { fc, config };
      contexts.set(family, context);
    }
    return context;
  };
  const { services, rendered } =
    reuse !== undefined && changed !== undefined
      ? renderChangedPorts(source, config, reuse, changed, contextFor, problems)
      : renderEveryPort(source, config, reuse, contextFor, problems, fresh);

  const slots =
    config.endpointShape === 'map'
      ? placeEndpoints(services, reuse, rendered, (family) => contextFor(family, config.families[family]!), fresh?.replaced)
      : undefined;

  // The skeleton holds the shared endpoint maps that are in use: re-rendered when that changes.
  const skeletons = new Map<IPFamily, Fragment>();
  const endpointShards = new Map<IPFamily, readonly number[]>();
  for (const family of FAMILIES) {
    const fc = config.families[family];
    if (!fc) continue;
    const shards = slots?.usedShards(family) ?? NO_SHARDS;
    const before = reuse?.endpointShards.get(family) ?? NO_SHARDS;
    const same = before.length === shards.length && before.every((x, i) => x === shards[i]);
    endpointShards.set(family, same ? before : shards);
    skeletons.set(family, (same ? reuse?.skeletons.get(family) : undefined) ?? renderSkeleton(family, fc, config, shards));
  }

  const { claims, hairpin } = fresh ? fresh.withSkeletons(skeletons) : claimElements(skeletons, services, reuse!, rendered);
  for (const [key, list] of claims.contested) {
    const winner = list[0]!;
    for (const c of list.slice(1)) {
      if (sameElementValue(winner.element, c.element)) continue;
      problems.push({
        servicePortId: c.owner,
        code: 'ERR_ELEMENT_CONFLICT',
        message: `${key} is wanted by ${winner.owner} and ${c.owner} with different verdicts; ${winner.owner} keeps it`,
      });
    }
  }

  const endpointSlots = slots?.families ?? NO_SLOTS;
  return {
    endpointChains: countEndpointChains(services, reuse, rendered),
    config,
    tables,
    skeletons,
    services,
    claims: claims.owners,
    contested: claims.contested,
    hairpin: hairpin.counts,
    endpointSlots,
    endpointShards,
    problems,
    ...(fresh?.tally ? { unkept: fresh.tally } : {}),
    generation: {},
    ...(reuse ? { changes: { since: reuse.generation, ids: rendered } } : {}),
  };
}

function countEndpointChains(
  services: ReadonlyMap<string, RenderedServicePort>,
  reuse: Ruleset | undefined,
  rendered: ReadonlySet<string>,
): number {
  let n = 0;
  if (!reuse) {
    for (const s of services.values()) n += s.endpointChains;
    return n;
  }
  n = reuse.endpointChains;
  for (const id of rendered) n += (services.get(id)?.endpointChains ?? 0) - (reuse.services.get(id)?.endpointChains ?? 0);
  return n;
}

/** The element a ruleset holds under a claim key (undefined: none). */
export function claimedElement(r: Ruleset, key: string): Element | undefined {
  const owner = r.claims.get(key);
  return owner === undefined ? undefined : claimedIn(ownerFragment(owner, r.skeletons, r.services), key);
}

/** Every element of the ruleset, once: each fragment's claimed elements it won and its own elements, then the hairpin ones. */
export function forEachElement(r: Ruleset, fn: (e: Element) => void): void {
  forEachFragmentElement(r, fn);
  for (const [family, counts] of r.hairpin) for (const ip of counts.keys()) fn(hairpinElement(family, r.config.tableName, ip));
}

/** forEachElement's elements that fragments hold: all but the hairpin ones (made from their counts). */
export function forEachFragmentElement(r: Ruleset, fn: (e: Element) => void): void {
  forEachFragmentItem(r, (item) => forEachElementOf(item, fn));
}

/** forEachFragmentElement's elements as the fragments keep them: runs of endpoint slots (SlotRun) whole. */
export function forEachFragmentItem(r: Ruleset, fn: (item: Element | SlotRun) => void): void {
  for (const [family, s] of r.skeletons) forEachItemOf(r, skeletonOwner(family), s, fn);
  for (const [id, s] of r.services) forEachItemOf(r, id, s.fragment, fn);
}

/** forEachFragmentItem's items of one fragment, `owner`'s: the claimed elements it won, then its own. */
export function forEachItemOf(r: Ruleset, owner: string, f: Fragment, fn: (item: Element | SlotRun) => void): void {
  const keys = claimKeysOf(f);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    // A fragment that wants a key twice has claimed its first.
    if (r.claims.get(key) === owner && (i === 0 || keys.indexOf(key) === i)) fn(f.elements[i]!);
  }
  if (f.ownElements) for (const item of f.ownElements) fn(item);
}

const NO_SLOTS: ReadonlyMap<IPFamily, FamilySlots> = new Map();
const NO_SHARDS: readonly number[] = [];

/**
 * Updates the block index of the shared endpoint map for the ServicePorts that
 * were rendered (all of them without `reuse`), then re-renders every port whose
 * policy chains' placement (shared or private) is no longer what it was
 * rendered with: the changed ones, and those whose ranges share a block with a
 * range that came or went. Mutates `services`, and adds those it re-renders to `rendered`.
 */
function placeEndpoints(
  services: OverlayMap<string, RenderedServicePort>,
  reuse: Ruleset | undefined,
  rendered: Set<string>,
  contextFor: (family: IPFamily) => RenderContext,
  replaced?: (before: RenderedServicePort, after: RenderedServicePort) => void,
): EndpointSlots {
  const slots = new EndpointSlots(reuse?.endpointSlots);
  if (reuse) {
    for (const id of rendered) {
      const r = reuse.services.get(id);
      if (r && services.get(id) !== r) slots.remove(r.family, id, r.regions);
    }
  }
  for (const id of rendered) {
    const r = services.get(id);
    if (!r || reuse?.services.get(id) === r) continue;
    slots.add(r.family, id, r.regions);
  }
  // New entries were rendered shared: only those added onto a claimed block,
  // and the ports whose blocks gained or lost a region, may have to change.
  for (const id of slots.touched) {
    const r = services.get(id);
    if (!r) continue;
    const wanted = slots.privateLabels(r.family, r.regions);
    if (sameLabels(wanted, r.privateLabels)) continue;
    const again = r.withLabels(contextFor(r.family), wanted);
    replaced?.(r, again);
    services.set(id, again);
    rendered.add(id);
  }
  return slots;
}

export function sameElementValue(a: Element, b: Element): boolean {
  return JSON.stringify(a.value) === JSON.stringify(b.value) && a.comment === b.comment && a.timeout === b.timeout;
}

function sameConfig(a: RulesetConfig, b: RulesetConfig): boolean {
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}

// The effectful shell around the pure renderer and diff: holds what was last
// applied, renders the desired ruleset from the current ServicePorts, commits
// one transaction through the injected dataplane, and advances "last applied"
// only when the commit succeeded — so a failed commit is retried as the same
// diff (plus whatever changed meanwhile).
//
// No ServicePort costs more than itself: when a transaction fails, whatever
// the failure (the transaction's checks, the batch builder, the kernel, with
// or without naming an operation), the ports responsible are set aside —
// their last applied version stays in force, or they stay out if they never
// applied — and the rest commits in the same sync (isolation.ts). A set-aside
// port is tried again as soon as it changes, and by every full sync. A sync
// fails only when the skeleton itself cannot be programmed, or for errors that
// say nothing about the rules (out of memory, busy), which are retried whole.

import type { ServicePort } from '../model/service-port.ts';
import type { Dataplane, TableListing } from '../nft/dataplane.ts';
import type { Family, Operation } from '../nft/objects.ts';
import type { RulesetConfig } from './config.ts';
import { validateRulesetConfig } from './config.ts';
import {
  DEFAULT_STALE_CHAIN_DELAY_MS,
  diffRulesets,
  EMPTY_SYNC_STATE,
  generatedOperations,
  planLength,
  staleDeletionDueAt,
  type SyncPlan,
  type SyncState,
} from './diff.ts';
import { type FullSyncMode, planFullSync, planGeneratedFullSync } from './full-sync.ts';
import { type Attempt, commitIsolating, IsolationFailed, type Refusal } from './isolation.ts';
import { blameInvalid, blameRefusal, type FailedAttempt } from './blame.ts';
import { planGeneratedAdoption } from './adopt.ts';
import { ADOPTION_LIST_OPTIONS } from './adoption-listing.ts';
import { TABLE_FORMAT_VERSION, tableOwnership } from './ownership.ts';
import type { Fragment } from './fragment.ts';
import { DepartedDeviceLog, type DeviceDepartures } from './departed-devices.ts';
import { type ModelRead, portSourceOf, withSubstitutes } from './model-read.ts';
import { type PortSource, renderRuleset, type Ruleset } from './ruleset.ts';
import type { RejectedServicePort, SyncReport, SyncRequest } from './sync-report.ts';
import type { PlannedSync, ReconcilerOptions } from './reconciler-options.ts';

export type { ModelRead } from './model-read.ts';
export type { PlannedSync, ReconcilerOptions } from './reconciler-options.ts';
export type { RejectedServicePort, SyncReport, SyncRequest } from './sync-report.ts';

/**
 * Commits one sync may try while setting ports aside: each attempt either
 * sets aside at least one port or halves a bisection's group, so this only
 * bounds a pathological kernel (what was set aside by then stays aside, and
 * the next sync goes on from there).
 */
const MAX_ATTEMPTS = 64;

const NO_HELD: ReadonlySet<string> = new Set();
/**
 * Models of up to this many Services (ModelRead.services) have their full
 * syncs keep their renderings, so that their operations are not made from
 * every port rendered again: the second render is a start-up's cost where it
 * is felt, not memory (1k Services x 2 endpoints, four rounds of twelve
 * alternated cold starts: the first sync's median 6-47 ms shorter, 298-354
 * against 320-380 ms). At 10k x 10 keeping them would raise the cold sync's
 * VmHWM from ~165 to ~188 MiB (two alternated pairs).
 */
export const SMALL_FULL_SYNC_SERVICES = 2_000;
const LISTED_FAMILIES = ['ip', 'ip6'] as const;
const NOTHING_CHANGED: ReadonlySet<string> = new Set();

/**
 * A sync that could not be committed: the skeleton cannot be programmed, or
 * the kernel refused for the moment (ENOMEM...). What an earlier attempt of
 * the same sync committed (with some ports held back) is applied and known;
 * the rest is retried by the next sync.
 */
export class SyncError extends Error {
  readonly code = 'ERR_SYNC';
  readonly report: SyncReport;
  constructor(report: SyncReport, cause: unknown) {
    const why = cause instanceof IsolationFailed ? cause.cause : cause;
    super(`${report.kind} sync of ${report.ops} operations failed: ${(cause as Error)?.message ?? String(cause)}`, { cause: why });
    this.name = 'SyncError';
    this.report = report;
  }
}

/** A plan, with the ruleset it leads to. */
interface Planned {
  plan: SyncPlan;
  desired: Ruleset;
  kind: SyncReport['kind'];
  mode?: FullSyncMode;
}

export class Reconciler {
  readonly #dataplane: Dataplane;
  readonly #servicePorts: () => ModelRead;
  readonly #now: () => number;
  readonly #staleDelay: number;
  readonly #onPlanned: ((planned: PlannedSync) => void) | undefined;
  readonly #onReleased: ReconcilerOptions['onReleased'];
  #adopt: boolean;
  /** Until the first commit is tried: the kernel holds none of our tables. */
  #tablesAbsent: boolean;
  #config: RulesetConfig;
  #state: SyncState = EMPTY_SYNC_STATE;
  readonly #departed = new DepartedDeviceLog();
  /** Last rendered ruleset, applied or not: its fragments are reused by the next render. */
  #lastRendered: Ruleset | undefined;
  /** By id: the version whose operations failed, so a changed port is tried again. */
  readonly #setAside = new Map<string, ServicePort>();
  /** Set-aside ports whose last applied version failed too: left out until they change or a full sync runs. */
  readonly #out = new Set<string>();
  /** Ids changed since #lastRendered was rendered ('all': every one): the model's reads, kept until a render took them in. */
  #unrendered: Set<string> | 'all' = new Set();
  /** By id: what the last render got instead of the model's port (its last applied version, or nothing). */
  #substituted = new Map<string, ServicePort | undefined>();
  /** Our tables as the kernel holds them, being read for the first sync's adoption (readBack()). */
  #readBack: Promise<(TableListing | undefined)[] | Error> | undefined;

  constructor(o: ReconcilerOptions) {
    this.#dataplane = o.dataplane;
    this.#servicePorts = o.servicePorts;
    this.#now = o.now;
    this.#staleDelay = o.staleChainDelayMs ?? DEFAULT_STALE_CHAIN_DELAY_MS;
    this.#onPlanned = o.onPlanned;
    this.#onReleased = o.onReleased;
    this.#adopt = o.adopt ?? false;
    this.#tablesAbsent = o.tablesAbsent ?? false;
    this.#config = validateRulesetConfig(o.config);
  }

  /**
   * New node addresses, flowtable devices...: the next sync renders with it.
   * `departed`: flowtable devices that left under their names (gone, or renamed), which the kernel has dealt with itself.
   */
  setConfig(config: RulesetConfig, departed?: DeviceDepartures): void {
    this.#config = validateRulesetConfig(config);
    if (departed) this.#departed.note(departed);
  }

  get state(): SyncState {
    return this.#state;
  }

  /**
   * Renders and plans without committing (`--dry-run`, tests). `read`: the
   * model, read once per sync (reading drains the change tracker); the ids it
   * names are rendered again, the other ports' renderings are kept. `held`:
   * ports to hold back at their last applied version (or out).
   */
  plan(request: SyncRequest, read: ModelRead = this.#servicePorts(), held: ReadonlySet<string> = NO_HELD): Planned {
    return this.#plan(request, read, held, planFullSync);
  }

  /** plan(), with full syncs planned by `full`: the syncs' own attempts have their operations made on demand. */
  #plan(request: SyncRequest, read: ModelRead, held: ReadonlySet<string>, full: typeof planFullSync): Planned {
    const isFull = request.kind === 'full' || this.#state.applied === undefined;
    const mode = request.kind === 'full' ? request.mode : 'replace';
    // A reassert only adds: a renamed device it leaves in the kernel is the next plan's to take out.
    const departedDevices = this.#departed.forPlan(!isFull || mode === 'replace');
    // A full sync walks each rendering once more, as it makes the operations: not kept meanwhile
    // (RenderOptions), but for a small model's.
    const desired = this.#render(read, held, !isFull || (read.services ?? Number.POSITIVE_INFINITY) <= SMALL_FULL_SYNC_SERVICES);
    if (isFull) return { plan: full(desired, mode, this.#state), desired, kind: 'full', mode };
    const plan = diffRulesets(
      this.#state.applied,
      desired,
      { now: this.#now(), staleChainDelayMs: this.#staleDelay, ...(departedDevices ? { departedDevices } : {}) },
      this.#state.staleChains,
    );
    return { plan, desired, kind: 'incremental' };
  }

  /** Renders the ports `read` names again (and those whose substitution changed); the others' renderings are kept. */
  #render(read: ModelRead, held: ReadonlySet<string>, keepRenderings = true): Ruleset {
    if (read.changed === 'all') this.#unrendered = 'all';
    else if (this.#unrendered !== 'all') for (const id of read.changed) this.#unrendered.add(id);
    const ports = this.#programmable(portSourceOf(read), held, this.#unrendered);
    const changed = this.#unrendered === 'all' ? undefined : this.#unrendered;
    const desired = renderRuleset(ports, this.#config, this.#lastRendered ?? this.#state.applied, changed, { keepRenderings });
    this.#lastRendered = desired;
    this.#unrendered = new Set();
    return desired;
  }

  /**
   * The model's ServicePorts, with set-aside and held ones replaced by their
   * last applied version or left out: left out when they never applied, when
   * that version failed too, or when a set-aside port is held (bisection then
   * tries its last applied version as a suspect like any other). A set-aside
   * port that changed is the model's again. Adds to `changed` the ids whose
   * substitution began, ended or switched, so only those are rendered again.
   */
  #programmable(model: PortSource, held: ReadonlySet<string>, changed: Set<string> | 'all'): PortSource {
    const before = this.#substituted;
    if (this.#setAside.size === 0 && held.size === 0 && before.size === 0) return model;
    for (const id of [...this.#setAside.keys()]) if (changed === 'all' || changed.has(id) || model.get(id) === undefined) this.#forget(id);
    const now = new Map<string, ServicePort | undefined>();
    for (const ids of [this.#setAside.keys(), held]) {
      for (const id of ids) {
        if (now.has(id) || model.get(id) === undefined) continue;
        const aside = this.#setAside.has(id);
        now.set(id, this.#out.has(id) || (aside && held.has(id)) ? undefined : this.#state.applied?.services.get(id)?.port);
      }
    }
    if (changed !== 'all') {
      for (const [id, p] of now) if (!before.has(id) || before.get(id) !== p) changed.add(id);
      for (const id of before.keys()) if (!now.has(id)) changed.add(id);
    }
    this.#substituted = now;
    if (now.size === 0) return model;
    return { ...model, all: withSubstitutes(model.all, now), get: (id) => (now.has(id) ? now.get(id) : model.get(id)) };
  }

  #forget(id: string): void {
    this.#setAside.delete(id);
    this.#out.delete(id);
  }

  async sync(request: SyncRequest): Promise<SyncReport> {
    const rejected: RejectedServicePort[] = [];
    if (request.kind === 'full') {
      this.#setAside.clear();
      this.#out.clear();
    }
    const t0 = performance.now();
    const given = this.#servicePorts();
    const model = portSourceOf(given);
    // Indexed once (when `given` has no lookup), whatever renders it.
    const read: ModelRead = { ...given, ports: model.all, port: model.get };
    let adoptionRefused: string | undefined;
    let rendered = false;
    // The adoption's renderings, held until its batch is handed over (refused: until the first
    // attempt has planned): the ruleset holds them weakly, and across the awaits until then the
    // collector could take every one, to be rendered again. The kernel's wait does not need them.
    const heldFragments: Fragment[] = [];
    const readAhead = this.#readBack;
    // Taken by this sync's adoption, or by none: a listing is not kept for later.
    this.#readBack = undefined;
    if (this.#adopt && this.#state.applied === undefined && request.kind === 'full' && request.mode === 'replace') {
      // Once: a failed adoption, or a later recovery, replaces.
      this.#adopt = false;
      const listed = readAhead ?? this.#listTables();
      // What the kernel lists is what the adoption starts from.
      this.#departed.forPlan();
      // Rendered while the kernel's dumps run, whatever they say: a refused adoption's replace commits this very rendering.
      const desired = this.#render(read, NO_HELD);
      for (const s of desired.services.values()) heldFragments.push(s.fragment);
      const adopted = await this.#tryAdopt(desired, listed, t0, rejected, heldFragments);
      if (typeof adopted !== 'string') return adopted;
      adoptionRefused = adopted;
      rendered = true;
    }
    const refusedNote = adoptionRefused === undefined ? {} : { adoptionRefused };
    const current = model.get;
    // Once an attempt has committed, the next ones are incremental: a full sync's replace is done.
    let request_ = request;
    let done: { kind: SyncReport['kind']; mode?: FullSyncMode } | undefined;
    let last: Planned | undefined;
    let ops = 0;
    /** Operations of the last attempt's plan, listed or generated. */
    let planned = 0;
    const attempt = async (held: ReadonlySet<string>): Promise<Attempt> => {
      // Later attempts (and the first after an adoption, which rendered) render again only what their set-aside and held ports change.
      const changed = last === undefined && !rendered ? read : { ...read, changed: NOTHING_CHANGED };
      last = this.#plan(request_, changed, held, planGeneratedFullSync);
      heldFragments.length = 0;
      const { plan, desired, kind } = last;
      planned = planLength(plan);
      if (planned > 0)
        this.#onPlanned?.({ kind, servicePorts: desired.services.size, ops: planned, planMs: performance.now() - t0, adoption: false });
      const failed = await this.#commit(plan, desired, current);
      if (failed) return failed;
      ops += planned;
      done ??= { kind, ...(last.mode ? { mode: last.mode } : {}) };
      request_ = { kind: 'incremental' };
      return { ok: true };
    };
    const setAside = (id: string, why: Refusal): void => {
      const sp = current(id);
      if (!sp || this.#out.has(id)) return;
      const entry = { servicePortId: id, namespace: sp.namespace, serviceName: sp.serviceName, portName: sp.portName, ...why };
      if (this.#setAside.has(id)) {
        // Its last applied version failed too: out, and said once.
        this.#out.add(id);
        const earlier = rejected.find((x) => x.servicePortId === id);
        if (earlier) Object.assign(earlier, { keptLastApplied: false });
        else rejected.push({ ...entry, keptLastApplied: false });
        return;
      }
      this.#setAside.set(id, sp);
      rejected.push({ ...entry, keptLastApplied: this.#state.applied?.services.has(id) === true });
    };
    try {
      await commitIsolating({ attempt, setAside, maxAttempts: MAX_ATTEMPTS });
    } catch (e) {
      const l = last!;
      const report = this.#report(
        l.plan,
        l.desired,
        { kind: done?.kind ?? l.kind, ...(l.mode ? { mode: l.mode } : {}) },
        ops || planned,
        rejected,
      );
      throw new SyncError({ ...report, ...refusedNote }, e);
    }
    const l = last!;
    return { ...this.#report(l.plan, l.desired, done ?? l, ops, rejected), ...refusedNote };
  }

  /**
   * Starts reading our tables back for the first sync's adoption now, while
   * the caller still waits for the cluster's state: the kernel's dumps and
   * their decoding then overlap the API server's lists. Nothing without adoption.
   */
  readBack(): void {
    if (this.#adopt && this.#state.applied === undefined) this.#readBack ??= this.#listTables();
  }

  #listTables(): Promise<(TableListing | undefined)[] | Error> {
    // Both at once: the kernel's dumps run on worker threads.
    return Promise.all(LISTED_FAMILIES.map((f) => this.#dataplane.list(f, this.#config.tableName, ADOPTION_LIST_OPTIONS))).then(
      (l) => l,
      (e: unknown) => new Error(`reading the tables back failed: ${(e as Error)?.message ?? String(e)}`),
    );
  }

  /** Commits only the difference to what the kernel holds; why not when it cannot (the caller then replaces). */
  async #tryAdopt(
    desired: Ruleset,
    listed: Promise<(TableListing | undefined)[] | Error>,
    t0: number,
    rejected: RejectedServicePort[],
    heldFragments: Fragment[],
  ): Promise<SyncReport | string> {
    const answer = await listed;
    if (answer instanceof Error) return answer.message;
    const listings = new Map<Family, TableListing>();
    for (const [i, family] of LISTED_FAMILIES.entries()) {
      const listing = answer[i];
      if (!listing) continue;
      const owner = tableOwnership(listing.table);
      if (owner.kind !== 'ours') return `table ${family} ${listing.table.name} is not ours`;
      if (owner.version !== TABLE_FORMAT_VERSION)
        return `table ${family} ${listing.table.name} has table format ${owner.version}, not ${TABLE_FORMAT_VERSION}`;
      listings.set(family, listing);
    }
    if (listings.size === 0) return 'no table to adopt';
    const plan = planGeneratedAdoption(desired, listings, this.#now());
    answer.length = 0;
    listings.clear();
    if ('refused' in plan) return plan.refused;
    const ops = planLength(plan);
    if (ops > 0)
      this.#onPlanned?.({ kind: 'full', servicePorts: desired.services.size, ops, planMs: performance.now() - t0, adoption: true });
    const failed = await this.#commit(plan, desired, () => undefined, heldFragments);
    if (failed && !failed.ok) return `the kernel refused the adoption: ${(failed.error as Error)?.message ?? String(failed.error)}`;
    return this.#report(plan, desired, { kind: 'full', mode: 'adopt' }, ops, rejected);
  }

  /**
   * Checks and commits one plan; undefined when it landed (the state advanced),
   * else the failed attempt with its blame. A generated plan's operations are
   * made once for the dataplane, which checks them as it encodes them, and
   * again for a blame.
   * An adoption's commit passes the renderings it held for the encoding, let
   * go once the dataplane has the batch, before the kernel answers.
   */
  async #commit(plan: SyncPlan, desired: Ruleset, current: PortSource['get'], adoptionHeld?: Fragment[]): Promise<Attempt | undefined> {
    const { generated } = plan;
    if (planLength(plan) > 0) {
      const tx = this.#dataplane.begin();
      // Only the first: one that fails leaves stages in the kernel, hooked to nothing, for the next replace to empty.
      const stageable = this.#tablesAbsent ? (generated?.hookedFrom ?? 0) : 0;
      this.#tablesAbsent = false;
      if (generated) tx.queueGenerated(generated.items, generated.length, { stageable });
      else tx.queueAll(plan.ops);
      // Blamed on every operation, the invalid ones too: the errors' indexes count them all.
      const every = () => (generated ? Array.from(generatedOperations(generated)) : plan.ops);
      const invalid = (): Attempt => {
        return { ok: false, error: tx.error, blame: blameInvalid(tx.errors, this.#failed(every, desired, current)) };
      };
      if (tx.errors.length > 0) return invalid();
      const committing = this.#dataplane.commit(tx);
      if (adoptionHeld) adoptionHeld.length = 0;
      // Encoded and handed over: no operation of a generated plan is held any more.
      if (generated && tx.errors.length === 0) this.#onReleased?.(generated.length, adoptionHeld !== undefined);
      try {
        await committing;
      } catch (e) {
        // A generated plan's invalid operations are found by the dataplane's encoding, before anything is sent.
        if (tx.errors.length > 0) return invalid();
        return {
          ok: false,
          error: e,
          blame: blameRefusal(
            e,
            this.#failed(() => tx.ops(), desired, current),
          ),
        };
      }
    }
    this.#state = plan.next;
    this.#departed.landed();
    return undefined;
  }

  /** A failed attempt over these operations, for blameInvalid and blameRefusal. */
  #failed(ops: () => readonly Operation[], desired: Ruleset, current: PortSource['get']): FailedAttempt {
    return { ops, rulesets: [desired, this.#state.applied], blamable: (id) => current(id) !== undefined && !this.#out.has(id) };
  }

  #report(
    plan: SyncPlan,
    desired: Ruleset,
    what: { kind: SyncReport['kind']; mode?: SyncReport['mode'] },
    ops: number,
    rejected: RejectedServicePort[],
  ): SyncReport {
    const due = staleDeletionDueAt(this.#state, this.#staleDelay);
    return {
      kind: what.kind,
      ...(what.mode ? { mode: what.mode } : {}),
      ops,
      stats: plan.stats,
      servicePorts: desired.services.size,
      endpointChains: desired.endpointChains,
      problems: desired.problems,
      staleChains: this.#state.staleChains.size,
      ...(due !== undefined ? { followUpMs: Math.max(1, due - this.#now()) } : {}),
      rejected,
      setAside: this.#setAside.size,
    };
  }
}

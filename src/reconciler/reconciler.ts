// The effectful shell around the pure renderer and diff: holds what was last
// applied, renders the desired ruleset from the current ServicePorts, commits
// one transaction through the injected dataplane, and advances "last applied"
// only when the commit succeeded — so a failed commit is retried as the same
// diff (plus whatever changed meanwhile).
//
// A commit the kernel refuses names the failing operations. When they belong
// to ServicePorts, those ports are set aside — their last applied version
// stays in force, or they stay out if they never applied — and the sync is
// planned again without them at once: one port the kernel will not take must
// not hold back every other change. A set-aside port is tried again as soon
// as it changes, and by every full sync. Errors that say nothing about the
// rules (out of memory, busy) are retried as a whole, as before.

import { servicePortEqual } from '../model/equality.ts';
import type { ServicePort } from '../model/service-port.ts';
import { type Dataplane, NftCommitError, type TableListing } from '../nft/dataplane.ts';
import type { Family } from '../nft/objects.ts';
import { planAdoption } from './adopt.ts';
import { TABLE_FORMAT_VERSION, tableOwnership } from './ownership.ts';
import type { RulesetConfig } from './config.ts';
import { validateRulesetConfig } from './config.ts';
import { DEFAULT_STALE_CHAIN_DELAY_MS, diffRulesets, EMPTY_SYNC_STATE, staleDeletionDueAt, type SyncPlan, type SyncState, type SyncStats } from './diff.ts';
import { type FullSyncMode, planFullSync } from './full-sync.ts';
import { OperationOwners } from './operation-owner.ts';
import { type RenderProblem, renderRuleset, type Ruleset } from './ruleset.ts';

export type SyncRequest = { kind: 'incremental' } | { kind: 'full'; mode: FullSyncMode };

export interface SyncReport {
  /** What ran: a first sync is always a full one (replace, or adopt when allowed), whatever was asked. */
  kind: 'incremental' | 'full';
  mode?: FullSyncMode | 'adopt';
  /** Operations committed (0: nothing to do, no commit). */
  ops: number;
  stats: SyncStats;
  servicePorts: number;
  /** Distinct endpoint chains in the desired ruleset. */
  endpointChains: number;
  problems: RenderProblem[];
  /** Flushed chains awaiting deletion. */
  staleChains: number;
  /** Run a sync in this many ms to delete stale chains (undefined: none). */
  followUpMs?: number;
  /** ServicePorts the kernel refused in this sync, now set aside (see the top of this file). */
  rejected: RejectedServicePort[];
  /** ServicePorts set aside, this sync's and earlier ones'. */
  setAside: number;
  /** A first sync that could have adopted the kernel's tables but replaced them: why. */
  adoptionRefused?: string;
}

/** A ServicePort whose operations the kernel refused. */
export interface RejectedServicePort {
  servicePortId: string;
  /** Its last applied version is still programmed (false: it is not in the kernel at all). */
  keptLastApplied: boolean;
  errno: number;
  code: string;
  message: string;
}

/** Refused commits traced to ServicePorts are planned again this many times in one sync. */
const MAX_SET_ASIDE_PASSES = 4;

/** Errnos about the moment, not the rules: retrying the same transaction may well succeed. */
const TRANSIENT = new Set(['ENOMEM', 'ENOBUFS', 'EBUSY', 'EAGAIN', 'EINTR', 'ENOSPC', 'EPERM', 'EACCES', 'ETIMEDOUT']);

/** A sync whose transaction the dataplane refused (or that failed before committing); nothing changed. */
export class SyncError extends Error {
  readonly code = 'ERR_SYNC';
  readonly report: SyncReport;
  constructor(report: SyncReport, cause: unknown) {
    super(`${report.kind} sync of ${report.ops} operations failed: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = 'SyncError';
    this.report = report;
  }
}

export interface ReconcilerOptions {
  dataplane: Dataplane;
  config: RulesetConfig;
  /** The current model: every ServicePort this node must program. */
  servicePorts: () => readonly ServicePort[];
  /** Milliseconds on the clock the runner schedules with. */
  now: () => number;
  staleChainDelayMs?: number;
  /** Each planned transaction, before it is committed: a large one takes seconds in the kernel. */
  onPlanned?: (planned: PlannedSync) => void;
  /**
   * The first sync may adopt the tables the kernel holds (src/reconciler/adopt.ts)
   * instead of replacing them. The caller has checked that they are ours; the
   * reconciler adopts only tables of the current format.
   */
  adopt?: boolean;
}

/** What a sync is about to commit. */
export interface PlannedSync {
  kind: SyncReport['kind'];
  servicePorts: number;
  ops: number;
  /** Reading the model, rendering and planning, ms. */
  planMs: number;
}

export class Reconciler {
  readonly #dataplane: Dataplane;
  readonly #servicePorts: () => readonly ServicePort[];
  readonly #now: () => number;
  readonly #staleDelay: number;
  readonly #onPlanned: ((planned: PlannedSync) => void) | undefined;
  #adopt: boolean;
  #config: RulesetConfig;
  #state: SyncState = EMPTY_SYNC_STATE;
  /** Last rendered ruleset, applied or not: its fragments are reused by the next render. */
  #lastRendered: Ruleset | undefined;
  /** By id: the version the kernel refused, so a changed port is tried again. */
  readonly #setAside = new Map<string, ServicePort>();

  constructor(o: ReconcilerOptions) {
    this.#dataplane = o.dataplane;
    this.#servicePorts = o.servicePorts;
    this.#now = o.now;
    this.#staleDelay = o.staleChainDelayMs ?? DEFAULT_STALE_CHAIN_DELAY_MS;
    this.#onPlanned = o.onPlanned;
    this.#adopt = o.adopt ?? false;
    this.#config = validateRulesetConfig(o.config);
  }

  /** New node addresses, flowtable devices...: the next sync renders with it. */
  setConfig(config: RulesetConfig): void {
    this.#config = validateRulesetConfig(config);
  }

  get state(): SyncState {
    return this.#state;
  }

  /**
   * Renders and plans without committing (`--dry-run`, tests). `ports`: the
   * model's ServicePorts, read once per sync (reading them drains the model).
   */
  plan(request: SyncRequest, ports: readonly ServicePort[] = this.#servicePorts()): { plan: SyncPlan; desired: Ruleset; kind: SyncReport['kind']; mode?: FullSyncMode } {
    const desired = renderRuleset(this.#programmable(ports), this.#config, this.#lastRendered ?? this.#state.applied);
    this.#lastRendered = desired;
    if (request.kind === 'full' || this.#state.applied === undefined) {
      const mode = request.kind === 'full' ? request.mode : 'replace';
      return { plan: planFullSync(desired, mode, this.#state), desired, kind: 'full', mode };
    }
    const plan = diffRulesets(this.#state.applied, desired, { now: this.#now(), staleChainDelayMs: this.#staleDelay }, this.#state.staleChains);
    return { plan, desired, kind: 'incremental' };
  }

  /** The model's ServicePorts, with set-aside ones replaced by their last applied version (or left out). */
  #programmable(all: readonly ServicePort[]): readonly ServicePort[] {
    if (this.#setAside.size === 0) return all;
    const seen = new Set<string>();
    const out: ServicePort[] = [];
    for (const sp of all) {
      const refused = this.#setAside.get(sp.id);
      seen.add(sp.id);
      if (!refused) out.push(sp);
      else if (refused !== sp && !servicePortEqual(refused, sp)) {
        this.#setAside.delete(sp.id);
        out.push(sp);
      } else {
        const last = this.#state.applied?.services.get(sp.id)?.port;
        if (last) out.push(last);
      }
    }
    for (const id of this.#setAside.keys()) if (!seen.has(id)) this.#setAside.delete(id);
    return out;
  }

  /** Sets aside the ServicePorts a refused commit names; true when there is something new to leave out. */
  #setAsideRefused(error: unknown, plan: SyncPlan, desired: Ruleset, ports: readonly ServicePort[], rejected: RejectedServicePort[]): boolean {
    if (!(error instanceof NftCommitError) || error.failures.length === 0) return false;
    const owners = new OperationOwners([desired, this.#state.applied]);
    const current = new Map<string, ServicePort>();
    for (const sp of ports) current.set(sp.id, sp);
    let found = false;
    for (const f of error.failures) {
      if (TRANSIENT.has(f.code)) continue;
      const op = plan.ops[f.index];
      const id = op ? owners.servicePortOf(op) : undefined;
      const sp = id === undefined ? undefined : current.get(id);
      if (!sp || this.#setAside.has(sp.id)) continue;
      this.#setAside.set(sp.id, sp);
      const keptLastApplied = this.#state.applied?.services.has(sp.id) === true;
      rejected.push({ servicePortId: sp.id, keptLastApplied, errno: f.errno, code: f.code, message: f.message });
      found = true;
    }
    return found;
  }

  async sync(request: SyncRequest): Promise<SyncReport> {
    const rejected: RejectedServicePort[] = [];
    let adoptionRefused: string | undefined;
    if (request.kind === 'full') this.#setAside.clear();
    const t0 = performance.now();
    const ports = this.#servicePorts();
    if (this.#adopt && this.#state.applied === undefined && request.kind === 'full' && request.mode === 'replace') {
      // Once: a failed adoption, or a later recovery, replaces.
      this.#adopt = false;
      const adopted = await this.#tryAdopt(ports, t0, rejected);
      if (typeof adopted !== 'string') return adopted;
      adoptionRefused = adopted;
    }
    for (let pass = 0; ; pass++) {
      const { plan, desired, kind, mode } = this.plan(request, ports);
      if (plan.ops.length > 0) this.#onPlanned?.({ kind, servicePorts: desired.services.size, ops: plan.ops.length, planMs: performance.now() - t0 });
      try {
        const report = await this.#commit(plan, desired, kind, mode, rejected);
        return adoptionRefused === undefined ? report : { ...report, adoptionRefused };
      } catch (e) {
        const cause = e instanceof SyncError ? e.cause : e;
        if (pass + 1 < MAX_SET_ASIDE_PASSES && this.#setAsideRefused(cause, plan, desired, ports, rejected)) continue;
        throw e;
      }
    }
  }

  /**
   * Reads our tables back and commits only the difference to the desired
   * ruleset; why not when there is nothing to adopt or it cannot be adopted
   * (then the caller replaces: never worse than without adoption).
   */
  async #tryAdopt(ports: readonly ServicePort[], t0: number, rejected: RejectedServicePort[]): Promise<SyncReport | string> {
    const listings = new Map<Family, TableListing>();
    try {
      const families = ['ip', 'ip6'] as const;
      // Both at once: the kernel's dumps run on worker threads side by side.
      const listed = await Promise.all(families.map((f) => this.#dataplane.list(f, this.#config.tableName)));
      for (const [i, family] of families.entries()) {
        const listing = listed[i];
        if (!listing) continue;
        const owner = tableOwnership(listing.table);
        if (owner.kind !== 'ours') return `table ${family} ${listing.table.name} is not ours`;
        if (owner.version !== TABLE_FORMAT_VERSION) return `table ${family} ${listing.table.name} has table format ${owner.version}, not ${TABLE_FORMAT_VERSION}`;
        listings.set(family, listing);
      }
    } catch (e) {
      return `reading the tables back failed: ${(e as Error)?.message ?? String(e)}`;
    }
    if (listings.size === 0) return 'no table to adopt';
    const desired = renderRuleset(this.#programmable(ports), this.#config, this.#lastRendered);
    this.#lastRendered = desired;
    const plan = planAdoption(desired, listings, this.#now());
    listings.clear();
    if ('refused' in plan) return plan.refused;
    if (plan.ops.length > 0) this.#onPlanned?.({ kind: 'full', servicePorts: desired.services.size, ops: plan.ops.length, planMs: performance.now() - t0 });
    try {
      return await this.#commit(plan, desired, 'full', 'adopt', rejected);
    } catch (e) {
      return `the kernel refused the adoption: ${((e as SyncError).cause as Error)?.message ?? String(e)}`;
    }
  }

  async #commit(plan: SyncPlan, desired: Ruleset, kind: SyncReport['kind'], mode: SyncReport['mode'], rejected: RejectedServicePort[]): Promise<SyncReport> {
    const report = (state: SyncState): SyncReport => {
      const due = staleDeletionDueAt(state, this.#staleDelay);
      let endpointChains = 0;
      for (const s of desired.services.values()) endpointChains += s.endpointChains;
      return {
        kind,
        ...(mode ? { mode } : {}),
        ops: plan.ops.length,
        stats: plan.stats,
        servicePorts: desired.services.size,
        endpointChains,
        problems: desired.problems,
        staleChains: state.staleChains.size,
        ...(due !== undefined ? { followUpMs: Math.max(1, due - this.#now()) } : {}),
        rejected,
        setAside: this.#setAside.size,
      };
    };
    if (plan.ops.length > 0) {
      try {
        await this.#dataplane.commit(plan.ops);
      } catch (e) {
        throw new SyncError(report(this.#state), e);
      }
    }
    this.#state = plan.next;
    return report(this.#state);
  }
}

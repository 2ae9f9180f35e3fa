// The effectful shell around the pure renderer and diff: holds what was last
// applied, renders the desired ruleset from the current ServicePorts, commits
// one transaction through the injected dataplane, and advances "last applied"
// only when the commit succeeded — so a failed commit is retried as the same
// diff (plus whatever changed meanwhile).

import type { ServicePort } from '../model/service-port.ts';
import type { Dataplane } from '../nft/dataplane.ts';
import type { RulesetConfig } from './config.ts';
import { validateRulesetConfig } from './config.ts';
import { DEFAULT_STALE_CHAIN_DELAY_MS, diffRulesets, EMPTY_SYNC_STATE, staleDeletionDueAt, type SyncPlan, type SyncState, type SyncStats } from './diff.ts';
import { type FullSyncMode, planFullSync } from './full-sync.ts';
import { type RenderProblem, renderRuleset, type Ruleset } from './ruleset.ts';

export type SyncRequest = { kind: 'incremental' } | { kind: 'full'; mode: FullSyncMode };

export interface SyncReport {
  /** What ran: a first sync is always a full replace, whatever was asked. */
  kind: 'incremental' | 'full';
  mode?: FullSyncMode;
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
}

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
}

export class Reconciler {
  readonly #dataplane: Dataplane;
  readonly #servicePorts: () => readonly ServicePort[];
  readonly #now: () => number;
  readonly #staleDelay: number;
  #config: RulesetConfig;
  #state: SyncState = EMPTY_SYNC_STATE;
  /** Last rendered ruleset, applied or not: its fragments are reused by the next render. */
  #lastRendered: Ruleset | undefined;

  constructor(o: ReconcilerOptions) {
    this.#dataplane = o.dataplane;
    this.#servicePorts = o.servicePorts;
    this.#now = o.now;
    this.#staleDelay = o.staleChainDelayMs ?? DEFAULT_STALE_CHAIN_DELAY_MS;
    this.#config = validateRulesetConfig(o.config);
  }

  /** New node addresses, flowtable devices...: the next sync renders with it. */
  setConfig(config: RulesetConfig): void {
    this.#config = validateRulesetConfig(config);
  }

  get state(): SyncState {
    return this.#state;
  }

  /** Renders and plans without committing (`--dry-run`, tests). */
  plan(request: SyncRequest): { plan: SyncPlan; desired: Ruleset; kind: SyncReport['kind']; mode?: FullSyncMode } {
    const desired = renderRuleset(this.#servicePorts(), this.#config, this.#lastRendered ?? this.#state.applied);
    this.#lastRendered = desired;
    if (request.kind === 'full' || this.#state.applied === undefined) {
      const mode = request.kind === 'full' ? request.mode : 'replace';
      return { plan: planFullSync(desired, mode, this.#state), desired, kind: 'full', mode };
    }
    const plan = diffRulesets(this.#state.applied, desired, { now: this.#now(), staleChainDelayMs: this.#staleDelay }, this.#state.staleChains);
    return { plan, desired, kind: 'incremental' };
  }

  async sync(request: SyncRequest): Promise<SyncReport> {
    const { plan, desired, kind, mode } = this.plan(request);
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

// What a Reconciler is made with (src/reconciler/reconciler.ts), and what it tells as it goes.

import type { Dataplane } from '../nft/dataplane.ts';
import type { RulesetConfig } from './config.ts';
import type { ModelRead } from './model-read.ts';
import type { SyncReport } from './sync-report.ts';

export interface ReconcilerOptions {
  dataplane: Dataplane;
  config: RulesetConfig;
  /** The current model: every ServicePort this node must program. */
  servicePorts: () => ModelRead;
  /** Milliseconds on the clock the runner schedules with. */
  now: () => number;
  staleChainDelayMs?: number;
  /** Each planned transaction, before it is committed: a large one takes seconds in the kernel. */
  onPlanned?: (planned: PlannedSync) => void;
  /**
   * A full sync's transaction of `ops` operations, handed to the dataplane
   * (`adoption`: the first sync's, adopting the kernel's tables). Its
   * operations were made on demand and are not held, nor are its
   * renderings (an adoption's only weakly from then on): while the kernel
   * works is the moment to collect them (a failure makes them again).
   */
  onReleased?: (ops: number, adoption: boolean) => void;
  /**
   * The first sync may adopt the tables the kernel holds (src/reconciler/adopt.ts)
   * instead of replacing them. The caller has checked that they are ours; the
   * reconciler adopts only tables of the current format.
   */
  adopt?: boolean;
  /**
   * The kernel holds none of our tables (the caller has looked): the first
   * sync's replace may then be committed in stages, the kernel working on
   * the first while the rest are encoded (Transaction.stageable).
   */
  tablesAbsent?: boolean;
}

/** What a sync is about to commit. */
export interface PlannedSync {
  kind: SyncReport['kind'];
  servicePorts: number;
  ops: number;
  /** Reading the model, rendering and planning, ms. */
  planMs: number;
  /** A restart's adoption of the tables it found: its renderings are held for its encoding, its batch rewrites little. */
  adoption: boolean;
}

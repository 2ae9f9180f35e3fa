// When to sync: the effectful schedule around Reconciler.sync, on an injectable
// RxJS scheduler so that tests run it in virtual time.
//
// - Nothing runs until `synced$` says Services, EndpointSlices and the Node have
//   arrived; the first sync is then a full replace.
// - Change signals only mark the state dirty. A sync starts when it is dirty, no
//   sync is in flight, and `minSyncPeriodMs` has passed since the last one
//   started. Under continuous churn that is one sync per period, never none
//   (a debounce would wait for a quiet moment that may never come).
// - Never two syncs in flight: signals during a sync mark dirty again and the
//   next one follows (after the minimum period).
// - A failed sync is retried, with exponential backoff, as the same diff plus
//   whatever changed since; after `fullResyncAfter` failures in a row the retry
//   is a full replace (what we remember of the kernel may be wrong).
// - Every `syncPeriodMs` after the last full sync, a full reassert.
// - A sync that left stale chains asks for a follow-up to delete them.
//
// An explicit state machine on scheduler actions rather than an operator chain:
// the feedback (a sync's outcome decides the next one's kind and time) is what
// throttle/audit/exhaustMap compositions get subtly wrong.

import { asyncScheduler, from, Observable, type ObservableInput, type SchedulerLike, type Subscriber, Subscription } from '../rx.ts';
import type { FullSyncMode } from './full-sync.ts';
import type { SyncReport, SyncRequest } from './reconciler.ts';
import { SyncError } from './reconciler.ts';

export type SyncReason = 'startup' | 'change' | 'periodic' | 'retry' | 'recovery' | 'stale-chains';

export interface SyncResult {
  reason: SyncReason;
  request: SyncRequest;
  ok: boolean;
  /** Present on success, and on failure when the sync got as far as planning. */
  report?: SyncReport;
  error?: unknown;
  /** Scheduler time (ms) the sync started at, and how long it took. */
  startedAt: number;
  durationMs: number;
  /** Failures in a row, this one included (0 on success). */
  consecutiveFailures: number;
}

export interface SyncBackoffOptions {
  initialMs: number;
  maxMs: number;
  /** Failures in a row after which the retry is a full replace. */
  fullResyncAfter: number;
}

export interface SyncRunnerOptions {
  /** Something changed in the model; the payload is ignored. */
  changes$: Observable<unknown>;
  /** Emits true once all informers have synced. */
  synced$: Observable<boolean>;
  sync: (request: SyncRequest) => ObservableInput<SyncReport>;
  /** `--min-sync-period`; 0 allowed. */
  minSyncPeriodMs: number;
  /** `--sync-period`: interval of full reassert syncs; 0 disables them. */
  syncPeriodMs: number;
  backoff?: Partial<SyncBackoffOptions>;
  scheduler?: SchedulerLike;
}

export const DEFAULT_BACKOFF: SyncBackoffOptions = { initialMs: 1000, maxMs: 30_000, fullResyncAfter: 3 };

export class SyncRunnerConfigError extends Error {
  readonly code = 'ERR_SYNC_RUNNER_CONFIG';
}

/** The wait after `failures` failures in a row: the initial wait, doubled for each more, capped. */
export function backoffDelay(failures: number, b: Pick<SyncBackoffOptions, 'initialMs' | 'maxMs'>): number {
  return Math.min(b.initialMs * 2 ** Math.max(0, failures - 1), b.maxMs);
}

export function syncRunner(options: SyncRunnerOptions): Observable<SyncResult> {
  const { minSyncPeriodMs, syncPeriodMs } = options;
  if (!(minSyncPeriodMs >= 0) || !(syncPeriodMs >= 0))
    throw new SyncRunnerConfigError(`sync periods must be >= 0 (min ${minSyncPeriodMs}, full ${syncPeriodMs})`);
  const backoff: SyncBackoffOptions = { ...DEFAULT_BACKOFF, ...options.backoff };
  const scheduler = options.scheduler ?? asyncScheduler;

  return new Observable<SyncResult>((subscriber) => {
    const loop = new SyncLoop(options, backoff, scheduler, subscriber);
    loop.subs.add(
      options.synced$.subscribe({
        next: (synced) => loop.synced(synced),
        error: (e) => subscriber.error(e),
      }),
    );
    loop.subs.add(
      options.changes$.subscribe({
        next: () => loop.markDirty('change'),
        error: (e) => subscriber.error(e),
      }),
    );
    return loop.subs;
  });
}

/** One subscription's sync loop: what is owed (a full sync, changes), when the next sync may start, and the timers. */
class SyncLoop {
  readonly subs = new Subscription();
  #gateOpen = false;
  #dirty = false;
  #dirtyReason: SyncReason = 'change';
  /** A full sync owed: the first one, a periodic one, a recovery. */
  #fullPending: { mode: FullSyncMode; reason: SyncReason } | undefined = { mode: 'replace', reason: 'startup' };
  #inFlight = false;
  #lastStart = Number.NEGATIVE_INFINITY;
  #notBefore = Number.NEGATIVE_INFINITY;
  #failures = 0;
  #runTimer: Subscription | undefined;
  #runAt = Number.POSITIVE_INFINITY;
  #periodicTimer: Subscription | undefined;
  #followUpTimer: Subscription | undefined;

  readonly options: SyncRunnerOptions;
  readonly backoff: SyncBackoffOptions;
  readonly scheduler: SchedulerLike;
  readonly subscriber: Subscriber<SyncResult>;

  constructor(options: SyncRunnerOptions, backoff: SyncBackoffOptions, scheduler: SchedulerLike, subscriber: Subscriber<SyncResult>) {
    this.options = options;
    this.backoff = backoff;
    this.scheduler = scheduler;
    this.subscriber = subscriber;
  }

  /** The cluster state has synced (or not yet): no sync runs before it has. */
  synced(synced: boolean): void {
    if (!synced || this.#gateOpen) return;
    this.#gateOpen = true;
    this.#schedule();
  }

  markDirty(reason: SyncReason): void {
    if (!this.#dirty) this.#dirtyReason = reason;
    this.#dirty = true;
    this.#schedule();
  }

  #schedule(): void {
    if (!this.#gateOpen || this.#inFlight || (!this.#dirty && !this.#fullPending)) return;
    // The clock read once: read again, it may have ticked, and a sync due now would be
    // scheduled 1 ms in the past (Node warns of a negative timeout on stderr).
    const now = this.scheduler.now();
    const at = Math.max(now, this.#lastStart + this.options.minSyncPeriodMs, this.#notBefore);
    if (this.#runTimer && this.#runAt <= at) return;
    this.#runTimer?.unsubscribe();
    this.#runAt = at;
    this.#runTimer = this.scheduler.schedule(() => this.#run(), at - now);
    this.subs.add(this.#runTimer);
  }

  #armPeriodic(): void {
    if (this.options.syncPeriodMs === 0) return;
    this.#periodicTimer?.unsubscribe();
    this.#periodicTimer = this.scheduler.schedule(() => {
      this.#fullPending ??= { mode: 'reassert', reason: 'periodic' };
      this.#schedule();
    }, this.options.syncPeriodMs);
    this.subs.add(this.#periodicTimer);
  }

  #run(): void {
    this.#runTimer = undefined;
    this.#runAt = Number.POSITIVE_INFINITY;
    const full = this.#fullPending;
    const request: SyncRequest = full ? { kind: 'full', mode: full.mode } : { kind: 'incremental' };
    const started: Started = { reason: full ? full.reason : this.#dirtyReason, request, full, startedAt: this.scheduler.now() };
    this.#fullPending = undefined;
    this.#dirty = false;
    this.#inFlight = true;
    this.#lastStart = started.startedAt;
    let report: SyncReport | undefined;

    let source: Observable<SyncReport>;
    try {
      source = from(this.options.sync(request));
    } catch (e) {
      this.#failed(started, e);
      return;
    }
    let done = false;
    this.subs.add(
      source.subscribe({
        next: (r) => {
          report = r;
        },
        error: (e) => {
          if (done) return;
          done = true;
          this.#failed(started, e);
        },
        complete: () => {
          if (done) return;
          done = true;
          this.#succeeded(started, report);
        },
      }),
    );
  }

  #succeeded(s: Started, report: SyncReport | undefined): void {
    this.#inFlight = false;
    const durationMs = this.scheduler.now() - s.startedAt;
    this.#failures = 0;
    this.#notBefore = Number.NEGATIVE_INFINITY;
    if (s.full) this.#armPeriodic();
    const { reason, request, startedAt } = s;
    this.subscriber.next({ reason, request, ok: true, report, startedAt, durationMs, consecutiveFailures: 0 });
    if (report?.followUpMs !== undefined) {
      this.#followUpTimer?.unsubscribe();
      this.#followUpTimer = this.scheduler.schedule(() => this.markDirty('stale-chains'), report.followUpMs);
      this.subs.add(this.#followUpTimer);
    }
    this.#schedule();
  }

  #failed(s: Started, error: unknown): void {
    this.#inFlight = false;
    const durationMs = this.scheduler.now() - s.startedAt;
    this.#failures++;
    this.#notBefore = this.scheduler.now() + backoffDelay(this.#failures, this.backoff);
    if (this.#failures >= this.backoff.fullResyncAfter) this.#fullPending = { mode: 'replace', reason: 'recovery' };
    else if (s.full) this.#fullPending = { ...s.full, reason: 'retry' };
    else {
      this.#dirty = true;
      this.#dirtyReason = 'retry';
    }
    const failedReport = error instanceof SyncError ? error.report : undefined;
    this.subscriber.next({
      reason: s.reason,
      request: s.request,
      ok: false,
      ...(failedReport ? { report: failedReport } : {}),
      error,
      startedAt: s.startedAt,
      durationMs,
      consecutiveFailures: this.#failures,
    });
    this.#schedule();
  }
}

/** A sync as it started. */
interface Started {
  reason: SyncReason;
  request: SyncRequest;
  full: { mode: FullSyncMode; reason: SyncReason } | undefined;
  startedAt: number;
}

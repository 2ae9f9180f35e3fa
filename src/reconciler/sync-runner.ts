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

import { asyncScheduler, from, Observable, type ObservableInput, type SchedulerLike, Subscription } from 'rxjs';
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

export function backoffDelay(failures: number, b: SyncBackoffOptions): number {
  return Math.min(b.initialMs * 2 ** Math.max(0, failures - 1), b.maxMs);
}

export function syncRunner(options: SyncRunnerOptions): Observable<SyncResult> {
  const { minSyncPeriodMs, syncPeriodMs } = options;
  if (!(minSyncPeriodMs >= 0) || !(syncPeriodMs >= 0))
    throw new SyncRunnerConfigError(`sync periods must be >= 0 (min ${minSyncPeriodMs}, full ${syncPeriodMs})`);
  const backoff: SyncBackoffOptions = { ...DEFAULT_BACKOFF, ...options.backoff };
  const scheduler = options.scheduler ?? asyncScheduler;

  return new Observable<SyncResult>((subscriber) => {
    const subs = new Subscription();
    let gateOpen = false;
    let dirty = false;
    let dirtyReason: SyncReason = 'change';
    /** A full sync owed: the first one, a periodic one, a recovery. */
    let fullPending: { mode: FullSyncMode; reason: SyncReason } | undefined = { mode: 'replace', reason: 'startup' };
    let inFlight = false;
    let lastStart = Number.NEGATIVE_INFINITY;
    let notBefore = Number.NEGATIVE_INFINITY;
    let failures = 0;
    let runTimer: Subscription | undefined;
    let runAt = Number.POSITIVE_INFINITY;
    let periodicTimer: Subscription | undefined;
    let followUpTimer: Subscription | undefined;

    const markDirty = (reason: SyncReason): void => {
      if (!dirty) dirtyReason = reason;
      dirty = true;
      schedule();
    };

    const schedule = (): void => {
      if (!gateOpen || inFlight || (!dirty && !fullPending)) return;
      const at = Math.max(scheduler.now(), lastStart + minSyncPeriodMs, notBefore);
      if (runTimer && runAt <= at) return;
      runTimer?.unsubscribe();
      runAt = at;
      runTimer = scheduler.schedule(run, at - scheduler.now());
      subs.add(runTimer);
    };

    const armPeriodic = (): void => {
      if (syncPeriodMs === 0) return;
      periodicTimer?.unsubscribe();
      periodicTimer = scheduler.schedule(() => {
        fullPending ??= { mode: 'reassert', reason: 'periodic' };
        schedule();
      }, syncPeriodMs);
      subs.add(periodicTimer);
    };

    const run = (): void => {
      runTimer = undefined;
      runAt = Number.POSITIVE_INFINITY;
      const full = fullPending;
      const request: SyncRequest = full ? { kind: 'full', mode: full.mode } : { kind: 'incremental' };
      const reason = full ? full.reason : dirtyReason;
      fullPending = undefined;
      dirty = false;
      inFlight = true;
      const startedAt = scheduler.now();
      lastStart = startedAt;
      let report: SyncReport | undefined;

      const finish = (error: unknown, failed: boolean): void => {
        inFlight = false;
        const durationMs = scheduler.now() - startedAt;
        if (!failed) {
          failures = 0;
          notBefore = Number.NEGATIVE_INFINITY;
          if (full) armPeriodic();
          subscriber.next({ reason, request, ok: true, report, startedAt, durationMs, consecutiveFailures: 0 });
          if (report?.followUpMs !== undefined) {
            followUpTimer?.unsubscribe();
            followUpTimer = scheduler.schedule(() => markDirty('stale-chains'), report.followUpMs);
            subs.add(followUpTimer);
          }
        } else {
          failures++;
          notBefore = scheduler.now() + backoffDelay(failures, backoff);
          if (failures >= backoff.fullResyncAfter) fullPending = { mode: 'replace', reason: 'recovery' };
          else if (full) fullPending = { ...full, reason: 'retry' };
          else {
            dirty = true;
            dirtyReason = 'retry';
          }
          const failedReport = error instanceof SyncError ? error.report : undefined;
          subscriber.next({
            reason,
            request,
            ok: false,
            ...(failedReport ? { report: failedReport } : {}),
            error,
            startedAt,
            durationMs,
            consecutiveFailures: failures,
          });
        }
        schedule();
      };

      let source: Observable<SyncReport>;
      try {
        source = from(options.sync(request));
      } catch (e) {
        finish(e, true);
        return;
      }
      let done = false;
      subs.add(
        source.subscribe({
          next: (r) => {
            report = r;
          },
          error: (e) => {
            if (done) return;
            done = true;
            finish(e, true);
          },
          complete: () => {
            if (done) return;
            done = true;
            finish(undefined, false);
          },
        }),
      );
    };

    subs.add(
      options.synced$.subscribe({
        next: (synced) => {
          if (!synced || gateOpen) return;
          gateOpen = true;
          schedule();
        },
        error: (e) => subscriber.error(e),
      }),
    );
    subs.add(
      options.changes$.subscribe({
        next: () => markDirty('change'),
        error: (e) => subscriber.error(e),
      }),
    );
    return subs;
  });
}

import { map, Observable, type SchedulerLike, Subject, throwError, timer, VirtualAction, VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { emptyStats } from '../../src/reconciler/diff.ts';
import { SyncError, type SyncReport, type SyncRequest } from '../../src/reconciler/reconciler.ts';
import { backoffDelay, DEFAULT_BACKOFF, type SyncResult, syncRunner, type SyncRunnerOptions } from '../../src/reconciler/sync-runner.ts';

// Each test drives the runner in virtual time: signals are scheduled at given
// instants, each sync takes a given duration, and we look at when syncs started.

interface Call {
  at: number;
  request: SyncRequest;
}

interface Scenario {
  minSyncPeriodMs?: number;
  syncPeriodMs?: number;
  syncedAt?: number;
  changesAt?: number[];
  /** Sync duration in ms (virtual). */
  durationMs?: number;
  /** Which calls (0-based) fail. */
  failCalls?: Set<number>;
  /** followUpMs reported by the given calls. */
  followUp?: Map<number, number>;
  until: number;
  backoff?: SyncRunnerOptions['backoff'];
}

function report(followUpMs?: number): SyncReport {
  return {
    kind: 'incremental',
    ops: 1,
    stats: emptyStats(),
    servicePorts: 0,
    endpointChains: 0,
    problems: [],
    staleChains: 0,
    rejected: [],
    setAside: 0,
    ...(followUpMs !== undefined ? { followUpMs } : {}),
  };
}

function runScenario(s: Scenario): { calls: Call[]; results: SyncResult[]; maxInFlight: number } {
  const scheduler = new VirtualTimeScheduler(VirtualAction, s.until);
  const changes = new Subject<void>();
  const synced = new Subject<boolean>();
  const calls: Call[] = [];
  const results: SyncResult[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const duration = s.durationMs ?? 0;

  const sync = (request: SyncRequest): Observable<SyncReport> => {
    const n = calls.length;
    calls.push({ at: scheduler.now(), request });
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    const done = timer(duration, scheduler);
    if (s.failCalls?.has(n)) {
      return new Observable<SyncReport>((sub) =>
        done.subscribe(() => {
          inFlight--;
          sub.error(new SyncError(report(), new Error(`commit ${n} refused`)));
        }),
      );
    }
    return done.pipe(
      map(() => {
        inFlight--;
        return report(s.followUp?.get(n));
      }),
    );
  };

  const sub = syncRunner({
    changes$: changes,
    synced$: synced,
    sync,
    minSyncPeriodMs: s.minSyncPeriodMs ?? 1000,
    syncPeriodMs: s.syncPeriodMs ?? 0,
    scheduler,
    ...(s.backoff ? { backoff: s.backoff } : {}),
  }).subscribe((r) => results.push(r));

  scheduler.schedule(() => synced.next(true), s.syncedAt ?? 0);
  for (const t of s.changesAt ?? []) scheduler.schedule(() => changes.next(), t);
  scheduler.flush();
  sub.unsubscribe();
  return { calls, results, maxInFlight };
}

const range = (from: number, to: number, step: number): number[] => {
  const out: number[] = [];
  for (let t = from; t <= to; t += step) out.push(t);
  return out;
};

describe('sync runner: when syncs start', () => {
  const cases: Array<{ name: string; scenario: Scenario; starts: number[]; kinds?: string[] }> = [
    {
      name: 'nothing is programmed before the informers have synced; then a full replace',
      scenario: { syncedAt: 5000, changesAt: [0, 100, 4000], until: 20_000 },
      starts: [5000],
      kinds: ['full:replace'],
    },
    {
      name: 'changes within the minimum period are coalesced into one sync',
      scenario: { changesAt: [100, 200, 300, 900], until: 20_000 },
      starts: [0, 1000],
      kinds: ['full:replace', 'incremental'],
    },
    {
      name: 'a change after a quiet spell syncs at once',
      scenario: { changesAt: [5000], until: 20_000 },
      starts: [0, 5000],
    },
    {
      name: 'min-sync-period 0: every distinct instant with changes syncs',
      scenario: { minSyncPeriodMs: 0, changesAt: [100, 100, 250, 251], until: 20_000 },
      starts: [0, 100, 250, 251],
    },
    {
      name: 'continuous churn does not starve: one sync per period while it lasts',
      scenario: { changesAt: range(50, 9950, 100), until: 20_000 },
      starts: range(0, 9000, 1000).concat([10_000]),
    },
    {
      name: 'a slow sync is never overlapped; the next one follows it',
      scenario: { durationMs: 2500, changesAt: range(100, 6000, 100), until: 20_000 },
      starts: [0, 2500, 5000, 7500],
    },
    {
      name: 'periodic full reassert every sync-period after the last full sync',
      scenario: { syncPeriodMs: 30_000, until: 95_000 },
      starts: [0, 30_000, 60_000, 90_000],
      kinds: ['full:replace', 'full:reassert', 'full:reassert', 'full:reassert'],
    },
    {
      name: 'stale chains ask for a follow-up sync',
      scenario: { followUp: new Map([[1, 1000]]), changesAt: [3000], until: 20_000 },
      starts: [0, 3000, 4000],
      kinds: ['full:replace', 'incremental', 'incremental'],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const { calls, maxInFlight } = runScenario(c.scenario);
      expect(calls.map((x) => x.at)).toEqual(c.starts);
      expect(maxInFlight).toBe(1);
      if (c.kinds) expect(calls.map((x) => (x.request.kind === 'full' ? `full:${x.request.mode}` : 'incremental'))).toEqual(c.kinds);
    });
  }

  it('under churn, consecutive syncs are at least min-sync-period and at most min-sync-period + duration apart', () => {
    const { calls } = runScenario({ durationMs: 300, changesAt: range(10, 30_000, 37), until: 40_000 });
    const gaps = calls.slice(1).map((c, i) => c.at - calls[i]!.at);
    expect(gaps.length).toBeGreaterThan(25);
    for (const g of gaps) {
      expect(g).toBeGreaterThanOrEqual(1000);
      expect(g).toBeLessThanOrEqual(1300);
    }
  });
});

describe('sync runner: failures', () => {
  it('retries an incremental sync with exponential backoff, then recovers with a full replace', () => {
    const { calls, results } = runScenario({
      changesAt: [5000],
      failCalls: new Set([1, 2, 3]),
      backoff: { initialMs: 1000, maxMs: 30_000, fullResyncAfter: 3 },
      until: 60_000,
    });
    expect(calls.map((c) => c.at)).toEqual([0, 5000, 6000, 8000, 12_000]);
    expect(calls.map((c) => (c.request.kind === 'full' ? c.request.mode : 'incremental'))).toEqual([
      'replace',
      'incremental',
      'incremental',
      'incremental',
      'replace',
    ]);
    expect(results.map((r) => [r.reason, r.ok, r.consecutiveFailures])).toEqual([
      ['startup', true, 0],
      ['change', false, 1],
      ['retry', false, 2],
      ['retry', false, 3],
      ['recovery', true, 0],
    ]);
    expect(results[1]!.error).toBeInstanceOf(SyncError);
    expect(results[1]!.report?.ops).toBe(1);
  });

  it('a failed start-up sync is retried as a full replace', () => {
    const { calls } = runScenario({ failCalls: new Set([0]), until: 10_000 });
    expect(calls.map((c) => [c.at, c.request.kind === 'full' ? c.request.mode : 'incremental'])).toEqual([
      [0, 'replace'],
      [1000, 'replace'],
    ]);
  });

  it('changes during backoff wait for it', () => {
    const { calls } = runScenario({
      minSyncPeriodMs: 0,
      changesAt: [100, 150, 200, 2000],
      failCalls: new Set([1]),
      backoff: { initialMs: 5000 },
      until: 20_000,
    });
    expect(calls.map((c) => c.at)).toEqual([0, 100, 5100]);
  });

  it('a sync function that throws synchronously counts as a failure', () => {
    const scheduler = new VirtualTimeScheduler(VirtualAction, 5000);
    const results: SyncResult[] = [];
    let n = 0;
    syncRunner({
      changes$: new Subject(),
      synced$: timer(0, scheduler).pipe(map(() => true)),
      sync: () => {
        n++;
        if (n === 1) throw new Error('boom');
        return throwError(() => new Error('refused'));
      },
      minSyncPeriodMs: 0,
      syncPeriodMs: 0,
      scheduler,
    }).subscribe((r) => results.push(r));
    scheduler.flush();
    expect(results.slice(0, 2).map((r) => [r.ok, (r.error as Error).message])).toEqual([
      [false, 'boom'],
      [false, 'refused'],
    ]);
  });

  it('never schedules a sync in the past, even when the clock ticks between two reads', () => {
    const inner = new VirtualTimeScheduler(VirtualAction, 5000);
    // A clock that has moved on by 1 ms each time it is read, as Date.now() may between two reads.
    let reads = 0;
    const delays: number[] = [];
    const ticking: SchedulerLike = {
      now: () => inner.now() + reads++,
      // The runner passes no state.
      schedule: ((work: () => void, delay = 0) => {
        delays.push(delay);
        return inner.schedule(work, delay);
      }) as SchedulerLike['schedule'],
    };
    const results: SyncResult[] = [];
    syncRunner({
      changes$: timer(100, inner).pipe(map(() => undefined)),
      synced$: timer(0, inner).pipe(map(() => true)),
      sync: () => timer(10, inner).pipe(map(() => report())),
      minSyncPeriodMs: 0,
      syncPeriodMs: 1000,
      scheduler: ticking,
    }).subscribe((r) => results.push(r));
    inner.flush();
    expect(results.length).toBeGreaterThanOrEqual(2);
    expect(delays.filter((d) => d < 0)).toEqual([]);
  });

  it('backoff doubles up to its maximum', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((f) => backoffDelay(f, DEFAULT_BACKOFF))).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
  });

  it('refuses negative periods', () => {
    expect(() =>
      syncRunner({ changes$: new Subject(), synced$: new Subject(), sync: () => [], minSyncPeriodMs: -1, syncPeriodMs: 0 }),
    ).toThrow(/>= 0/);
  });
});

// Giving memory back after a large sync: the forced collection works in a
// process started without --expose-gc and leaves no global gc behind; which
// syncs are worth it; the dataplane's own release; and the agent wiring
// (in-process, real manifest streams, the fake kernel).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GCProfiler } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { firstValueFrom, filter } from 'rxjs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Agent } from '../../src/agent/agent.ts';
import {
  collectGarbage,
  LARGE_SYNC_OPS,
  MemoryReleaser,
  releaseMemory,
  worthCollecting,
  type ReleaseReason,
} from '../../src/agent/memory-release.ts';
import { FakeKernel } from '../../src/nft/fake/fake-kernel.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { jsonLogLines } from './json-log.ts';
import { agentOnExamples } from './examples-agent.ts';

const tick = () => new Promise<void>((r) => setTimeout(r, 0));

describe('collectGarbage', () => {
  it('collects what is unreachable, without --expose-gc', async () => {
    expect(process.execArgv).not.toContain('--expose-gc');
    let garbage: object | undefined = { payload: new Array(100_000).fill(0).map((_, i) => ({ i })) };
    const ref = new WeakRef(garbage);
    garbage = undefined;
    // A WeakRef keeps its target alive until the current job ends.
    await tick();
    collectGarbage();
    expect(ref.deref()).toBeUndefined();
  });

  it('leaves no gc() in this context or in contexts made afterwards', () => {
    const before = typeof (globalThis as { gc?: unknown }).gc;
    collectGarbage();
    collectGarbage();
    expect(typeof (globalThis as { gc?: unknown }).gc).toBe(before);
    expect(runInNewContext('typeof gc')).toBe('undefined');
  });
});

describe('worthCollecting', () => {
  it('after the first sync and after large ones only', () => {
    expect(worthCollecting(0, true)).toBe(true);
    expect(worthCollecting(undefined, true)).toBe(true);
    expect(worthCollecting(LARGE_SYNC_OPS, false)).toBe(true);
    expect(worthCollecting(LARGE_SYNC_OPS - 1, false)).toBe(false);
    expect(worthCollecting(undefined, false)).toBe(false);
  });
});

describe('releaseMemory', () => {
  it("calls the dataplane's releaseMemory when it has one, before the collection and after it", async () => {
    // The major collections V8 ran since the last call, read without waiting (a GCProfiler's stop is synchronous).
    let profiler = new GCProfiler();
    profiler.start();
    const calls: string[][] = [];
    releaseMemory({
      releaseMemory: () => {
        calls.push(profiler.stop().statistics.map((s) => s.gcType));
        profiler = new GCProfiler();
        profiler.start();
      },
    });
    profiler.stop();
    expect(calls).toHaveLength(2);
    expect(calls[0]).not.toContain('MarkSweepCompact');
    expect(calls[1]).toContain('MarkSweepCompact');
    // A dataplane without one (the fake kernel) is fine.
    expect(() => releaseMemory(new FakeKernel())).not.toThrow();
  });
});

describe('MemoryReleaser', () => {
  const MiB = 2 ** 20;
  let releaser: MemoryReleaser | undefined;
  afterEach(() => {
    releaser?.stop();
    vi.useRealTimers();
  });

  /** A releaser over a settable RSS that a release brings back to `floor`. */
  function setup(floor = 100 * MiB) {
    vi.useFakeTimers();
    const state = { rss: floor, releases: [] as ReleaseReason[] };
    releaser = new MemoryReleaser({
      release: (reason) => {
        state.rss = floor;
        state.releases.push(reason);
      },
      rss: () => state.rss,
      quietMs: 5_000,
      growthBytes: 8 * MiB,
      growthShare: 0.03,
    });
    return state;
  }

  it('releases after the first and after large syncs on the next turn, not inside the sync', () => {
    const state = setup();
    releaser!.synced(10, true);
    expect(state.releases).toEqual([]);
    vi.advanceTimersToNextTimer();
    expect(state.releases).toEqual(['large sync']);
    releaser!.synced(LARGE_SYNC_OPS, false);
    vi.advanceTimersToNextTimer();
    expect(state.releases).toEqual(['large sync', 'large sync']);
  });

  it("releases a large full sync's rendering at once, in the turn that encodes it; not a small, incremental or adopting one's", () => {
    const state = setup();
    releaser!.planned('full', LARGE_SYNC_OPS - 1, false);
    releaser!.planned('incremental', LARGE_SYNC_OPS * 10, false);
    releaser!.planned('full', LARGE_SYNC_OPS * 10, true);
    vi.advanceTimersByTime(10_000);
    expect(state.releases).toEqual([]);
    releaser!.planned('full', LARGE_SYNC_OPS, false);
    expect(state.releases).toEqual(['rendering of a large full sync']);
  });

  it("releases a large sync's planning while the kernel commits it, and still after the sync, even when both are due at once", () => {
    const state = setup();
    releaser!.released(LARGE_SYNC_OPS - 1);
    vi.advanceTimersByTime(10_000);
    expect(state.releases).toEqual([]);
    releaser!.released(LARGE_SYNC_OPS);
    expect(state.releases).toEqual([]);
    vi.advanceTimersToNextTimer();
    expect(state.releases).toEqual(['planning of a large sync']);
    // A commit answered before the next turn: the sync ends with the planning's release still due.
    releaser!.released(LARGE_SYNC_OPS);
    releaser!.synced(LARGE_SYNC_OPS, false);
    vi.advanceTimersByTime(0);
    expect(state.releases).toEqual(['planning of a large sync', 'planning of a large sync', 'large sync']);
    releaser!.released(LARGE_SYNC_OPS);
    releaser!.stop();
    vi.advanceTimersByTime(60_000);
    expect(state.releases).toHaveLength(3);
  });

  it('does not collect while the kernel commits an adoption (its peak is behind it), only after the sync', () => {
    const state = setup();
    releaser!.released(LARGE_SYNC_OPS * 10, true);
    vi.advanceTimersByTime(10_000);
    expect(state.releases).toEqual([]);
    releaser!.synced(LARGE_SYNC_OPS * 10, true);
    vi.advanceTimersToNextTimer();
    expect(state.releases).toEqual(['large sync']);
  });

  it('after small syncs, once quiet, only when the RSS grew by the threshold since the last release', () => {
    const state = setup();
    releaser!.synced(10, true);
    vi.advanceTimersToNextTimer();
    state.rss += 7 * MiB;
    releaser!.synced(4, false);
    vi.advanceTimersByTime(10_000);
    expect(state.releases).toEqual(['large sync']);
    state.rss += 1 * MiB;
    releaser!.synced(4, false);
    vi.advanceTimersByTime(4_999);
    expect(state.releases).toEqual(['large sync']);
    vi.advanceTimersByTime(1);
    expect(state.releases).toEqual(['large sync', 'idle']);
    expect(state.rss).toBe(100 * MiB);
  });

  it('after small syncs of a large agent, only when the RSS grew by a share of what it held after the last release', () => {
    const state = setup(400 * MiB);
    releaser!.synced(10, true);
    vi.advanceTimersToNextTimer();
    // 3% of 400 MiB is 12 MiB: 11 are not worth a full collection of a heap that size.
    state.rss += 11 * MiB;
    releaser!.synced(4, false);
    vi.advanceTimersByTime(10_000);
    expect(state.releases).toEqual(['large sync']);
    state.rss += 1 * MiB;
    releaser!.synced(4, false);
    vi.advanceTimersByTime(5_000);
    expect(state.releases).toEqual(['large sync', 'idle']);
  });

  it('never during churn: every sync restarts the quiet period', () => {
    const state = setup();
    releaser!.synced(10, true);
    vi.advanceTimersToNextTimer();
    state.rss += 50 * MiB;
    for (let i = 0; i < 20; i++) {
      releaser!.synced(4, false);
      vi.advanceTimersByTime(1_000);
    }
    expect(state.releases).toEqual(['large sync']);
    vi.advanceTimersByTime(4_000);
    expect(state.releases).toEqual(['large sync', 'idle']);
  });

  it('does nothing once stopped', () => {
    const state = setup();
    releaser!.synced(10, true);
    releaser!.stop();
    vi.advanceTimersByTime(60_000);
    expect(state.releases).toEqual([]);
    releaser!.synced(10, true);
    vi.advanceTimersToNextTimer();
    state.rss += 50 * MiB;
    releaser!.synced(4, false);
    releaser!.stop();
    vi.advanceTimersByTime(60_000);
    expect(state.releases).toEqual(['large sync']);
  });
});

describe('the agent', () => {
  let agent: Agent | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    await agent?.stop();
    agent = undefined;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('releases memory once idle after its first sync and logs what it gave back', async () => {
    dir = mkdtempSync(join(tmpdir(), 'knp-release-'));
    const { lines, sink } = jsonLogLines();
    const releases: number[] = [];
    agent = await agentOnExamples({
      logger: createLogger('info', sink),
      dataplane: new FakeKernel(),
      releaseMemory: () => releases.push(Date.now()),
    });
    const first = await firstValueFrom(agent.syncs$.pipe(filter((r) => r.ok)));
    // Not inside the sync's own callbacks: on the next turn of the event loop.
    expect(releases).toHaveLength(0);
    await new Promise<void>((r) => setImmediate(r));
    await tick();
    expect(first.report?.kind).toBe('full');
    expect(releases).toHaveLength(1);
    const logged = lines.find((l) => l.msg === 'released memory after a large sync');
    expect(logged).toMatchObject({ before: { rss: expect.any(Number), heapUsed: expect.any(Number) }, after: { rss: expect.any(Number) } });
  });

  it('exports its own memory on /metrics (prom-client default metrics in its registry) once its first sync has an outcome', async () => {
    agent = await agentOnExamples({ dataplane: new FakeKernel() }, []);
    await firstValueFrom(agent.syncs$);
    // The registry itself, not a scrape (which would register them): the first outcome did.
    const text = await agent.metrics.registry.metrics();
    const rss = Number(/^process_resident_memory_bytes (\d+)/m.exec(text)?.[1]);
    expect(rss).toBeGreaterThan(10 * 2 ** 20);
    expect(text).toMatch(/^nodejs_heap_size_used_bytes \d+/m);
    // kube-proxy's own names are still there.
    expect(text).toContain('kubeproxy_sync_proxy_rules_duration_seconds');
  });
});

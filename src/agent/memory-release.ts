// Giving memory back after a large sync.
//
// A cold sync of a big cluster allocates several times what the agent keeps:
// the listed JSON, the rendered ruleset, the operations, the encoded batch.
// V8 sizes its heap up to that burst and, in a process that then sits idle
// waiting for watch events, it never runs the major GC that would find it all
// dead: at 10k services x 10 endpoints the agent held ~600 MiB of RSS for
// ~90 MiB of live data. One forced "last resort" collection (mark-compact with
// memory reduction, the one V8 runs before an out-of-memory) right after such
// a sync returns the pages to the OS; then the dataplane trims malloc's arenas
// (the addon also does so on its own after a large batch, native/addon.cc).
// A large full sync gets two more: before its encoding (the render's garbage,
// under the batch's peak) and while the kernel commits it (its planning).
//
// Why a forced GC rather than a smaller heap limit: --max-old-space-size would
// turn a big cluster into an OOM crash, and V8's own memory reducer only acts
// on allocation activity, which an idle agent does not have. The GC runs only
// after syncs that committed many operations (or the first one), so a steady
// stream of small changes never pays for it.

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Dataplane } from '../nft/dataplane.ts';
import type { SyncReport } from '../reconciler/sync-report.ts';

/** V8's gc() extension with the options Node 24's V8 accepts. */
type GcFunction = (options?: { type?: 'major' | 'minor'; execution?: 'sync' | 'async'; flavor?: 'regular' | 'last-resort' }) => void;

/** Operations in one commit from which the agent collects afterwards (a ~1k-service cluster's cold sync). */
export const LARGE_SYNC_OPS = 20_000;

let gcFunction: GcFunction | undefined;

/**
 * The gc() function, with or without `node --expose-gc`: the agent must behave
 * the same when started as `node src/cli.ts`. Setting the flag only affects
 * contexts created afterwards, so a fresh context hands out its gc() and the
 * flag is reset at once (no other context gets a global gc).
 */
function gcFunctionOnce(): GcFunction {
  if (gcFunction) return gcFunction;
  const exposed = (globalThis as { gc?: unknown }).gc;
  if (typeof exposed === 'function') {
    gcFunction = exposed as GcFunction;
  } else {
    setFlagsFromString('--expose-gc');
    try {
      gcFunction = runInNewContext('gc') as GcFunction;
    } finally {
      setFlagsFromString('--no-expose-gc');
    }
  }
  return gcFunction;
}

/** One full, compacting collection that also shrinks V8's heap; synchronous. */
export function collectGarbage(): void {
  gcFunctionOnce()({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

/**
 * The agent's default after a large sync: let the dataplane trim malloc,
 * collect, then trim again (the collection frees array buffers and V8's
 * worker threads leave their compiler and marking zones in per-thread
 * arenas). The first trim is for the collection's own pages: compacting, it
 * takes new ones for what it moves before it frees the old, and before a
 * large full sync's encoding, where the agent's peak falls, it would add them
 * on top of whatever the arenas hold free by then. At 10k Services x 10
 * endpoints, ten alternated pairs: VmHWM 156-193 MiB (one over 192) against
 * 159-201 (four over), the cold start no longer. Partial: only releaseMemory
 * is read, and a type of that optional member alone would refuse a dataplane
 * without it (TypeScript's weak-type check).
 */
export function releaseMemory(dataplane: Partial<Dataplane>): void {
  dataplane.releaseMemory?.();
  collectGarbage();
  dataplane.releaseMemory?.();
}

/** Whether a sync that committed `ops` operations is worth a collection afterwards. */
export function worthCollecting(ops: number | undefined, first: boolean): boolean {
  return first || (ops ?? 0) >= LARGE_SYNC_OPS;
}

/** How long the agent must have been without a sync before it looks at its memory again. */
export const IDLE_RELEASE_QUIET_MS = 5_000;
/**
 * RSS grown past the level left by the last release that is worth a
 * collection once idle: this much, or this share of that level, whichever is
 * more. At 10k Services the changes of a burst leave ~5 MiB (of ~125), which
 * a full collection of its ~60 MB heap gives back in tens of ms; at 100k the
 * collection takes most of a second, and only a larger growth is worth it.
 */
const IDLE_RELEASE_GROWTH_BYTES = 4 * 2 ** 20;
const IDLE_RELEASE_GROWTH_SHARE = 0.03;

export type ReleaseReason = 'rendering of a large full sync' | 'large sync' | 'planning of a large sync' | 'idle';

export interface MemoryReleaserOptions {
  /** Collect and trim (releaseMemory with the agent's dataplane); `reason` for its log. */
  release: (reason: ReleaseReason) => void;
  /** The process's resident set size in bytes. */
  rss: () => number;
  quietMs?: number;
  /** See IDLE_RELEASE_GROWTH_BYTES and _SHARE. */
  growthBytes?: number;
  growthShare?: number;
}

/**
 * When the agent gives memory back. After the first and every large sync, at
 * once (on the next turn of the event loop). Small syncs leave a little behind
 * each: V8 grows its heap towards its next collection limit and the worker
 * threads' malloc arenas keep what the commits freed, so a 10k-service agent
 * idles ~5 MiB above where it stood after its last release. That is given
 * back once the agent has been quiet for a while, if it has grown enough to be
 * worth a full collection (tens of ms for a large cluster's heap) — never
 * during churn, when V8's own collections bound the heap.
 */
export class MemoryReleaser {
  readonly #options: Required<MemoryReleaserOptions>;
  #afterLastRelease = Number.POSITIVE_INFINITY;
  #soon: ReturnType<typeof setImmediate> | undefined;
  #whileCommitting: ReturnType<typeof setImmediate> | undefined;
  #idle: ReturnType<typeof setTimeout> | undefined;

  constructor(options: MemoryReleaserOptions) {
    this.#options = {
      quietMs: IDLE_RELEASE_QUIET_MS,
      growthBytes: IDLE_RELEASE_GROWTH_BYTES,
      growthShare: IDLE_RELEASE_GROWTH_SHARE,
      ...options,
    };
  }

  /** After every successful sync, with the operations it committed. */
  synced(ops: number | undefined, first: boolean): void {
    this.#cancelIdle();
    if (worthCollecting(ops, first)) {
      // After the callbacks of this sync (logs, syncs$), so that they are not held up.
      this.#soon ??= setImmediate(() => {
        this.#soon = undefined;
        this.#release('large sync');
      });
      return;
    }
    this.#idle = setTimeout(() => {
      this.#idle = undefined;
      const { rss, growthBytes, growthShare } = this.#options;
      const level = this.#afterLastRelease;
      if (rss() - level >= Math.max(growthBytes, growthShare * level)) this.#release('idle');
    }, this.#options.quietMs);
    this.#idle.unref();
  }

  /**
   * A full sync is rendered and planned, and its operations are about to be
   * made, checked and encoded (see Reconciler's onPlanned): for a large one,
   * at once, in the same turn. The render leaves much of what it allocated as
   * garbage in the old generation, and V8 has grown its heap for it; the
   * batch then comes on top of that heap, which is the agent's peak. Collected
   * (shrinking, then malloc trimmed) here, the batch lands on the live heap
   * instead: at 10k Services x 10 endpoints VmHWM 186-198 against 213-239 MiB
   * for a cold start ~100 ms longer, at 100k 956-1,074 against 1,003-1,323 MiB
   * for no longer a start (the encoding then needs no major collection of its
   * own). bench/RESULTS.md, "Met", has every size. A full sync's render keeps no
   * rendering (renderRuleset's keepRenderings; but a small model's, see
   * SMALL_FULL_SYNC_SERVICES): what stays is the model, the claims and the
   * counts. Not an adoption: it holds its renderings for its
   * encoding, its peak is behind it (the kernel's listing beside the render),
   * and its batch was, when this was measured, mostly the hairpin set's
   * rewrite (adoption derives that set now: adoption-listing.ts). Collecting
   * there took 0.1-0.2 s of a 10k restart and 0.5-1.5 s of a 100k one for at
   * most a few tens of MiB of a restart's VmHWM (alternated pairs; README,
   * "What a restart costs").
   */
  planned(kind: SyncReport['kind'], ops: number, adoption: boolean): void {
    if (kind === 'full' && !adoption && ops >= LARGE_SYNC_OPS) this.#release('rendering of a large full sync');
  }

  /**
   * A sync's transaction was handed to the dataplane (see Reconciler's
   * onReleased): for a large one, its operations were made on demand and are
   * gone, and so are the renderings behind them (a full sync's were made for
   * its encoding and dropped, an adoption's are held only weakly from the
   * next turn on), while the kernel works on the batch
   * for a while. Collecting then lowers the peak that the native batch would
   * otherwise add to them (at 100k services x 10 endpoints, by ~140 MiB) and
   * costs the sync nothing on a second core.
   */
  released(ops: number, adoption = false): void {
    // Not an adoption's: its peak is mostly behind it (the kernel's listing and the renderings,
    // before the hand-off) and its batch mostly rewrites what the kernel holds, which the kernel
    // does faster than V8 collects a large heap: collecting held up the sync's end (~250 ms at
    // 44k Services x 1 endpoint, VmHWM the same; at 5,006 x 50, 60-80 ms for 13-23 MiB of peak).
    if (ops < LARGE_SYNC_OPS || adoption) return;
    // A handle of its own: the release after the sync must still come, whichever runs first.
    this.#whileCommitting ??= setImmediate(() => {
      this.#whileCommitting = undefined;
      this.#release('planning of a large sync');
    });
  }

  stop(): void {
    this.#cancelIdle();
    for (const pending of [this.#soon, this.#whileCommitting]) if (pending) clearImmediate(pending);
    this.#soon = undefined;
    this.#whileCommitting = undefined;
  }

  #cancelIdle(): void {
    if (this.#idle) clearTimeout(this.#idle);
    this.#idle = undefined;
  }

  #release(reason: ReleaseReason): void {
    this.#options.release(reason);
    this.#afterLastRelease = this.#options.rss();
  }
}

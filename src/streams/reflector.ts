// client-go reflector semantics over our own list+watch:
//
// - the first list is a WatchList (sendInitialEvents=true,
//   resourceVersionMatch=NotOlderThan, ended by the k8s.io/initial-events-end
//   bookmark) when the server supports it, else a paged list (limit/continue);
//   a server that rejects WatchList (4xx) is not asked again;
// - then a watch from the list's resourceVersion with allowWatchBookmarks and a
//   randomised server-side timeoutSeconds; a clean end re-watches at once from
//   the last resourceVersion seen (bookmarks move it forward);
// - 410 Gone → relist; the sink makes the store equal to the new list, which
//   emits only real differences;
// - anything else (reset, hang caught by the read timeout, 429 + Retry-After,
//   5xx, a failed list, a malformed line) → log, back off with jitter, retry,
//   forever. Backoff resets once a request has delivered data.

import type { Logger } from 'pino';
import type { ApiConnection } from './api/api-connection.ts';
import { listPage, ScratchBuffer, watchStream, type Query, type RequestTimeouts, type WatchEvent } from './api/list-watch.ts';
import { ANNOTATION_INITIAL_EVENTS_END } from '../k8s/well-known.ts';
import { Backoff, defaultBackoff, type BackoffOptions } from './backoff.ts';
import { sleep, systemClock, type Clock } from './clock.ts';
import { assertNever } from '../assert-never.ts';
import { ApiStatusError, ResourceExpiredError, WatchErrorEventError, WatchListIncompleteError } from './api/errors.ts';

/** Where a reflector delivers what it reads; implemented by the informer. */
export interface ReflectorSink {
  /** A full list starts (paged list or WatchList initial events). */
  listStart(): void;
  listItem(raw: unknown): void;
  /** The list is complete: the store must now equal it. */
  listEnd(): void;
  event(type: 'ADDED' | 'MODIFIED' | 'DELETED', raw: unknown): void;
}

export interface ReflectorOptions {
  connection: ApiConnection;
  /** Collection path, e.g. /api/v1/services. */
  path: string;
  labelSelector?: string;
  fieldSelector?: string;
  sink: ReflectorSink;
  logger: Logger;
  clock?: Clock;
  pageSize?: number;
  /** While a list is under way, a "listing" progress line at most this often (default 5 s). */
  progressIntervalMs?: number;
  /** Try the streaming WatchList first (default true). */
  watchList?: boolean;
  /** Server-side watch timeout, drawn uniformly from [min, max] seconds (default 300–600). */
  watchTimeoutSeconds?: [number, number];
  /** No bytes for this long on a watch or list body: treat the connection as hung (default 150 s). */
  readTimeoutMs?: number;
  /** No response headers for this long (default 60 s). */
  headersTimeoutMs?: number;
  backoff?: BackoffOptions;
}

/**
 * Items per list page. Smaller pages keep less parsed-but-unprojected JSON
 * alive at a time (less for the young-generation GC to copy); much smaller
 * ones pay per-request overhead. Measured with bench/streams.ts (see there).
 */
const DEFAULT_PAGE_SIZE = 250;

const DEFAULT_LIST_PROGRESS_MS = 5_000;

/**
 * "listing" lines while a large list is under way: a big cluster's first
 * list can take a minute, and the agent programs nothing until it is done.
 * The list counts into `items` and `pages`; report() logs at most once per
 * interval.
 */
class ListProgress {
  items = 0;
  pages = 0;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #intervalMs: number;
  #next: number;
  constructor(clock: Clock, logger: Logger, intervalMs: number) {
    this.#clock = clock;
    this.#logger = logger;
    this.#intervalMs = intervalMs;
    this.#next = clock.now() + intervalMs;
  }

  /** Where a line may be due (after a page, or one WatchList event); `remaining` as the server estimates it. */
  report(remaining?: number): void {
    const now = this.#clock.now();
    if (now < this.#next) return;
    this.#next = now + this.#intervalMs;
    this.#logger.info(
      { items: this.items, ...(this.pages ? { pages: this.pages } : {}), ...(remaining !== undefined ? { remaining } : {}) },
      'listing',
    );
  }
}

/**
 * Hands a parsed page's items to the sink one by one, letting go of each raw
 * object as soon as it is projected: the page array would otherwise keep the
 * whole parsed page alive, and every scavenge during the page would copy it.
 */
export function deliverListItems(items: unknown[], sink: Pick<ReflectorSink, 'listItem'>): number {
  const n = items.length;
  for (let i = 0; i < n; i++) {
    const item = items[i];
    items[i] = undefined;
    sink.listItem(item);
  }
  return n;
}

function isClientRejection(e: unknown): boolean {
  return e instanceof ApiStatusError && e.status >= 400 && e.status < 500 && e.status !== 429 && e.status !== 408;
}

export class Reflector {
  private readonly o: ReflectorOptions;
  private readonly clock: Clock;
  private readonly backoff: Backoff;
  private readonly abort = new AbortController();
  private readonly timeouts: RequestTimeouts;
  private watchListEnabled: boolean;
  private running: Promise<void> | undefined;
  /** Last resourceVersion seen; '' forces a list. */
  private rv = '';
  private needList = true;
  /** Set while a WatchList stream is still delivering its initial events: their progress. */
  private initialProgress: ListProgress | undefined;
  private delivered = false;

  constructor(o: ReflectorOptions) {
    this.o = o;
    this.clock = o.clock ?? systemClock;
    this.backoff = new Backoff(o.backoff ?? defaultBackoff, this.clock);
    this.watchListEnabled = o.watchList ?? true;
    this.timeouts = { headersTimeoutMs: o.headersTimeoutMs ?? 60_000, bodyTimeoutMs: o.readTimeoutMs ?? 150_000 };
  }

  get resourceVersion(): string {
    return this.rv;
  }

  start(): void {
    this.running ??= this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort(new Error('reflector stopped'));
    await this.running;
  }

  private selectors(): Query {
    return { labelSelector: this.o.labelSelector, fieldSelector: this.o.fieldSelector };
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    let fallBackToList = false;
    let consecutiveExpired = 0;
    while (!signal.aborted) {
      let usedWatchList = false;
      try {
        this.delivered = false;
        if (this.needList && this.watchListEnabled && !fallBackToList) {
          usedWatchList = true;
          await this.watch(true);
        } else if (this.needList) {
          await this.pagedList();
          fallBackToList = false;
          continue;
        } else {
          await this.watch(false);
        }
        if (this.needList) throw new WatchListIncompleteError();
        consecutiveExpired = 0;
        this.backoff.reset();
        this.o.logger.debug({ rv: this.rv }, 'watch ended by the server; re-watching');
      } catch (e) {
        if (signal.aborted) break;
        if (this.delivered) this.backoff.reset();
        if (e instanceof ResourceExpiredError || (e instanceof WatchErrorEventError && e.status === 410)) {
          this.needList = true;
          this.rv = '';
          this.o.logger.info({ err: e.message }, 'resourceVersion expired (410); relisting');
          // client-go relists at once; only repeated 410s back off.
          if (consecutiveExpired++ === 0) continue;
        } else if (usedWatchList && isClientRejection(e)) {
          this.watchListEnabled = false;
          this.o.logger.info({ err: (e as Error).message }, 'server rejects WatchList; using paged lists');
          continue;
        } else if (usedWatchList) {
          fallBackToList = true;
        }
        const retryAfter = e instanceof ApiStatusError ? e.retryAfterMs : undefined;
        const delay = this.backoff.next(retryAfter ?? 0);
        this.o.logger.warn(
          {
            err: describe(e),
            code: (e as { code?: string }).code,
            status: e instanceof ApiStatusError ? e.status : undefined,
            delayMs: delay,
            attempt: this.backoff.failures,
            listing: this.needList,
          },
          'list/watch failed; retrying after backoff',
        );
        try {
          await sleep(this.clock, delay, signal);
        } catch {
          break;
        }
      }
    }
  }

  private async pagedList(): Promise<void> {
    const limit = this.o.pageSize ?? DEFAULT_PAGE_SIZE;
    let cont = '';
    const progress = this.listProgress();
    // Held for this list only: a page's worth of bytes is not worth keeping between relists.
    const scratch = new ScratchBuffer();
    this.o.sink.listStart();
    for (;;) {
      const page = await this.listOnePage(limit, cont, scratch);
      progress.pages++;
      progress.items += page.items;
      if (!page.continueToken) {
        this.rv = page.resourceVersion;
        break;
      }
      progress.report(page.remainingItemCount);
      cont = page.continueToken;
    }
    this.o.sink.listEnd();
    this.needList = false;
    this.backoff.reset();
    this.o.logger.info({ rv: this.rv, pages: progress.pages, items: progress.items }, 'listed');
  }

  private listProgress(): ListProgress {
    return new ListProgress(this.clock, this.o.logger, this.o.progressIntervalMs ?? DEFAULT_LIST_PROGRESS_MS);
  }

  /**
   * Fetches one page and hands its items to the sink. A separate frame on
   * purpose: the parsed page (several times its bytes in objects) becomes
   * garbage when this returns, instead of staying reachable from the list
   * loop while the next page is fetched, where every scavenge would copy it
   * and promote it to the old generation.
   */
  private async listOnePage(
    limit: number,
    cont: string,
    scratch: ScratchBuffer,
  ): Promise<{ items: number; continueToken: string; resourceVersion: string; remainingItemCount?: number }> {
    const page = await listPage(
      this.o.connection,
      this.o.path,
      { ...this.selectors(), limit, continue: cont || undefined },
      this.timeouts,
      this.abort.signal,
      scratch,
    );
    this.delivered = true;
    const n = deliverListItems(page.items, this.o.sink);
    return {
      items: n,
      continueToken: page.continueToken,
      resourceVersion: page.resourceVersion,
      remainingItemCount: page.remainingItemCount,
    };
  }

  private async watch(initial: boolean): Promise<void> {
    const [min, max] = this.o.watchTimeoutSeconds ?? [300, 600];
    const timeoutSeconds = Math.floor(min + (max - min + 1) * this.clock.random());
    const query: Query = { ...this.selectors(), allowWatchBookmarks: true, timeoutSeconds };
    if (initial) {
      query.sendInitialEvents = true;
      query.resourceVersionMatch = 'NotOlderThan';
      this.o.sink.listStart();
      this.initialProgress = this.listProgress();
    } else {
      query.resourceVersion = this.rv;
    }
    try {
      await watchStream(this.o.connection, this.o.path, query, this.timeouts, this.abort.signal, (ev) => this.onEvent(ev));
    } finally {
      this.initialProgress = undefined;
    }
  }

  private onEvent(ev: WatchEvent): void {
    this.delivered = true;
    const meta = ev.object.metadata as { resourceVersion?: unknown; annotations?: Record<string, unknown> } | undefined;
    const rv = typeof meta?.resourceVersion === 'string' ? meta.resourceVersion : undefined;
    switch (ev.type) {
      case 'ERROR': {
        const st = ev.object as { code?: unknown; message?: unknown };
        const code = typeof st.code === 'number' ? st.code : 0;
        throw new WatchErrorEventError(code, typeof st.message === 'string' ? st.message : 'watch error');
      }
      case 'BOOKMARK':
        if (rv) this.rv = rv;
        if (this.initialProgress && meta?.annotations?.[ANNOTATION_INITIAL_EVENTS_END] === 'true') {
          const { items } = this.initialProgress;
          this.initialProgress = undefined;
          this.needList = false;
          this.o.sink.listEnd();
          this.o.logger.info({ rv: this.rv, items }, 'listed (WatchList)');
        }
        return;
      case 'ADDED':
      case 'MODIFIED':
      case 'DELETED':
        if (rv) this.rv = rv;
        if (this.initialProgress) {
          if (ev.type !== 'DELETED') {
            this.o.sink.listItem(ev.object);
            this.initialProgress.items++;
            this.initialProgress.report();
          }
        } else {
          this.o.sink.event(ev.type, ev.object);
        }
        return;
      default:
        assertNever(ev.type); // watchStream lets no other type through
    }
  }
}

function describe(e: unknown): string {
  if (e instanceof Error) {
    const cause = (e as { cause?: unknown }).cause;
    return cause instanceof Error ? `${e.message} (${cause.message})` : e.message;
  }
  return String(e);
}

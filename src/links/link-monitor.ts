// The node's network interfaces as observables, fed by the addon's rtnetlink
// monitor. The native side reads the socket off the JS thread and hands over
// batches; folding them into state is the pure applyLinkBatch.
//
// Lifetime: a started monitor keeps itself alive (it is not collected while its
// subscribers wait). It holds the event loop until the initial dump has been
// delivered, and after that, unless `keepAlive` is set, it does not keep the
// process alive: like an unref'd timer, it only observes (a process whose only
// work is waiting for link events sets keepAlive). stop() releases the socket
// and the reader thread; an exiting process or worker releases them too.
// A monitor is single-use: start() once, stop() once (idempotent).

import { type Observable, ReplaySubject, Subject } from '../rx.ts';
import { loadAddon } from '../native/addon.ts';
import { applyLinkBatch, type LinkEvent, type LinkMap } from './link-state.ts';
import { LinkMonitorError } from './link-monitor-error.ts';
import type {
  NativeLinkBatch,
  NativeLinkMonitor,
  NativeLinkMonitorConstructor,
  NativeLinkMonitorStats,
} from '../native/link-monitor-types.ts';

/**
 * 4 MiB: a burst of pod churn (each veth costs several messages of ~1-2 KiB)
 * fits without an overrun; memory is only used while events queue up. Setting
 * more than net.core.rmem_max needs CAP_NET_ADMIN, which the agent has anyway.
 */
const DEFAULT_RECEIVE_BUFFER_BYTES = 4 * 1024 * 1024;

export interface LinkMonitorOptions {
  /** Network namespace path (e.g. /var/run/netns/NAME); default: this process's. */
  netns?: string;
  /** Socket receive buffer; tests make it tiny to force overruns. */
  receiveBufferBytes?: number;
  /** Keep the process alive while running (default false: only until the initial dump). */
  keepAlive?: boolean;
  /** The native class; default: the addon's, loaded through src/native/addon.ts. */
  native?: NativeLinkMonitorConstructor;
}

type Phase = 'new' | 'running' | 'stopped';

export class LinkMonitor {
  /**
   * The current interfaces by ifindex: first after the initial dump, then after
   * every batch of events that changed something. Replays the latest state to
   * late subscribers; completes on stop(), errors if the socket fails.
   */
  readonly links$: Observable<LinkMap>;
  /**
   * What each batch changed (added / changed / removed, and `resync` before the
   * diff of a re-dump). Hot: only what happens after subscribing.
   */
  readonly events$: Observable<LinkEvent>;

  readonly #native: NativeLinkMonitor;
  readonly #links = new ReplaySubject<LinkMap>(1);
  readonly #events = new Subject<LinkEvent>();
  #state: LinkMap | undefined;
  #phase: Phase = 'new';

  constructor(opts: LinkMonitorOptions = {}) {
    const Native = opts.native ?? loadAddon().LinkMonitor;
    // Bad option types or values throw the addon's TypeError (ERR_INVALID_ARG_*).
    this.#native = new Native({
      netns: opts.netns,
      receiveBufferBytes: opts.receiveBufferBytes ?? DEFAULT_RECEIVE_BUFFER_BYTES,
      keepAlive: opts.keepAlive ?? false,
    });
    this.links$ = this.#links.asObservable();
    this.events$ = this.#events.asObservable();
  }

  /** Opens the socket and requests the initial dump; throws LinkMonitorError. */
  start(): this {
    if (this.#phase !== 'new') {
      throw new LinkMonitorError(`LinkMonitor cannot start: it is ${this.#phase}`, 'ERR_LINK_MONITOR_STATE');
    }
    try {
      this.#native.start(
        (batch) => this.#onBatch(batch),
        (error) => this.#onError(error),
      );
    } catch (e) {
      throw LinkMonitorError.fromNative(e, 'ERR_LINK_MONITOR_OPEN');
    }
    this.#phase = 'running';
    return this;
  }

  /** Releases the socket and thread; no emission follows. Idempotent. */
  stop(): void {
    if (this.#phase === 'stopped') return;
    this.#phase = 'stopped';
    this.#native.stop();
    this.#events.complete();
    this.#links.complete();
  }

  get running(): boolean {
    return this.#phase === 'running';
  }

  /** The latest state; undefined until the initial dump arrived. */
  get links(): LinkMap | undefined {
    return this.#state;
  }

  stats(): NativeLinkMonitorStats {
    return this.#native.stats();
  }

  #onBatch(batch: NativeLinkBatch): void {
    const { links, events } = applyLinkBatch(this.#state, batch);
    if (links === this.#state) return;
    // State first, so that event subscribers reading `links` see it.
    this.#state = links;
    for (const event of events) {
      if (this.#phase !== 'running') return;
      this.#events.next(event);
    }
    if (this.#phase === 'running') this.#links.next(links);
  }

  #onError(error: Error): void {
    if (this.#phase !== 'running') return;
    this.#phase = 'stopped';
    const wrapped = LinkMonitorError.fromNative(error, 'ERR_LINK_MONITOR_SOCKET');
    this.#events.error(wrapped);
    this.#links.error(wrapped);
  }
}

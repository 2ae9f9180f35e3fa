// A link source that outlives its monitor: when the rtnetlink monitor fails
// (its socket errs, or it cannot be opened again), a new one is started after
// a backoff, and its first state (a full dump) takes over. Without it, one
// socket error would leave the flowtable's devices as they were for the rest
// of the agent's life: new pod interfaces never offloaded, and no sign of it
// but one log line.

import { defer, ReplaySubject, retry, type SchedulerLike, type Subscription, timer } from '../rx.ts';
import type { Logger } from '../observability/logger.ts';
import { backoffDelay } from '../reconciler/sync-runner.ts';
import type { LinkMap } from './link-state.ts';
import type { LinkSource } from './sysfs-links.ts';

export interface RestartOptions {
  logger: Logger;
  /** The wait before the first new monitor; it doubles up to maxDelayMs, and starts over once a monitor has delivered. */
  initialDelayMs?: number;
  maxDelayMs?: number;
  scheduler?: SchedulerLike | undefined;
  /** Called each time a failed monitor is replaced (a metric). */
  onRestart?: () => void;
}

const LINK_MONITOR_RESTART_INITIAL_MS = 1_000;
const LINK_MONITOR_RESTART_MAX_MS = 60_000;

export function restartingLinkSource(make: () => LinkSource, o: RestartOptions): LinkSource {
  const backoff = { initialMs: o.initialDelayMs ?? LINK_MONITOR_RESTART_INITIAL_MS, maxMs: o.maxDelayMs ?? LINK_MONITOR_RESTART_MAX_MS };
  const links = new ReplaySubject<LinkMap>(1);
  let current: LinkSource | undefined;
  let running: Subscription | undefined;
  const stopCurrent = () => {
    const c = current;
    current = undefined;
    c?.stop();
  };
  const monitored = defer(() => {
    const source = make();
    current = source;
    source.start();
    return source.links$;
  }).pipe(
    retry({
      resetOnSuccess: true,
      delay: (err: unknown, attempt: number) => {
        stopCurrent();
        const waitMs = backoffDelay(attempt, backoff);
        o.logger.error({ err, restartInMs: waitMs }, 'link monitor failed: flowtable devices stay as they are until a new one has started');
        o.onRestart?.();
        return timer(waitMs, o.scheduler);
      },
    }),
  );
  return {
    links$: links.asObservable(),
    start() {
      running ??= monitored.subscribe({ next: (m) => links.next(m), complete: () => links.complete() });
    },
    stop() {
      running?.unsubscribe();
      stopCurrent();
      links.complete();
    },
  };
}

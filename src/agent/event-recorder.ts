// Kubernetes Events (events.k8s.io/v1) from the agent: the start-up event on
// the Node, as kube-proxy posts it, and Warnings on Services (a health-check
// port that cannot be opened, a Service port whose rules were refused).
//
// Events are a courtesy to the operator, never part of proxying:
// - record() returns at once; posts go out one at a time from a bounded
//   queue (a full queue drops the newest), so no sync ever waits on the API;
// - the same event (object, type, reason, action, note) is sent once per
//   dedupe window (client-go's events/v1 broadcaster folds repeats within
//   6 minutes into a series; we simply skip them);
// - per object, a token bucket as client-go's spam filter: a burst of 25,
//   then one per 5 minutes;
// - an API server that refuses them (403 without RBAC, 5xx, unreachable) is
//   logged once at warn, then at debug, and counted: never fatal.
// Time comes in through `now`, so tests drive the limits without waiting.

import type { EventObject } from '../streams/api/post-event.ts';
import type { Logger } from '../observability/logger.ts';

export type EventType = 'Normal' | 'Warning';
export type EventOutcome = 'sent' | 'deduplicated' | 'rate_limited' | 'failed';

export interface ObjectRef {
  kind: 'Node' | 'Service';
  name: string;
  /** Empty for cluster-scoped objects (the Node). */
  namespace?: string;
  uid?: string;
}

export interface EventRecorderOptions {
  /** Sends one Event; undefined when there is no API server (manifests): events are only logged. */
  post: ((event: EventObject) => Promise<void>) | undefined;
  logger: Logger;
  reportingController: string;
  reportingInstance: string;
  now?: () => number;
  onOutcome?: (type: EventType, outcome: EventOutcome) => void;
  dedupeWindowMs?: number;
  burst?: number;
  refillMs?: number;
  maxQueue?: number;
}

const DEFAULTS = { dedupeWindowMs: 6 * 60_000, burst: 25, refillMs: 5 * 60_000, maxQueue: 100 };
/** events.k8s.io/v1 refuses a note over 1 KiB. */
const MAX_NOTE_BYTES = 1024;

function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

function truncateBytes(text: string, max: number): string {
  if (Buffer.byteLength(text) <= max) return text;
  let out = Buffer.from(text)
    .subarray(0, max - 3)
    .toString('utf8');
  // A cut multibyte character decodes as U+FFFD: drop it.
  out = out.replace(/\uFFFD$/, '');
  return `${out}...`;
}

export class EventRecorder {
  readonly #o: EventRecorderOptions & typeof DEFAULTS;
  readonly #now: () => number;
  readonly #lastSent = new Map<string, number>();
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  readonly #queue: EventObject[] = [];
  #sending: Promise<void> | undefined;
  #seq = 0;
  #warnedFailure = false;
  #closed = false;

  constructor(options: EventRecorderOptions) {
    this.#o = { ...DEFAULTS, ...options };
    this.#now = options.now ?? Date.now;
  }

  /** kube-proxy's start-up event: Normal, reason Starting, action StartKubeProxy, on this Node. */
  recordStartup(nodeName: string): void {
    this.record({ kind: 'Node', name: nodeName, uid: nodeName }, 'Normal', 'Starting', 'StartKubeProxy', '');
  }

  /** A Warning on a Service (e.g. its rules were refused, its health-check port could not open). */
  recordServiceWarning(service: { namespace: string; name: string }, reason: string, message: string, action = 'Sync'): void {
    this.record({ kind: 'Service', namespace: service.namespace, name: service.name }, 'Warning', reason, action, message);
  }

  record(regarding: ObjectRef, type: EventType, reason: string, action: string, note: string): void {
    if (this.#closed) return;
    const now = this.#now();
    const objectKey = `${regarding.kind}/${regarding.namespace ?? ''}/${regarding.name}`;
    const key = `${objectKey}\u0000${type}\u0000${reason}\u0000${action}\u0000${note}`;
    const last = this.#lastSent.get(key);
    if (last !== undefined && now - last < this.#o.dedupeWindowMs) {
      this.#outcome(type, 'deduplicated');
      return;
    }
    if (!this.#take(objectKey, now) || this.#queue.length >= this.#o.maxQueue) {
      this.#outcome(type, 'rate_limited');
      return;
    }
    this.#lastSent.set(key, now);
    this.#forgetOld(now);
    if (this.#o.post === undefined) {
      this.#o.logger.debug({ event: { regarding, type, reason, action, note } }, 'event (no API server to post it to)');
      return;
    }
    this.#queue.push(this.#eventObject(regarding, type, reason, action, note, now));
    this.#sending ??= this.#drain();
  }

  /** Resolves once every queued event has been tried. */
  async flush(): Promise<void> {
    while (this.#sending) await this.#sending;
  }

  /** Drops what is still queued; an in-flight post is awaited. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#queue.length = 0;
    await this.flush();
  }

  #take(objectKey: string, now: number): boolean {
    const { burst, refillMs } = this.#o;
    const b = this.#buckets.get(objectKey) ?? { tokens: burst, at: now };
    b.tokens = Math.min(burst, b.tokens + (now - b.at) / refillMs);
    b.at = now;
    this.#buckets.set(objectKey, b);
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  /** Keeps the dedupe and bucket maps to what can still matter. */
  #forgetOld(now: number): void {
    if (this.#lastSent.size < 1024) return;
    for (const [k, at] of this.#lastSent) if (now - at >= this.#o.dedupeWindowMs) this.#lastSent.delete(k);
    for (const [k, b] of this.#buckets) if (b.tokens + (now - b.at) / this.#o.refillMs >= this.#o.burst) this.#buckets.delete(k);
  }

  #eventObject(regarding: ObjectRef, type: EventType, reason: string, action: string, note: string, now: number): EventObject {
    // client-go names an Event <object>.<nanoseconds in hex>; the sequence keeps two in one ms apart.
    const nanos = BigInt(now) * 1_000_000n + BigInt(this.#seq++ % 1_000_000);
    return {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      // Cluster-scoped objects' events go to "default", as client-go puts them.
      metadata: { name: `${regarding.name}.${nanos.toString(16)}`, namespace: regarding.namespace || 'default' },
      eventTime: microTime(now),
      reportingController: this.#o.reportingController,
      reportingInstance: this.#o.reportingInstance,
      action,
      reason,
      type,
      note: truncateBytes(note, MAX_NOTE_BYTES),
      regarding: {
        apiVersion: 'v1',
        kind: regarding.kind,
        name: regarding.name,
        ...(regarding.namespace ? { namespace: regarding.namespace } : {}),
        ...(regarding.uid ? { uid: regarding.uid } : {}),
      },
    };
  }

  async #drain(): Promise<void> {
    try {
      for (let ev = this.#queue.shift(); ev !== undefined; ev = this.#queue.shift()) {
        const type = ev.type;
        try {
          await this.#o.post!(ev);
          this.#outcome(type, 'sent');
        } catch (err) {
          this.#outcome(type, 'failed');
          const fields = { err, reason: ev.reason, regarding: ev.regarding };
          if (this.#warnedFailure) this.#o.logger.debug(fields, 'could not post an event');
          else this.#o.logger.warn(fields, 'could not post an event (further failures are logged at debug level)');
          this.#warnedFailure = true;
        }
      }
    } finally {
      this.#sending = undefined;
    }
  }

  #outcome(type: EventType, outcome: EventOutcome): void {
    this.#o.onOutcome?.(type, outcome);
  }
}

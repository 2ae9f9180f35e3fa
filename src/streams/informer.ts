// One resource's pipeline: raw objects (from a reflector or the manifest
// source) → validated projection → Store → StoreEvents.
//
// Invalid objects: logged once per key and reason, and left out. If a valid
// version of the same key was stored before, it is removed (a delete event):
// the cluster's current statement about that object is the invalid one, and
// kube-proxy would likewise treat it as absent rather than keep programming a
// version the cluster no longer holds.

import { BehaviorSubject, type Observable } from '../rx.ts';
import type { Logger } from 'pino';
import type { StringPool } from './intern.ts';
import { joinKey } from '../k8s/object-key.ts';
import { KeyedMap } from './keyed-map.ts';
import type { ReflectorSink } from './reflector.ts';
import { ReportOnce } from './report-once.ts';
import { Store, type Versioned } from './store.ts';
import { rawKey, type Projection } from './validate-common.ts';

export type Projector<T> = (raw: unknown, pool: StringPool) => Projection<T>;

export interface InformerOptions<T> {
  kind: string;
  project: Projector<T>;
  /** A kind without namespaces (Node): stored under the namespace ''. */
  clusterScoped?: boolean;
  pool: StringPool;
  logger: Logger;
  /** Local filter applied after projection (the manifest source's selectors); raw object in. */
  accept?: (raw: unknown) => boolean;
}

export class Informer<T extends Versioned & { name: string }> implements ReflectorSink {
  readonly store = new Store<T>();
  private readonly synced = new BehaviorSubject(false);
  readonly synced$: Observable<boolean> = this.synced.asObservable();
  private readonly o: InformerOptions<T>;
  private readonly reports: ReportOnce;
  private pending: KeyedMap<T> | undefined;
  /** Key of the object accept() last refused. */
  private lastKey = '';

  constructor(o: InformerOptions<T>) {
    this.o = o;
    this.reports = new ReportOnce(o.logger);
  }

  get isSynced(): boolean {
    return this.synced.value;
  }

  /** Invalid objects (and invalid parts left out of valid ones) reported since the start, each key and reason once while it lasts. */
  get invalidReported(): number {
    return this.reports.reported;
  }

  private namespaceOf(value: T): string {
    return this.o.clusterScoped ? '' : (value as unknown as { namespace: string }).namespace;
  }

  /**
   * Projects and validates. Returns the value; undefined (logged once, its
   * key in `this.lastKey`) when invalid or filtered out. No key string for a
   * valid object unless there is something to report or forget: this runs
   * for every object of every list.
   */
  private accept(raw: unknown): T | undefined {
    if (this.o.accept && !this.o.accept(raw)) {
      this.lastKey = rawKey(raw);
      return undefined;
    }
    const p = this.o.project(raw, this.o.pool);
    if (!p.ok) {
      const key = rawKey(raw);
      this.lastKey = key;
      this.reports.report(key, p.reason);
      return undefined;
    }
    if (this.reports.size !== 0 || p.dropped) {
      const key = joinKey(this.namespaceOf(p.value), p.value.name);
      this.reports.forget(key);
      if (p.dropped) for (const reason of p.dropped) this.reports.report(key, reason, {}, 'invalid part left out');
    }
    return p.value;
  }

  listStart(): void {
    this.pending = new KeyedMap();
  }

  listItem(raw: unknown): void {
    const value = this.accept(raw);
    if (value !== undefined) this.pending?.set(this.namespaceOf(value), value.name, value);
  }

  listEnd(): void {
    const next = this.pending ?? new KeyedMap<T>();
    this.pending = undefined;
    const changes = this.store.replace(next);
    this.o.logger.debug({ size: next.size, changes }, 'store replaced');
    if (!this.synced.value) this.synced.next(true);
  }

  event(type: 'ADDED' | 'MODIFIED' | 'DELETED', raw: unknown): void {
    if (type === 'DELETED') {
      const key = rawKey(raw);
      this.store.delete(key);
      this.reports.forget(key);
      return;
    }
    const value = this.accept(raw);
    if (value === undefined) this.store.delete(this.lastKey);
    else this.store.put(this.namespaceOf(value), value.name, value);
  }

  /** Replaces the whole content at once (the manifest source). */
  replaceAll(raws: Iterable<unknown>): void {
    this.listStart();
    for (const r of raws) this.listItem(r);
    this.listEnd();
  }

  complete(): void {
    this.store.complete();
    this.synced.complete();
  }
}

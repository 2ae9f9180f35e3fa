// A keyed store of projections that turns list results and watch events into
// the StoreEvents downstream sees, emitting only real changes:
// - an object whose resourceVersion is unchanged is not re-emitted;
// - an object whose projection is unchanged apart from its resourceVersion
//   (a status-only update, a relist after 410) is updated silently;
// - replace() (a relist) emits upserts for what changed and deletes for what
//   vanished, never a delete+add of everything.

import { Subject, type Observable } from '../rx.ts';
import type { StoreEvent } from '../k8s/types.ts';
import { joinKey, splitKey } from '../k8s/object-key.ts';
import { KeyedMap } from './keyed-map.ts';

export interface Versioned {
  resourceVersion: string;
}

/** Read side shared by every store: what the model may query at any time. */
export interface StoreView<T> {
  get(key: string): T | undefined;
  has(key: string): boolean;
  readonly size: number;
  values(): IterableIterator<T>;
  entries(): IterableIterator<[string, T]>;
}

function sameIgnoringVersion(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameIgnoringVersion(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  let n = 0;
  for (const k in ao) {
    if (ao[k] === undefined) continue;
    n++;
    if (k === 'resourceVersion') continue;
    if (!sameIgnoringVersion(ao[k], bo[k])) return false;
  }
  let m = 0;
  for (const k in bo) if (bo[k] !== undefined) m++;
  return n === m;
}

export class Store<T extends Versioned> implements StoreView<T> {
  private map = new KeyedMap<T>();
  private readonly subject = new Subject<StoreEvent<T>>();
  /** Live changes only; see `changes$` on the streams for snapshot + changes. */
  readonly events$: Observable<StoreEvent<T>> = this.subject.asObservable();

  get(key: string): T | undefined {
    const [namespace, name] = splitKey(key);
    return this.map.get(namespace, name);
  }
  has(key: string): boolean {
    return this.get(key) !== undefined;
  }
  get size(): number {
    return this.map.size;
  }
  values(): IterableIterator<T> {
    return this.map.values();
  }
  entries(): IterableIterator<[string, T]> {
    return this.map.entries();
  }

  upsert(key: string, object: T): boolean {
    const [namespace, name] = splitKey(key);
    return this.put(namespace, name, object);
  }

  /** upsert() by namespace and name ('' for cluster-scoped objects). */
  put(namespace: string, name: string, object: T): boolean {
    const old = this.map.get(namespace, name);
    if (old !== undefined) {
      if (old.resourceVersion !== '' && old.resourceVersion === object.resourceVersion) return false;
      if (sameIgnoringVersion(old, object)) {
        this.map.set(namespace, name, object);
        return false;
      }
    }
    this.map.set(namespace, name, object);
    this.upserted(namespace, name, object);
    return true;
  }

  delete(key: string): boolean {
    const [namespace, name] = splitKey(key);
    return this.remove(namespace, name);
  }

  /** delete() by namespace and name. */
  remove(namespace: string, name: string): boolean {
    const old = this.map.delete(namespace, name);
    if (old === undefined) return false;
    // An event (and its joined key) only for someone to receive it.
    if (this.subject.observed) this.subject.next({ type: 'delete', key: joinKey(namespace, name), object: old });
    return true;
  }

  private upserted(namespace: string, name: string, object: T): void {
    if (this.subject.observed) this.subject.next({ type: 'upsert', key: joinKey(namespace, name), object });
  }

  /** Makes the store equal to `next` (which it may keep: the caller hands it over), emitting only the differences. Returns how many. */
  replace(next: KeyedMap<T>): number {
    if (this.map.size === 0) {
      // The first list: adopt the map instead of copying it entry by entry.
      this.map = next;
      if (this.subject.observed) {
        next.forEach((object, namespace, name) => {
          this.upserted(namespace, name, object);
        });
      }
      return next.size;
    }
    let changes = 0;
    const gone: [string, string][] = [];
    this.map.forEach((_object, namespace, name) => {
      if (next.get(namespace, name) === undefined) gone.push([namespace, name]);
    });
    for (const [namespace, name] of gone) if (this.remove(namespace, name)) changes++;
    next.forEach((object, namespace, name) => {
      if (this.put(namespace, name, object)) changes++;
    });
    return changes;
  }

  complete(): void {
    this.subject.complete();
  }
}

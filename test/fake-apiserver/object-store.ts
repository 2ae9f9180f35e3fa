// The fake API server's etcd: objects per resource, one global
// resourceVersion counter, an ordered event history for watches, and
// compaction (events older than the compaction point are gone → 410).
//
// Objects are immutable once stored; each version keeps its JSON text so
// lists and watches are served by string concatenation.

import { apiVersionOf, resourceByName, type ResourceName } from './resources.ts';

export type K8sObject = {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string; labels?: Record<string, string>; [k: string]: unknown };
  [k: string]: unknown;
};

export interface Version {
  obj: K8sObject;
  json: string;
  rv: number;
}

export interface HistoryEvent {
  rv: number;
  resource: ResourceName;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  /** The new version; for DELETED the object as deleted (with the deletion's rv). */
  current: Version;
  /** The version before this change (MODIFIED, DELETED). */
  previous?: Version;
}

export class ConflictError extends Error {
  readonly code: 'AlreadyExists' | 'NotFound';
  constructor(code: 'AlreadyExists' | 'NotFound', message: string) {
    super(message);
    this.code = code;
  }
}

export function objectKey(o: { metadata: { namespace?: string; name: string } }): string {
  return o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;
}

export class ObjectStore {
  private rv = 1;
  private readonly objects = new Map<ResourceName, Map<string, Version>>([
    ['services', new Map()],
    ['endpointslices', new Map()],
    ['nodes', new Map()],
  ]);
  private history: HistoryEvent[] = [];
  /** Events with rv ≤ this are no longer in history. */
  compactedRv = 0;
  private readonly listeners = new Set<(ev: HistoryEvent) => void>();
  private readonly maxHistory: number;

  constructor(maxHistory = 200_000) {
    this.maxHistory = maxHistory;
  }

  get resourceVersion(): number {
    return this.rv;
  }

  onEvent(fn: (ev: HistoryEvent) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  all(resource: ResourceName): Map<string, Version> {
    return this.objects.get(resource)!;
  }

  get(resource: ResourceName, key: string): Version | undefined {
    return this.all(resource).get(key);
  }

  private version(resource: ResourceName, obj: K8sObject, rv: number): Version {
    const def = resourceByName(resource);
    const stamped: K8sObject = {
      ...obj,
      apiVersion: apiVersionOf(def),
      kind: def.kind,
      metadata: { ...obj.metadata, resourceVersion: String(rv) },
    };
    return { obj: stamped, json: JSON.stringify(stamped), rv };
  }

  private record(ev: HistoryEvent): void {
    this.history.push(ev);
    if (this.history.length > this.maxHistory) {
      const drop = this.history.length - this.maxHistory;
      this.compactedRv = this.history[drop - 1]!.rv;
      this.history = this.history.slice(drop);
    }
    for (const fn of this.listeners) fn(ev);
  }

  create(resource: ResourceName, obj: K8sObject): Version {
    const key = objectKey(obj);
    if (this.all(resource).has(key)) throw new ConflictError('AlreadyExists', `${resource} ${key} exists`);
    const v = this.version(resource, { ...obj, metadata: { uid: `uid-${this.rv + 1}`, ...obj.metadata } }, ++this.rv);
    this.all(resource).set(key, v);
    this.record({ rv: v.rv, resource, type: 'ADDED', current: v });
    return v;
  }

  /** Replaces the object (metadata.resourceVersion in `obj` is ignored). */
  update(resource: ResourceName, obj: K8sObject): Version {
    const key = objectKey(obj);
    const previous = this.all(resource).get(key);
    if (!previous) throw new ConflictError('NotFound', `${resource} ${key} not found`);
    const v = this.version(resource, obj, ++this.rv);
    this.all(resource).set(key, v);
    this.record({ rv: v.rv, resource, type: 'MODIFIED', current: v, previous });
    return v;
  }

  /** Sets labels; a null value removes the label. */
  patchLabels(resource: ResourceName, key: string, labels: Record<string, string | null>): Version {
    const previous = this.all(resource).get(key);
    if (!previous) throw new ConflictError('NotFound', `${resource} ${key} not found`);
    const next: Record<string, string> = { ...(previous.obj.metadata.labels ?? {}) };
    for (const [k, val] of Object.entries(labels)) {
      if (val === null) delete next[k];
      else next[k] = val;
    }
    return this.update(resource, { ...previous.obj, metadata: { ...previous.obj.metadata, labels: next } });
  }

  delete(resource: ResourceName, key: string): Version {
    const previous = this.all(resource).get(key);
    if (!previous) throw new ConflictError('NotFound', `${resource} ${key} not found`);
    this.all(resource).delete(key);
    const v = this.version(resource, previous.obj, ++this.rv);
    this.record({ rv: v.rv, resource, type: 'DELETED', current: v, previous });
    return v;
  }

  /** Forgets all history up to now: watches from older versions get 410. */
  compact(): number {
    this.compactedRv = this.rv;
    this.history = [];
    return this.rv;
  }

  /** Events after `rv`, or undefined when some of them were compacted away. */
  eventsSince(rv: number): HistoryEvent[] | undefined {
    if (rv < this.compactedRv) return undefined;
    let lo = 0;
    let hi = this.history.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.history[mid]!.rv <= rv) lo = mid + 1;
      else hi = mid;
    }
    return this.history.slice(lo);
  }
}

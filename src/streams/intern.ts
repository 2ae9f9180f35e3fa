// Sharing of values repeated across thousands of objects. JSON.parse gives
// every occurrence its own copy; the pools keep one:
// - strings (zones, node names, namespaces, port names), never addresses or
//   object names;
// - small immutable values keyed by their content (a slice's port list, a
//   Service's ipFamilies), frozen so that no holder can change them for the
//   others.
// The pools grow with distinct values, which are few for these fields.

/** The one empty list every projection uses for "none" (frozen: shared). */
export const EMPTY_LIST: never[] = Object.freeze([]) as unknown as never[];

export class StringPool {
  private readonly pool = new Map<string, string>();
  private readonly values = new Map<string, unknown>();

  intern(s: string): string {
    const hit = this.pool.get(s);
    if (hit !== undefined) return hit;
    // Flatten sliced/cons strings so the pooled copy does not pin a parent string.
    const own = (' ' + s).slice(1);
    this.pool.set(own, own);
    return own;
  }

  /** The pooled value for `key`, or `value` (frozen, deeply) once it is the first. */
  share<T extends object>(key: string, value: T): T {
    const hit = this.values.get(key);
    if (hit !== undefined) return hit as T;
    deepFreeze(value);
    this.values.set(this.intern(key), value);
    return value;
  }

  get size(): number {
    return this.pool.size + this.values.size;
  }
}

function deepFreeze(v: object): void {
  Object.freeze(v);
  for (const x of Object.values(v)) if (typeof x === 'object' && x !== null && !Object.isFrozen(x)) deepFreeze(x);
}

// Sharing of values repeated across thousands of objects. JSON.parse gives
// every occurrence of a longer string its own copy; the pools keep one:
// - strings (zones, node names, namespaces, port names), never addresses or
//   object names;
// - small immutable values compared by content (a slice's port list, a
//   Service's port list), frozen so that no holder can change them for the
//   others.
// The pools grow with distinct values, which are few for these fields.
//
// Cost matters as much as memory here: interning runs for several fields of
// every endpoint of every list. Lookups avoid building key strings (a
// concatenated key is a fresh string to flatten and hash on every call).

/** The one empty list every projection uses for "none" (frozen: shared). */
export const EMPTY_LIST: never[] = Object.freeze([]) as unknown as never[];

/**
 * V8's JSON.parse internalizes string values shorter than this (one copy per
 * distinct value, process-wide; test/streams/projections.test.ts checks it
 * on the running V8): pooling them again would cost a hash lookup per
 * occurrence and save nothing.
 */
export const PARSER_INTERNALIZES_BELOW = 10;

export class StringPool {
  private readonly pool = new Map<string, string>();
  /** Shared values by a numeric digest of their content; each bucket is compared field by field. */
  private readonly buckets = new Map<number, object[]>();
  private shared = 0;

  intern(s: string): string {
    if (s.length < PARSER_INTERNALIZES_BELOW) return s;
    const hit = this.pool.get(s);
    if (hit !== undefined) return hit;
    // Flatten sliced/cons strings so the pooled copy does not pin a parent string.
    const own = ` ${s}`.slice(1);
    this.pool.set(own, own);
    return own;
  }

  /**
   * The pooled value equal to `value` by `same`, or `value` itself (frozen,
   * deeply) once it is the first. `digest` is any number derived from the
   * content (equal values must give equal digests); it narrows the search.
   */
  share<T extends object>(digest: number, value: T, same: (a: T, b: T) => boolean): T {
    const hit = this.lookup(digest, value, same);
    if (hit !== undefined) return hit;
    let bucket = this.buckets.get(digest);
    if (bucket === undefined) {
      bucket = [];
      this.buckets.set(digest, bucket);
    }
    deepFreeze(value);
    bucket.push(value);
    this.shared++;
    return value;
  }

  /**
   * The pooled value that `matches` accepts, among those shared under
   * `digest`: how a projection skips building (and validating) a value it
   * has already seen, comparing the raw input against the pooled one.
   */
  lookup<T extends object, A>(digest: number, arg: A, matches: (pooled: T, arg: A) => boolean): T | undefined {
    const bucket = this.buckets.get(digest);
    if (bucket === undefined) return undefined;
    for (let i = 0; i < bucket.length; i++) if (matches(bucket[i] as T, arg)) return bucket[i] as T;
    return undefined;
  }

  get size(): number {
    return this.pool.size + this.shared;
  }
}

/** A digest step for share(): mixes `x` (an integer) into `h`. */
export function digestStep(h: number, x: number): number {
  return (Math.imul(h, 31) + x) | 0;
}

/** A digest of a string for share(): its length and two characters (cheap; collisions only cost a comparison). */
export function digestOf(s: string): number {
  const n = s.length;
  return n === 0 ? 0 : (n << 16) ^ (s.charCodeAt(0) << 8) ^ s.charCodeAt(n - 1);
}

function deepFreeze(v: object): void {
  Object.freeze(v);
  for (const x of Object.values(v)) if (typeof x === 'object' && x !== null && !Object.isFrozen(x)) deepFreeze(x);
}

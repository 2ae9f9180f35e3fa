// A map derived from the previous sync's map by a few changes, without copying
// it: a shared base that nobody mutates, and an overlay of what changed since.
//
// At 10k services x 10 endpoints the ruleset keeps ~100k hairpin counts, ~20k
// element claims and ~10k endpoint-slot blocks. Copying them (220k claims, as
// it was) for every incremental render cost ~100 ms; deriving costs the size of the overlay,
// which is folded into a new base only once it has grown to an eighth of it.
// The previous ruleset must stay intact (a failed commit keeps it as the applied
// one), which is why the base is shared and never written.

const GONE: unique symbol = Symbol('gone');

/** A base map that lists its keys into an array itself, quicker than its keys() iterator (AddressCounts). */
interface ListsKeys<K> {
  keyList(): K[];
}

function listsKeys<K>(m: ReadonlyMap<K, unknown>): m is ReadonlyMap<K, unknown> & ListsKeys<K> {
  return typeof (m as Partial<ListsKeys<K>>).keyList === 'function';
}

export class OverlayMap<K, V> implements ReadonlyMap<K, V> {
  readonly #base: ReadonlyMap<K, V>;
  readonly #over: Map<K, V | typeof GONE>;
  #size: number;
  #sealed = false;

  /**
   * An empty map, or one holding what `from` holds: an OverlayMap is sealed (it
   * must not change any more); any other map becomes the base as it is (whoever
   * built it must not change it any more).
   */
  constructor(from?: OverlayMap<K, V> | ReadonlyMap<K, V>) {
    if (!from || !(from instanceof OverlayMap)) {
      this.#base = from ?? new Map();
      this.#over = new Map();
      this.#size = from?.size ?? 0;
      return;
    }
    from.#sealed = true;
    this.#size = from.#size;
    if (from.#base.size === 0) {
      // Built from nothing (a full render): its overlay holds no deletions (delete() marks only keys the base has) and becomes the shared
      // base.
      this.#base = from.#over as Map<K, V>;
      this.#over = new Map();
    } else if (from.#over.size > Math.max(1024, from.#base.size >> 3)) {
      this.#base = from.#flatten();
      this.#over = new Map();
    } else {
      this.#base = from.#base;
      this.#over = new Map(from.#over);
    }
  }

  get size(): number {
    return this.#size;
  }

  get(key: K): V | undefined {
    const v = this.#over.get(key);
    if (v === GONE) return undefined;
    return v !== undefined ? v : this.#base.get(key);
  }

  has(key: K): boolean {
    return this.get(key) !== undefined;
  }

  /** Values must not be undefined (a missing key reads as undefined). */
  set(key: K, value: V): this {
    if (this.#sealed) throw new Error('OverlayMap: a map others derive from cannot change');
    const v = this.#over.get(key);
    if (v === GONE || (v === undefined && !this.#base.has(key))) this.#size++;
    this.#over.set(key, value);
    return this;
  }

  delete(key: K): boolean {
    if (this.#sealed) throw new Error('OverlayMap: a map others derive from cannot change');
    if (!this.has(key)) return false;
    if (this.#base.has(key)) this.#over.set(key, GONE);
    else this.#over.delete(key);
    this.#size--;
    return true;
  }

  #flatten(): Map<K, V> {
    const out = new Map(this.#base);
    for (const [k, v] of this.#over) {
      if (v === GONE) out.delete(k);
      else out.set(k, v);
    }
    return out;
  }

  #current(): ReadonlyMap<K, V> {
    // Over an empty base nothing is GONE: the overlay is the map (a full render's claims and counts, not copied to be read).
    if (this.#base.size === 0) return this.#over as ReadonlyMap<K, V>;
    return this.#over.size === 0 ? this.#base : this.#flatten();
  }

  entries(): MapIterator<[K, V]> {
    return this.#current().entries();
  }

  keys(): MapIterator<K> {
    return this.#current().keys();
  }

  /** The keys, in a new array: what a run of elements takes (a million hairpin addresses at 100k Services). */
  keyList(): K[] {
    const c = this.#current();
    return listsKeys(c) ? c.keyList() : Array.from(c.keys());
  }

  values(): MapIterator<V> {
    return this.#current().values();
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }

  forEach(fn: (value: V, key: K, map: ReadonlyMap<K, V>) => void): void {
    for (const [k, v] of this.#current()) fn(v, k, this);
  }
}

// String interning for values repeated across thousands of objects (zones,
// node names, namespaces, port names). JSON.parse gives every occurrence its
// own string; a pool keeps one. The pool grows with distinct values, which
// are few for these fields; it is never used for addresses or names.

export class StringPool {
  private readonly pool = new Map<string, string>();

  intern(s: string): string {
    const hit = this.pool.get(s);
    if (hit !== undefined) return hit;
    // Flatten sliced/cons strings so the pooled copy does not pin a parent string.
    const own = (' ' + s).slice(1);
    this.pool.set(own, own);
    return own;
  }

  get size(): number {
    return this.pool.size;
  }
}

// Objects by (namespace, name), without a joined "namespace/name" string per
// object: a joined key is a new string to build, flatten and hash for every
// object of every list, and two more heap objects held per entry. The names
// and namespaces are the projections' own strings (from the parser, or
// pooled), so an entry costs no allocation beyond the Map's slot.
//
// Cluster-scoped objects (Nodes) live under the namespace ''. The joined
// key, where one is needed (events, the StoreView API), is joinKey's.

import { joinKey } from '../k8s/object-key.ts';

export class KeyedMap<T> {
  private readonly spaces = new Map<string, Map<string, T>>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  get(namespace: string, name: string): T | undefined {
    return this.spaces.get(namespace)?.get(name);
  }

  /** Sets the value; returns the one it replaced. */
  set(namespace: string, name: string, value: T): T | undefined {
    let space = this.spaces.get(namespace);
    if (space === undefined) {
      space = new Map();
      this.spaces.set(namespace, space);
    }
    const old = space.get(name);
    if (old === undefined) this.count++;
    space.set(name, value);
    return old;
  }

  /** Removes the entry; returns its value. */
  delete(namespace: string, name: string): T | undefined {
    const space = this.spaces.get(namespace);
    const old = space?.get(name);
    if (old === undefined) return undefined;
    space!.delete(name);
    if (space!.size === 0) this.spaces.delete(namespace);
    this.count--;
    return old;
  }

  *values(): IterableIterator<T> {
    for (const space of this.spaces.values()) yield* space.values();
  }

  *entries(): IterableIterator<[string, T]> {
    for (const [namespace, space] of this.spaces) for (const [name, value] of space) yield [joinKey(namespace, name), value];
  }

  /** Calls fn for each entry, without a joined key (nor an entry array per entry). */
  forEach(fn: (value: T, namespace: string, name: string) => void): void {
    this.spaces.forEach((space, namespace) => {
      space.forEach((value, name) => {
        fn(value, namespace, name);
      });
    });
  }
}

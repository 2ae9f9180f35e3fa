// The joined key of a namespaced object, `namespace/name` (or `name` alone
// when cluster-scoped): what events and the change tracker file objects under.

/**
 * The joined key, as one flat string. V8 builds a joined string as a pair of
 * its parts (a cons string: two more objects); join() builds it flat. The
 * change tracker holds these as Map keys for every Service and slice: ~1 MiB
 * less at 10k services. (Reading a character of the pair flattens it too, but
 * optimised code drops a read whose result is unused, and this runs hot.)
 */
export function joinKey(namespace: string, name: string): string {
  return namespace === '' ? name : [namespace, name].join('/');
}

/** Splits a joined key; names and namespaces cannot contain '/'. */
export function splitKey(key: string): [namespace: string, name: string] {
  const slash = key.indexOf('/');
  return slash < 0 ? ['', key] : [key.slice(0, slash), key.slice(slash + 1)];
}

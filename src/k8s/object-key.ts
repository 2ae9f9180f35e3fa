// The joined key of a namespaced object, `namespace/name` (or `name` alone
// when cluster-scoped): what events and the change tracker file objects under.

/**
 * The joined key, as one flat string. V8 builds a joined string as a pair of
 * its parts (a cons string: two more objects); reading one character makes it
 * flat, and the collector then drops the pair. The change tracker holds these
 * as Map keys for every Service and slice: ~1 MiB less at 10k services.
 */
export function joinKey(namespace: string, name: string): string {
  if (namespace === '') return name;
  const key = `${namespace}/${name}`;
  key.charCodeAt(0);
  return key;
}

/** Splits a joined key; names and namespaces cannot contain '/'. */
export function splitKey(key: string): [namespace: string, name: string] {
  const slash = key.indexOf('/');
  return slash < 0 ? ['', key] : [key.slice(0, slash), key.slice(slash + 1)];
}

// A dataplane that counts what it committed: kube_nft_proxy_nftables_operations_total
// by verb and object kind, for transactions the kernel accepted (a refused
// transaction changed nothing, so it adds nothing).

import type { Dataplane } from '../nft/dataplane.ts';
import type { Operation } from '../nft/objects.ts';
import type { Transaction } from '../nft/transaction.ts';

/**
 * A full sync commits a few hundred thousand operations: counted by verb,
 * then kind, without a key string per operation. A function of its own, so
 * that nothing of the list outlives it in the caller's suspended frame.
 */
function countsByVerbAndKind(ops: readonly Operation[]): Map<string, Map<string, number>> {
  const byVerb = new Map<string, Map<string, number>>();
  for (const { verb, object } of ops) {
    let byKind = byVerb.get(verb);
    if (!byKind) {
      byKind = new Map();
      byVerb.set(verb, byKind);
    }
    byKind.set(object.kind, (byKind.get(object.kind) ?? 0) + 1);
  }
  return byVerb;
}

export function countingDataplane(inner: Dataplane, count: (verb: string, kind: string, n: number) => void): Dataplane {
  const counted: Dataplane = {
    begin: () => inner.begin(),
    async commit(tx: Transaction): Promise<void> {
      // Counted before the commit, and only the counts kept across it: the operations
      // may be released while the kernel works (Transaction.releaseOperations).
      const byVerb = countsByVerbAndKind(tx.ops());
      await inner.commit(tx);
      for (const [verb, byKind] of byVerb) for (const [kind, n] of byKind) count(verb, kind, n);
    },
    list: (family, table, options) => inner.list(family, table, options),
  };
  if (inner.releaseMemory) counted.releaseMemory = () => inner.releaseMemory!();
  return counted;
}

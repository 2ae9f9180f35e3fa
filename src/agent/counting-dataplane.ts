// A dataplane that counts what it committed: kube_nft_proxy_nftables_operations_total
// by verb and object kind, for transactions the kernel accepted (a refused
// transaction changed nothing, so it adds nothing).

import type { Dataplane } from '../nft/dataplane.ts';
import type { Transaction } from '../nft/transaction.ts';

export function countingDataplane(inner: Dataplane, count: (verb: string, kind: string, n: number) => void): Dataplane {
  const counted: Dataplane = {
    begin: () => inner.begin(),
    async commit(tx: Transaction): Promise<void> {
      // The transaction's own counts, taken before the commit: nothing of its
      // operations is kept across the wait (a full sync's are not held at all).
      const counts = tx.counts();
      await inner.commit(tx);
      for (const c of counts) count(c.verb, c.kind, c.count);
    },
    list: (family, table, options) => inner.list(family, table, options),
  };
  if (inner.releaseMemory) counted.releaseMemory = () => inner.releaseMemory!();
  return counted;
}

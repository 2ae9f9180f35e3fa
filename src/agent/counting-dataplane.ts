// A dataplane that counts what it committed: kube_nft_proxy_nftables_operations_total
// by verb and object kind, for transactions the kernel accepted (a refused
// transaction changed nothing, so it adds nothing).

import type { Dataplane } from '../nft/dataplane.ts';
import type { Transaction } from '../nft/transaction.ts';

export function countingDataplane(inner: Dataplane, count: (verb: string, kind: string, n: number) => void): Dataplane {
  const counted: Dataplane = {
    begin: () => inner.begin(),
    async commit(tx: Transaction): Promise<void> {
      // The transaction's own counts, made as its operations were checked (a
      // full sync's while the dataplane encoded them): no operation is held.
      await inner.commit(tx);
      for (const c of tx.counts()) count(c.verb, c.kind, c.count);
    },
    list: (family, table, options) => inner.list(family, table, options),
  };
  if (inner.releaseMemory) counted.releaseMemory = () => inner.releaseMemory!();
  return counted;
}

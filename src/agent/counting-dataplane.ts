// A dataplane that counts what it committed: kube_nft_proxy_nftables_operations_total
// by verb and object kind, for transactions the kernel accepted (a refused
// transaction changed nothing, so it adds nothing).

import type { Dataplane } from '../nft/dataplane.ts';
import type { Transaction } from '../nft/transaction.ts';

export function countingDataplane(inner: Dataplane, count: (verb: string, kind: string, n: number) => void): Dataplane {
  const counted: Dataplane = {
    begin: () => inner.begin(),
    async commit(tx: Transaction): Promise<void> {
      await inner.commit(tx);
      const byKey = new Map<string, number>();
      for (const op of tx.ops()) {
        const key = `${op.verb} ${op.object.kind}`;
        byKey.set(key, (byKey.get(key) ?? 0) + 1);
      }
      for (const [key, n] of byKey) {
        const [verb, kind] = key.split(' ') as [string, string];
        count(verb, kind, n);
      }
    },
    list: (family, table) => inner.list(family, table),
  };
  if (inner.releaseMemory) counted.releaseMemory = () => inner.releaseMemory!();
  return counted;
}

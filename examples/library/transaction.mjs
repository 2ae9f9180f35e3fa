// Program a table of your own with the transaction API: objects are plain
// records, each operation is checked as it is queued, and the dataplane commits
// the whole list as one atomic nftables transaction over netlink.
//
//   ip netns add demo
//   node examples/library/transaction.mjs demo
//   ip netns exec demo nft list table inet example
import { NetlinkDataplane, netnsPath, NftCommitError, renderOperations, Transaction } from 'kube-nft-proxy';

const netns = process.argv[2];
if (!netns) {
  console.error('usage: transaction.mjs NETNS');
  process.exit(2);
}
const base = { family: 'inet', table: 'example' };
const tx = new Transaction()
  .add({ kind: 'table', family: 'inet', name: 'example', comment: 'made by examples/library/transaction.mjs' })
  .add({ kind: 'set', ...base, name: 'blocked', keyType: ['ipv4_addr'] })
  .add({ kind: 'chain', ...base, name: 'input', base: { type: 'filter', hook: 'input', priority: 0, policy: 'accept' } })
  .add({
    kind: 'rule',
    ...base,
    chain: 'input',
    exprs: [
      { kind: 'lookup', keys: [{ kind: 'payload', field: 'ip saddr' }], set: 'blocked' },
      { kind: 'counter' },
      { kind: 'verdict', verdict: 'drop' },
    ],
  })
  .add({ kind: 'element', ...base, set: 'blocked', key: ['192.0.2.1'] })
  .add({ kind: 'element', ...base, set: 'blocked', key: ['198.51.100.7'] });

// ops() throws NftInvalidError (with the failing index) if any operation was invalid.
const ops = tx.ops();
console.log(renderOperations(ops));
try {
  await new NetlinkDataplane({ netns: netnsPath(netns) }).commit(tx);
} catch (e) {
  if (e instanceof NftCommitError) console.error(`the kernel refused operation ${e.failures[0]?.index}: ${e.message}`);
  throw e;
}
console.log(`committed ${ops.length} operations in ${netns}`);

// The netlink dataplane holds nothing of a transaction's operations while the
// addon's worker commits its batch: the caller may release them
// (Transaction.releaseOperations), and a refusal still names its operation.
// The addon is a stand-in that answers when told, so the wait can be looked into.

import { describe, expect, it } from 'vitest';
import { collectGarbage } from '../../src/agent/memory-release.ts';
import type { NativeAddon, NativeCommitResult } from '../../src/native/addon.ts';
import { NftCommitError } from '../../src/nft/dataplane.ts';
import { NetlinkDataplane } from '../../src/nft/netlink/netlink-dataplane.ts';
import type { Operation } from '../../src/nft/objects.ts';
import { chain, table } from './fixtures.ts';

const timing = { parseMs: 0, openMs: 0, buildMs: 0, sendMs: 1, receiveMs: 1, buildCpuMs: 0, sendCpuMs: 0 };

function slowAddon() {
  let answer: ((r: NativeCommitResult) => void) | undefined;
  const addon = {
    commit: (_bytes: Uint8Array) => new Promise<NativeCommitResult>((resolve) => (answer = resolve)),
  } as unknown as NativeAddon;
  return { addon, answer: (r: NativeCommitResult) => answer!(r) };
}

const opsOf = (): Operation[] => [
  { verb: 'add', object: table },
  ...['a', 'b', 'c'].map((n): Operation => ({ verb: 'add', object: chain(n) })),
];

/** Commits, releases the operations once the batch is handed over, and reports whether the collector took one of them meanwhile. */
async function commitReleased(answerWith: Omit<NativeCommitResult, 'timing'>) {
  const { addon, answer } = slowAddon();
  const dataplane = new NetlinkDataplane({ addon });
  const tx = dataplane.begin().queueAll(opsOf());
  const watched = new WeakRef(tx.ops()[3]!);
  const committing = dataplane.commit(tx);
  tx.releaseOperations(opsOf);
  const collected = await new Promise<boolean>((resolve) =>
    setImmediate(() => {
      collectGarbage();
      resolve(watched.deref() === undefined);
    }),
  );
  answer({ ...answerWith, timing });
  return {
    collected,
    outcome: await committing.then(
      () => 'ok',
      (e: unknown) => e,
    ),
    dataplane,
  };
}

describe('the netlink dataplane while the batch is in the kernel', () => {
  it('holds none of the operations, and records the commit once answered', async () => {
    const { collected, outcome, dataplane } = await commitReleased({ failures: [], messages: 6, bytes: 400 });
    expect(collected).toBe(true);
    expect(outcome).toBe('ok');
    expect(dataplane.lastCommit).toMatchObject({ operations: 4, messages: 6 });
    expect(dataplane.lastCommit!.batchBytes).toBeGreaterThan(0);
  });

  it('a refusal names the operation made again', async () => {
    const { collected, outcome } = await commitReleased({
      failures: [{ index: 2, errno: 22, message: 'no', origin: 'kernel' }],
      messages: 6,
      bytes: 400,
    });
    expect(collected).toBe(true);
    expect(outcome).toBeInstanceOf(NftCommitError);
    expect((outcome as NftCommitError).message).toMatch(/operation 2 \(add chain\) failed with EINVAL: no/);
    expect((outcome as NftCommitError).operations[2]).toEqual({ verb: 'add', object: chain('b') });
  });
});

// The netlink dataplane holds nothing of a transaction's generated operations
// while the addon's worker commits its batch (Transaction.queueGenerated: a
// full sync's are made on demand), and a refusal still names its operation.
// The addon is a stand-in that answers when told, so the wait can be looked into.

import { describe, expect, it } from 'vitest';
import { collectGarbage } from '../../src/agent/memory-release.ts';
import type { NativeAddon, NativeCommitResult } from '../../src/native/addon.ts';
import { NftCommitError } from '../../src/nft/dataplane.ts';
import { NetlinkDataplane } from '../../src/nft/netlink/netlink-dataplane.ts';
import type { Operation } from '../../src/nft/objects.ts';
import { NftInvalidError } from '../../src/nft/transaction.ts';
import { chain, table } from './fixtures.ts';

const timing = { parseMs: 0, openMs: 0, buildMs: 0, sendMs: 1, receiveMs: 1, buildCpuMs: 0, sendCpuMs: 0, waitMs: 0 };

/** `streamed`: the addon has BatchStream, which the dataplane then hands a generated transaction to in pieces. */
function slowAddon(streamed: boolean) {
  let answer: ((r: NativeCommitResult) => void) | undefined;
  const answered = () => new Promise<NativeCommitResult>((resolve) => (answer = resolve));
  const addon = { commit: (_bytes: Uint8Array) => answered() } as unknown as NativeAddon;
  if (streamed) {
    addon.BatchStream = class {
      push(_piece: Uint8Array): void {}
      cut(): void {}
      commit = answered;
      abort(): void {}
    };
  }
  return { addon, answer: (r: NativeCommitResult) => answer!(r) };
}

const opsOf = (): Operation[] => [
  { verb: 'add', object: table },
  ...['a', 'b', 'c'].map((n): Operation => ({ verb: 'add', object: chain(n) })),
];

/**
 * Commits generated operations, and reports whether the collector took the
 * chains' operations that the encoding made while the batch was in the kernel
 * (the table's is kept until the answer: what the dataplane learns from it).
 */
async function commitGenerated(streamed: boolean, answerWith: Omit<NativeCommitResult, 'timing'>) {
  const { addon, answer } = slowAddon(streamed);
  const dataplane = new NetlinkDataplane({ addon });
  let watched: WeakRef<Operation>[] = [];
  const tx = dataplane.begin().queueGenerated(function* () {
    watched = [];
    for (const op of opsOf()) {
      watched.push(new WeakRef(op));
      yield op;
    }
  }, 4);
  const committing = dataplane.commit(tx);
  const made = watched;
  const collected = await new Promise<boolean>((resolve) =>
    setImmediate(() => {
      collectGarbage();
      resolve(made.length === 4 && made.slice(1).every((w) => w.deref() === undefined));
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

describe.each([
  ['as one batch', false],
  ['in pieces', true],
])('the netlink dataplane while the batch is in the kernel, handed over %s', (_how, streamed) => {
  it('holds none of the operations, and records the commit once answered', async () => {
    const { collected, outcome, dataplane } = await commitGenerated(streamed, {
      failures: [],
      messages: 6,
      bytes: 400,
      releasedBytes: 0,
      pieces: 1,
      transactions: 1,
    });
    expect(collected).toBe(true);
    expect(outcome).toBe('ok');
    expect(dataplane.lastCommit).toMatchObject({ operations: 4, messages: 6 });
    expect(dataplane.lastCommit!.batchBytes).toBeGreaterThan(0);
  });

  it('a refusal names the operation made again', async () => {
    const { collected, outcome } = await commitGenerated(streamed, {
      failures: [{ index: 2, errno: 22, message: 'no', origin: 'kernel' }],
      messages: 6,
      bytes: 400,
      releasedBytes: 0,
      pieces: 1,
      transactions: 1,
    });
    expect(collected).toBe(true);
    expect(outcome).toBeInstanceOf(NftCommitError);
    expect((outcome as NftCommitError).message).toMatch(/operation 2 \(add chain\) failed with EINVAL: no/);
    expect((outcome as NftCommitError).operations[2]).toEqual({ verb: 'add', object: chain('b') });
  });

  it('an invalid generated operation, found as the batch is encoded, throws every error and sends nothing', async () => {
    let sent = 0;
    let aborted = 0;
    const addon = {
      commit: () => {
        sent++;
        return Promise.reject(new Error('sent'));
      },
    } as unknown as NativeAddon;
    if (streamed) {
      addon.BatchStream = class {
        push(_piece: Uint8Array): void {}
        cut(): void {}
        commit = addon.commit as () => never;
        abort(): void {
          aborted++;
        }
      };
    }
    const dataplane = new NetlinkDataplane({ addon });
    let made = 0;
    const tx = dataplane.begin().queueGenerated(() => {
      made++;
      return [...opsOf(), { verb: 'add', object: chain('') }, { verb: 'add', object: chain('d') }, { verb: 'add', object: chain('') }];
    }, 7);
    const outcome = await dataplane.commit(tx).then(
      () => 'ok',
      (e: unknown) => e,
    );
    expect(outcome).toBeInstanceOf(NftInvalidError);
    expect(outcome).toBe(tx.error);
    expect(tx.errors.map((e) => e.index)).toEqual([4, 6]);
    expect(sent).toBe(0);
    expect(aborted).toBe(streamed ? 1 : 0);
    expect(made).toBe(1);
  });
});

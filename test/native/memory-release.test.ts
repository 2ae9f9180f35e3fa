// What a large commit leaves behind: the dataplane keeps no batch-sized buffer
// once the commit is done, the addon gives a taken batch's pages back while it
// builds the messages, and it can trim malloc's arenas.

import { describe, expect, it } from 'vitest';
import { collectGarbage } from '../../src/agent/memory-release.ts';
import { loadAddon } from '../../src/native/addon.ts';
import type { Element } from '../../src/nft/objects.ts';
import { commitError, kernel, verdictMapOps } from './kernel-helpers.ts';

const T = 'knp';
const MiB = 2 ** 20;

function arrayBuffersAfterGc(): number {
  collectGarbage();
  return process.memoryUsage().arrayBuffers;
}

describe('memory after a large commit', () => {
  it('the dataplane drops its grown batch buffer; the next commit still works', async () => {
    const { ns, dp } = kernel();
    const ops = verdictMapOps(T, 100_000, '80');
    const before = arrayBuffersAfterGc();
    await dp.commit(dp.begin().queueAll(ops));
    expect(dp.lastCommit!.batchBytes).toBeGreaterThan(4 * MiB);
    // The batch was several MiB; what stays is at most the small buffer kept for routine commits.
    expect(arrayBuffersAfterGc() - before).toBeLessThan(MiB);
    dp.releaseMemory();
    await dp.commit(
      dp
        .begin()
        .queueAll([{ verb: 'delete', object: { kind: 'element', family: 'ip', table: T, set: 'm', key: ['10.0.0.1', 'tcp', '80'] } }]),
    );
    expect(ns.exec('nft', ['list', 'map', 'ip', T, 'm'])).not.toContain('10.0.0.1 . tcp . 80');
  }, 120_000);

  it("gives a taken batch's pages back as its messages are built, and still names a bad element deep in it", async () => {
    const { ns, dp } = kernel();
    await dp.commit(dp.begin().queueAll(verdictMapOps(T, 100_000, '80')));
    const landed = dp.lastCommit!;
    expect(landed.batchBytes).toBeGreaterThan(4 * MiB);
    // Given back in steps of a MiB, whole pages only: all but the last step or so.
    expect(landed.batchReleasedBytes).toBeGreaterThan(landed.batchBytes - 2 * MiB);
    expect(landed.batchReleasedBytes).toBeLessThanOrEqual(landed.batchBytes);
    expect(ns.exec('nft', ['list', 'map', 'ip', T, 'm']).match(/ : goto c/g)).toHaveLength(100_000);

    // The kernel's answer names the element from what the build kept, not from the pages given back.
    const ops = verdictMapOps('late', 100_000, '80');
    const bad = ops.length - 500;
    const element = ops[bad]!.object as Element;
    ops[bad] = { verb: 'add', object: { ...element, value: { verdict: 'goto', chain: 'no-such-chain' } } };
    const err = await commitError(() => dp.commit(dp.begin().queueAll(ops)));
    expect(dp.lastCommit!.batchReleasedBytes).toBeGreaterThan(dp.lastCommit!.batchBytes - 2 * MiB);
    expect(err.failures).toEqual([expect.objectContaining({ index: bad, code: 'ENOENT' })]);

    // A small batch is the dataplane's own buffer, copied by the addon: nothing to give back.
    await dp.commit(dp.begin().queueAll(verdictMapOps('small', 10, '80')));
    expect(dp.lastCommit!.batchReleasedBytes).toBe(0);
  }, 120_000);

  it('trimMemory answers whether malloc gave pages back', () => {
    expect(typeof loadAddon().trimMemory()).toBe('boolean');
  });
});

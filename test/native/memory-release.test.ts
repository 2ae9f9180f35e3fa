// What a large commit leaves behind: the dataplane keeps no batch-sized buffer
// once the commit is done, and the addon can trim malloc's arenas.

import { describe, expect, it } from 'vitest';
import { collectGarbage } from '../../src/agent/memory-release.ts';
import { loadAddon } from '../../src/native/addon.ts';
import { kernel, verdictMapOps } from './kernel-helpers.ts';

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

  it('trimMemory answers whether malloc gave pages back', () => {
    expect(typeof loadAddon().trimMemory()).toBe('boolean');
  });
});

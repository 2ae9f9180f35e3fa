// bench:sync's last-line keys for one size, from a cold start whose figures are
// known: the ratios are worked out from the right parts, in particular the two
// bounds of the design beside cold_over_kernel.

import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { summarize, type ColdResult, type SizeResult } from '../../bench/sync-report.ts';

const cold: ColdResult = {
  coldMs: 1800,
  bootMs: 220,
  listMs: 400,
  syncMs: 1150,
  kernelMs: 600,
  kernelTransactions: 17,
  cpuMs: { jsThread: 1200, process: 2700, jsThreadWaited: 450 },
  ops: 250_000,
  servicePorts: 10_000,
  rss: 120,
  hwm: 170,
  rssSettled: 114,
  smaps: { brkHeap: 10, anonymous: 90, files: 14 },
};
const result: SizeResult = { size: { label: '10k', services: 10_000, endpoints: 10, family: 'IPv4' }, cold, load: [0.5, 0.5, 0.5] };

describe('bench:sync summary', () => {
  const summary = summarize('map', undefined, [result], 1000);

  it('gives cold_over_kernel and the JS thread over the kernel', () => {
    expect(summary.cold_over_kernel_10k).toBe(3);
    expect(summary.js_thread_cpu_over_kernel_10k).toBe(2);
    expect(summary.other_threads_cpu_ms_10k).toBe(1500);
  });

  it('bounds cold_over_kernel by the lists before any kernel work: (boot + lists + kernel) / kernel', () => {
    expect(summary.lists_then_kernel_over_kernel_10k).toBe(2.03);
  });

  it("bounds it by the agent's CPU spread over every core: process CPU / cores / kernel", () => {
    expect(summary.cpu_over_cores_over_kernel_10k).toBe(Math.round((2700 / availableParallelism() / 600) * 100) / 100);
  });
});

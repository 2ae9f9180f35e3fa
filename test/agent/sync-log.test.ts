// The agent's "synced nftables rules" line carries the kernel's share of the
// sync (kernelMs, and kernelTransactions where it counts them) when the dataplane measures it: the growth of the
// dataplane's running total across that sync, not commits made before it. In-process, real manifest streams, the fake kernel with a
// kernel clock of its own. A full sync's line carries the CPU time spent so far (cpuMs).

import { readFileSync } from 'node:fs';
import { filter, firstValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import type { Agent } from '../../src/agent/agent.ts';
import type { Dataplane } from '../../src/nft/dataplane.ts';
import { FakeKernel } from '../../src/nft/fake/fake-kernel.ts';
import type { Transaction } from '../../src/nft/transaction.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { jsonLogLines } from './json-log.ts';
import { agentOnExamples } from './examples-agent.ts';

/** The fake kernel, each commit costing `costMs(n)` of kernel time, n counting from 1, and n transactions. */
class TimedFakeKernel implements Dataplane {
  readonly #inner = new FakeKernel();
  commits = 0;
  kernelMs = 0;
  kernelTransactions = 0;
  readonly #costMs: (n: number) => number;
  constructor(costMs: (n: number) => number) {
    this.#costMs = costMs;
  }
  begin: Dataplane['begin'] = () => this.#inner.begin();
  async commit(tx: Transaction): Promise<void> {
    this.commits++;
    this.kernelMs += this.#costMs(this.commits);
    this.kernelTransactions += this.commits;
    await this.#inner.commit(tx);
  }
  list: Dataplane['list'] = (family, table) => this.#inner.list(family, table);
}

/** The JS thread's CPU time (ms) and its wait for a core (ms, from Linux's schedstat). */
const jsThread = () => {
  const t = process.threadCpuUsage();
  const waitedNs = Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[1]);
  return { cpu: (t.user + t.system) / 1000, waited: waitedNs / 1e6 };
};

describe('the synced log line', () => {
  let agent: Agent | undefined;
  afterEach(async () => {
    await agent?.stop();
    agent = undefined;
  });

  /** Runs the agent over the examples on `dataplane` to its first successful sync: the synced lines it logged. */
  async function syncedLines(dataplane: Dataplane, ...flags: string[]): Promise<Array<Record<string, unknown>>> {
    const { lines, sink } = jsonLogLines();
    agent = await agentOnExamples({ logger: createLogger('info', sink), dataplane }, ['--min-sync-period=0', ...flags]);
    await firstValueFrom(agent.syncs$.pipe(filter((r) => r.ok)));
    return lines.filter((l) => l.msg === 'synced nftables rules');
  }

  it("carries the kernel time and transactions of that sync's commits only", async () => {
    // Commit n costs 1000·n ms, so the figure names the commits it summed.
    const dataplane = new TimedFakeKernel((n) => 1000 * n);
    // A commit before the agent runs (commit 1) is no sync's.
    await dataplane.commit(dataplane.begin().queueAll([{ verb: 'add', object: { kind: 'table', family: 'ip', name: 'someone-else' } }]));
    const synced = await syncedLines(dataplane, '--feature-gates=KubeProxyAcceleration=false');
    expect(synced).toHaveLength(1);
    expect(dataplane.commits).toBeGreaterThanOrEqual(2);
    let want = 0;
    for (let n = 2; n <= dataplane.commits; n++) want += n;
    expect(synced[0]!.kernelMs).toBe(1000 * want);
    expect(synced[0]!.kernelTransactions).toBe(want);
  });

  it("carries the CPU time spent so far on a full sync: the JS thread's, the process's, the JS thread's wait for a core", async () => {
    const before = jsThread();
    const synced = await syncedLines(new FakeKernel());
    const after = jsThread();
    expect(synced).toHaveLength(1);
    expect(synced[0]!.kind).toBe('full');
    const cpu = synced[0]!.cpuMs as { jsThread: number; process: number; jsThreadWaited: number };
    // This thread's: the test process's other threads (vitest's, V8's, libuv's) would put it past `after`.
    expect(cpu.jsThread).toBeGreaterThanOrEqual(Math.floor(before.cpu));
    expect(cpu.jsThread).toBeLessThanOrEqual(Math.ceil(after.cpu));
    expect(cpu.process).toBeGreaterThanOrEqual(cpu.jsThread);
    expect(cpu.jsThreadWaited).toBeGreaterThanOrEqual(Math.floor(before.waited));
    expect(cpu.jsThreadWaited).toBeLessThanOrEqual(Math.ceil(after.waited));
  });

  it('leaves kernelMs out when the dataplane does not measure it', async () => {
    const synced = await syncedLines(new FakeKernel());
    expect(synced).toHaveLength(1);
    expect(synced[0]).not.toHaveProperty('kernelMs');
    expect(synced[0]).not.toHaveProperty('kernelTransactions');
  });
});

// The agent's "synced nftables rules" line carries the kernel's share of the
// sync (kernelMs, and kernelTransactions where it counts them) when the dataplane measures it: the growth of the
// dataplane's running total across that sync, not commits made before it. In-process, real manifest streams, the fake kernel with a
// kernel clock of its own.

import { filter, firstValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../src/agent/agent.ts';
import { parseCommandLine } from '../../src/cli/flags.ts';
import type { Dataplane } from '../../src/nft/dataplane.ts';
import { FakeKernel } from '../../src/nft/fake/fake-kernel.ts';
import type { Transaction } from '../../src/nft/transaction.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { jsonLogLines } from './json-log.ts';

const EXAMPLES = new URL('../../examples/', import.meta.url).pathname;

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

describe('the synced log line', () => {
  let agent: Agent | undefined;
  afterEach(async () => {
    await agent?.stop();
    agent = undefined;
  });

  it("carries the kernel time and transactions of that sync's commits only", async () => {
    const { lines, sink } = jsonLogLines();
    const command = parseCommandLine([
      '--manifests',
      EXAMPLES,
      '--hostname-override=node-a',
      '--min-sync-period=0',
      '--feature-gates=KubeProxyAcceleration=false',
    ]);
    if (command.command !== 'run') throw new Error('expected a run command');
    // Commit n costs 1000·n ms, so the figure names the commits it summed.
    const dataplane = new TimedFakeKernel((n) => 1000 * n);
    // A commit before the agent runs (commit 1) is no sync's.
    await dataplane.commit(dataplane.begin().queueAll([{ verb: 'add', object: { kind: 'table', family: 'ip', name: 'someone-else' } }]));
    agent = await startAgent(command.options, { logger: createLogger('info', sink), dataplane, serveHttp: false, releaseMemory: () => {} });
    await firstValueFrom(agent.syncs$.pipe(filter((r) => r.ok)));
    const synced = lines.filter((l) => l.msg === 'synced nftables rules');
    expect(synced).toHaveLength(1);
    expect(dataplane.commits).toBeGreaterThanOrEqual(2);
    let want = 0;
    for (let n = 2; n <= dataplane.commits; n++) want += n;
    expect(synced[0]!.kernelMs).toBe(1000 * want);
    expect(synced[0]!.kernelTransactions).toBe(want);
  });

  it('leaves kernelMs out when the dataplane does not measure it', async () => {
    const { lines, sink } = jsonLogLines();
    const command = parseCommandLine(['--manifests', EXAMPLES, '--hostname-override=node-a', '--min-sync-period=0']);
    if (command.command !== 'run') throw new Error('expected a run command');
    agent = await startAgent(command.options, {
      logger: createLogger('info', sink),
      dataplane: new FakeKernel(),
      serveHttp: false,
      releaseMemory: () => {},
    });
    await firstValueFrom(agent.syncs$.pipe(filter((r) => r.ok)));
    const synced = lines.filter((l) => l.msg === 'synced nftables rules');
    expect(synced).toHaveLength(1);
    expect(synced[0]).not.toHaveProperty('kernelMs');
    expect(synced[0]).not.toHaveProperty('kernelTransactions');
  });
});

// The real agent process (node src/cli.ts, started without --expose-gc) gives
// the cold sync's garbage back: what the render left before the encoding, what
// planning left while the kernel commits, the rest once the sync is done. It
// logs the three releases; the heap after is a fraction of what planning left,
// and its RSS drops. 1k services x 10 endpoints through the fake API server
// into a network namespace; the 10k figure is bench:sync's rss_mib_10k.

import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeApiServer } from '../fake-apiserver/index.ts';
import { createNetns, type NetNs } from '../helpers/netns.ts';
import { agentFlags, populate } from '../../bench/sync-cluster.ts';
import { eventually, startAgentProcess, type AgentProcess } from './agent-process.ts';

const SERVICES = 1000;

function vmRssMiB(pid: number): number {
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;
}

describe('agent memory after a large cold sync', () => {
  let api: FakeApiServer;
  let ns: NetNs;
  let agent: AgentProcess | undefined;

  beforeAll(async () => {
    api = await FakeApiServer.start({ maxHistory: 10_000 });
    populate(api, SERVICES);
    ns = createNetns('knp-e2e-mem');
  });

  afterAll(async () => {
    await agent?.stop();
    ns?.destroy();
    await api?.close();
  });

  it('is released once idle, without --expose-gc', async () => {
    // bench:sync's cluster: its own node name and CIDRs (later flags win).
    agent = await startAgentProcess(
      api,
      ns.path,
      agentFlags('0').filter((f) => !f.startsWith('--log-level')),
    );
    const synced = await eventually(
      async () => agent!.entries().find((e) => e.msg === 'synced nftables rules'),
      (e) => e !== undefined,
      120_000,
      'the cold sync',
    );
    expect(synced!.servicePorts).toBe(SERVICES);
    expect(synced!.ops as number).toBeGreaterThan(20_000);
    // A sync this large says where it is before the kernel takes its time.
    const entries = agent.entries();
    const planned = entries.findIndex((e) => e.msg === 'ruleset planned; committing it to the kernel');
    expect(planned).toBeGreaterThan(entries.findIndex((e) => e.msg === 'cluster state synced; programming the initial ruleset'));
    expect(planned).toBeLessThan(entries.findIndex((e) => e.msg === 'synced nftables rules'));
    expect(entries[planned]).toMatchObject({ kind: 'full', servicePorts: SERVICES, ops: synced!.ops });
    // While the kernel commits, what planning left is collected already (the reconciler lets its operations go) ...
    type Memory = { heapUsed: number; heapTotal: number; rss: number };
    const logged = async (msg: string) =>
      (await eventually(
        async () => agent!.entries().find((e) => e.msg === msg),
        (e) => e !== undefined,
        30_000,
        msg,
      ))!;
    // Before its operations are made and encoded, what the render left is collected: the batch lands on the live heap ...
    const rendering = await logged("released a large full sync's rendering before encoding it");
    const renderingAt = agent.entries().findIndex((e) => e.msg === rendering.msg);
    expect(renderingAt).toBeGreaterThan(planned);
    const [rb, ra] = [rendering.before as Memory, rendering.after as Memory];
    expect(ra.heapUsed).toBeLessThan(rb.heapUsed);
    expect(ra.heapTotal).toBeLessThan(rb.heapTotal);
    const planning = await logged("released a large sync's planning while the kernel commits it");
    expect(agent.entries().findIndex((e) => e.msg === planning.msg)).toBeGreaterThan(renderingAt);
    const [pb, pa] = [planning.before as Memory, planning.after as Memory];
    expect(pa.heapUsed).toBeLessThan(pb.heapUsed);
    expect(pa.heapTotal).toBeLessThan(pb.heapTotal);
    // ... and once it is done, the rest (the batch's buffers, malloc's arenas).
    const released = await logged('released memory after a large sync');
    const [before, after] = [released.before as Memory, released.after as Memory];
    expect(after.heapUsed).toBeLessThanOrEqual(before.heapUsed);
    expect(after.rss).toBeLessThanOrEqual(before.rss);
    expect(vmRssMiB(agent.child.pid!)).toBeLessThan(pb.rss);
  }, 180_000);
});

// Runs inside the flowtable VM (driven by test/vm/bench-offload.ts): TCP
// throughput client → ClusterIP (DNAT to the server) through a router that the
// REAL agent programs, with the KEP-4963 offload (--offload-packet-threshold 20)
// and without (0).
//
// Two identical client → router → server topologies, one agent each, in one
// boot (restarting an agent costs tens of seconds under TCG; an idle agent
// costs nothing measurable), rounds alternating between them. Each router holds
// the agent's whole ruleset; only the flowtable and its rule differ.
// Prints one JSON object on its last stdout line.

import { once } from 'node:events';
import { DEFAULT_TABLE_NAME } from '../../../src/reconciler/config.ts';
import { FLOWTABLE } from '../../../src/reconciler/names.ts';
import { startAgentChild, SYNC_FAILED, SYNCED, writeManifests, type AgentChild } from './agent-child.ts';
import { createRouterTopology, type RouterTopology } from './topology.ts';
import { conntrackTcp, pollFor } from './traffic.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CLUSTER_IP = '198.51.100.10';
const PORT = 5201;

type Mode = 'plain' | 'offload';

const topos: Record<Mode, RouterTopology> = { offload: createRouterTopology(), plain: createRouterTopology() };
const manifests = writeManifests('node-a', '192.0.2.1', [
  { name: 'bench', clusterIP: CLUSTER_IP, ports: [PORT], endpointIP: topos.offload.serverIp },
]);
const servers = Object.values(topos).map((t) => t.server.spawn('iperf3', ['-s', '-p', String(PORT)], { stdio: 'ignore' }));
const agents: Record<Mode, AgentChild> = {
  offload: startAgentChild([
    `--manifests=${manifests}`,
    '--hostname-override=node-a',
    `--netns=${topos.offload.router.name}`,
    '--offload-packet-threshold=20',
  ]),
  plain: startAgentChild([
    `--manifests=${manifests}`,
    '--hostname-override=node-a',
    `--netns=${topos.plain.router.name}`,
    '--offload-packet-threshold=0',
  ]),
};
const rounds: Array<{ mode: Mode; bitsPerSecond: number; offloadSeen: boolean }> = [];
let agentFailures = 0;
let agentsReadyMs = 0;
try {
  const startedAt = Date.now();
  await Promise.all(Object.values(agents).map((a) => a.waitFor((e) => e.msg === SYNCED, 240_000)));
  agentsReadyMs = Date.now() - startedAt;
  // The offload router's flowtable holds both of its interfaces before any round.
  const devices = await pollFor(
    () => topos.offload.router.tryExec('nft', ['list', 'flowtable', 'ip', DEFAULT_TABLE_NAME, FLOWTABLE]).stdout,
    (t) => /devices = \{ r-client, r-server \}/.test(t),
    15_000,
  );
  if (!/devices = \{ r-client, r-server \}/.test(devices))
    throw new Error(`the agent did not attach the router's interfaces to the flowtable:\n${devices}`);
  for (const mode of ['offload', 'plain'] as const) {
    const t = topos[mode];
    // iperf3 -s needs a moment to listen; probe it with a short connection through the Service.
    await pollFor(
      () => t.client.tryExec('socat', ['-u', 'OPEN:/dev/null', `TCP:${CLUSTER_IP}:${PORT},connect-timeout=1`]).status,
      (s) => s === 0,
      10_000,
    );
  }

  for (let i = 0; i < ROUNDS; i++) {
    // Alternate which mode goes first, so a drift in the host's load over the
    // run does not favour one of them.
    for (const mode of i % 2 === 0 ? (['plain', 'offload'] as const) : (['offload', 'plain'] as const)) {
      const t = topos[mode];
      t.router.exec('conntrack', ['-F']);
      // -O 1: the first second (slow path until the threshold, TCP ramp-up) is not counted.
      const client = t.client.spawn('iperf3', ['-c', CLUSTER_IP, '-p', String(PORT), '-t', String(SECONDS), '-O', '1', '-Z', '-J']);
      let out = '';
      client.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      // Offload is visible only while the connection is open: look during the run.
      const seen = await pollFor(
        () => conntrackTcp(t.router).some((e) => e.offloaded),
        (v) => v,
        Math.min(3_000, SECONDS * 500),
        200,
      );
      const [code] = (await once(client, 'exit')) as [number | null];
      if (code !== 0) throw new Error(`iperf3 client exited with ${code}: ${out.slice(-2000)}`);
      const report = JSON.parse(out) as { end: { sum_received: { bits_per_second: number } } };
      rounds.push({ mode, bitsPerSecond: report.end.sum_received.bits_per_second, offloadSeen: seen });
    }
  }
  for (const a of Object.values(agents)) agentFailures += a.entries().filter((e) => e.msg === SYNC_FAILED || e.level >= 50).length;
} finally {
  for (const a of Object.values(agents)) await a.stop();
  for (const s of servers) s.kill('SIGKILL');
  for (const t of Object.values(topos)) t.destroy();
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const plain = median(rounds.filter((r) => r.mode === 'plain').map((r) => r.bitsPerSecond));
const offload = median(rounds.filter((r) => r.mode === 'offload').map((r) => r.bitsPerSecond));
// The two runs of one round ran back to back, under about the same host load:
// their ratio is steadier than a ratio of medians taken across the whole run.
const pairRatios: number[] = [];
for (let i = 0; i + 1 < rounds.length; i += 2) {
  const [a, b] = [rounds[i]!, rounds[i + 1]!];
  const [p, o] = a.mode === 'plain' ? [a, b] : [b, a];
  pairRatios.push(o.bitsPerSecond / p.bitsPerSecond);
}
console.log(
  JSON.stringify({
    seconds: SECONDS,
    rounds,
    plain_bps: plain,
    offload_bps: offload,
    pair_ratios: pairRatios,
    offload_over_plain: median(pairRatios),
    ratio_of_medians: offload / plain,
    offload_seen_in_every_offload_round: rounds.filter((r) => r.mode === 'offload').every((r) => r.offloadSeen),
    offload_seen_in_a_plain_round: rounds.some((r) => r.mode === 'plain' && r.offloadSeen),
    agent_failed_syncs: agentFailures,
    agents_ready_ms: agentsReadyMs,
  }),
);

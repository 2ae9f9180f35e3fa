// Runs inside the flowtable VM (driven by test/vm/bench-offload.ts): TCP
// throughput client → ClusterIP (DNAT to the server) through the router, with
// and without the KEP-4963 offload rule, alternating rounds in one boot.
// The router is programmed with the nft CLI for now: the agent's own path
// replaces it once the netlink dataplane can run here.
// Prints one JSON object on its last stdout line.

import { once } from 'node:events';
import { createRouterTopology } from './topology.ts';
import { conntrackTcp, pollFor } from './traffic.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CLUSTER_IP = '198.51.100.10';
const SERVICE_PORT = 80;
const SERVER_PORT = 5201;

type Mode = 'plain' | 'offload';

function ruleset(mode: Mode, routerIfs: string[], serverIp: string): string {
  // Both modes track and DNAT the same way; only the offload rule and its
  // flowtable differ.
  return `
table inet knp-bench {
  set cluster-ips { type ipv4_addr; elements = { ${CLUSTER_IP} } }
  ${mode === 'offload' ? `flowtable ft { hook ingress priority filter; devices = { ${routerIfs.join(', ')} }; }` : ''}
  chain prerouting {
    type nat hook prerouting priority dstnat; policy accept;
    ip daddr ${CLUSTER_IP} tcp dport ${SERVICE_PORT} dnat ip to ${serverIp}:${SERVER_PORT}
  }
  chain forward {
    type filter hook forward priority filter; policy accept;
    ${mode === 'offload' ? 'ct original ip daddr @cluster-ips ct packets > 20 flow offload @ft' : 'ct original ip daddr @cluster-ips counter'}
  }
}
`;
}

const topo = createRouterTopology();
const server = topo.server.spawn('iperf3', ['-s', '-p', String(SERVER_PORT)], { stdio: 'ignore' });
const rounds: Array<{ mode: Mode; bitsPerSecond: number; offloadSeen: boolean }> = [];
try {
  // iperf3 -s needs a moment to listen; probe it with a short connection.
  await pollFor(
    () => topo.client.tryExec('socat', ['-u', 'OPEN:/dev/null', `TCP:${topo.serverIp}:${SERVER_PORT},connect-timeout=1`]).status,
    (s) => s === 0,
    10_000,
  );
  for (let i = 0; i < ROUNDS; i++) {
    // Alternate which mode goes first, so a drift in the host's load over the
    // run does not favour one of them.
    for (const mode of i % 2 === 0 ? (['plain', 'offload'] as const) : (['offload', 'plain'] as const)) {
      topo.router.exec('nft', ['-f', '-'], {
        // 'add then delete' empties the table whether or not it exists
        // (nft 1.0.6 and kernel 6.1 have no 'destroy').
        input: `table inet knp-bench {}\ndelete table inet knp-bench\n${ruleset(mode, [topo.routerClientIf, topo.routerServerIf], topo.serverIp)}`,
      });
      topo.router.exec('conntrack', ['-F']);
      const client = topo.client.spawn('iperf3', ['-c', CLUSTER_IP, '-p', String(SERVICE_PORT), '-t', String(SECONDS), '-Z', '-J']);
      let out = '';
      client.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      // Offload is visible only while the connection is open: look during the run.
      const seen = await pollFor(
        () => conntrackTcp(topo.router).some((e) => e.offloaded),
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
} finally {
  server.kill('SIGKILL');
  topo.destroy();
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
  }),
);

// npm run bench:offload — TCP throughput through a Service with the KEP-4963
// flowtable offload vs without, in the flowtable VM (qemu TCG: absolute
// figures are emulation figures; the ratio is the result). The routers are
// programmed by the real agent (--offload-packet-threshold 20 vs 0). The guest
// part is scenarios/bench-offload-guest.ts. Last stdout line: one JSON object
// with offload_over_plain.

import { runInVm } from './vm.ts';

const r = await runInVm({
  command: ['node', 'test/vm/scenarios/bench-offload-guest.ts'],
  env: {
    BENCH_SECONDS: process.env.BENCH_SECONDS ?? '3',
    BENCH_ROUNDS: process.env.BENCH_ROUNDS ?? '5',
  },
  timeoutMs: 600_000,
  // One vCPU: client, server and forwarding share it, so the figure is the CPU
  // cost per byte that offload saves; with two, where TCG places the threads
  // next to the host's other load swung single rounds from 0.5x to 2x.
  cpus: Number(process.env.BENCH_CPUS ?? 1),
});
if (r.exitCode !== 0) {
  console.error(r.stderr);
  console.error(r.consoleLog.slice(-4000));
  throw new Error(`the benchmark failed in the VM with exit code ${r.exitCode}`);
}
const result = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as {
  rounds: Array<{ mode: string; bitsPerSecond: number; offloadSeen: boolean }>;
  plain_bps: number;
  offload_bps: number;
  offload_over_plain: number;
  pair_ratios: number[];
  ratio_of_medians: number;
  offload_seen_in_every_offload_round: boolean;
  offload_seen_in_a_plain_round: boolean;
  agent_failed_syncs: number;
  agents_ready_ms: number;
};
const gbps = (bps: number) => `${(bps / 1e9).toFixed(3)} Gbit/s`;
for (const round of result.rounds) {
  console.log(`${round.mode.padEnd(8)} ${gbps(round.bitsPerSecond)}${round.offloadSeen ? '  [OFFLOAD seen]' : ''}`);
}
console.log(`plain   (median) ${gbps(result.plain_bps)}`);
console.log(`offload (median) ${gbps(result.offload_bps)}`);
console.log(`ratio per round: ${result.pair_ratios.map((x) => x.toFixed(3)).join(' ')}`);
console.log(
  `ratio offload/plain (median of rounds) ${result.offload_over_plain.toFixed(3)}, of medians ` +
    `${result.ratio_of_medians.toFixed(3)}  (VM boot ${r.bootMs} ms, whole run ${r.totalMs} ms)`,
);
if (!result.offload_seen_in_every_offload_round || result.offload_seen_in_a_plain_round) {
  console.error('offload was not seen where expected: the ratio does not compare what it claims to');
  process.exitCode = 1;
}
if (result.agent_failed_syncs > 0) {
  console.error(`the agents logged ${result.agent_failed_syncs} failed syncs or errors during the run`);
  process.exitCode = 1;
}
console.log(
  JSON.stringify({
    offload_over_plain: Number(result.offload_over_plain.toFixed(4)),
    ratio_of_medians: Number(result.ratio_of_medians.toFixed(4)),
    plain_bps: Math.round(result.plain_bps),
    offload_bps: Math.round(result.offload_bps),
    rounds: result.pair_ratios.length,
    vm_boot_ms: r.bootMs,
    agents_ready_ms: result.agents_ready_ms,
    engine: 'agent',
  }),
);

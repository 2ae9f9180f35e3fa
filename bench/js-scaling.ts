// npm run bench:js-scaling — the agent's JS work per endpoint, by size, without
// a kernel or an API server: the cluster of bench:sync (sync-cluster.ts) is
// projected as the streams do, folded by the change tracker, rendered and
// planned as the agent's full sync (planGeneratedFullSync), its operations
// checked and encoded into one batch as they are made (Transaction.queueGenerated,
// encodeOperationStream), each stage timed. Each size runs
// in a child process of its own, so that one size's heap does not slow the
// next. What it shows: whether any stage grows faster than the work (the issue
// asks for JS time per endpoint within 25% from 10k to 100k).
//
// BENCH_SIZES=10k,30k,100k (default; labels as in bench/sizes.ts, "10kv6" an
// IPv6 cluster's: the IPv6 codec and tables are paths of their own). Needs no
// root. The last line is one JSON object.

import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseCommandLine } from '../src/cli/flags.ts';
import { parseFeatureGates } from '../src/config/feature-gates.ts';
import { rulesetConfigFor } from '../src/agent/ruleset-config.ts';
import { ServiceChangeTracker } from '../src/model/change-tracker.ts';
import { encodeOperationStream } from '../src/nft/netlink/encode.ts';
import { ByteWriter } from '../src/nft/netlink/wire.ts';
import type { NftMap, NftSet } from '../src/nft/objects.ts';
import { Transaction } from '../src/nft/transaction.ts';
import { generatedOperations } from '../src/reconciler/diff.ts';
import { planGeneratedFullSync } from '../src/reconciler/full-sync.ts';
import { renderRuleset } from '../src/reconciler/ruleset.ts';
import { StringPool } from '../src/streams/intern.ts';
import { projectEndpointSlice } from '../src/streams/project-endpoint-slice.ts';
import { projectNode } from '../src/streams/project-node.ts';
import { projectService } from '../src/streams/project-service.ts';
import { agentFlags, nodeObject, serviceObject, sliceObject } from './sync-cluster.ts';
import { parseSize, parseSizes, type BenchSize } from './sizes.ts';

/** 'encode' checks each operation as it is made (the checks are no pass of their own). */
const STAGES = ['project', 'model', 'plan', 'encode'] as const;
type Stage = (typeof STAGES)[number];
interface SizeFigures {
  label: string;
  endpoints: number;
  ops: number;
  /** Wall time per stage. */
  ms: Record<Stage, number>;
  /** The main thread's CPU time per stage (what other processes' load does not inflate). */
  cpuMs: Record<Stage, number>;
}

function unwrap<T>(p: { ok: true; value: T } | { ok: false; reason: string }): T {
  if (!p.ok) throw new Error(`projection failed: ${p.reason}`);
  return p.value;
}

/** One size, in this process: every stage once, timed. */
function measure(size: BenchSize): SizeFigures {
  const command = parseCommandLine(['--kubeconfig=/dev/null', ...agentFlags('1s', 'map', size.family)]);
  if (command.command !== 'run') throw new Error('unexpected command');
  const gates = parseFeatureGates(command.options.featureGates);
  const ms = {} as Record<Stage, number>;
  const cpuMs = {} as Record<Stage, number>;
  const cpu = () => {
    const u = process.threadCpuUsage();
    return (u.user + u.system) / 1000;
  };
  const time = <T>(stage: Stage, fn: () => T): T => {
    const [t0, c0] = [performance.now(), cpu()];
    const out = fn();
    [ms[stage], cpuMs[stage]] = [performance.now() - t0, cpu() - c0];
    return out;
  };

  const pool = new StringPool();
  const node = unwrap(projectNode(nodeObject(size.family), pool));
  const { services, slices } = time('project', () => {
    const services = [];
    const slices = [];
    for (let i = 0; i < size.services; i++) {
      services.push(unwrap(projectService(serviceObject(i, size.family), pool)));
      slices.push(unwrap(projectEndpointSlice(sliceObject(i, undefined, size.endpoints, size.family), pool)));
    }
    return { services, slices };
  });
  const tracker = new ServiceChangeTracker({ nodeName: node.name, featureGates: gates });
  time('model', () => {
    for (const s of services) tracker.onService({ type: 'upsert', key: `${s.namespace}/${s.name}`, object: s }, 0);
    for (const s of slices) tracker.onEndpointSlice({ type: 'upsert', key: `${s.namespace}/${s.name}`, object: s }, 0);
    tracker.onNode(node, 0);
    tracker.drain();
  });

  const config = rulesetConfigFor(command.options, node, { wanted: false, supported: false, devices: [] });
  // As the agent's full sync does it: rendered keeping no rendering (each port is rendered again
  // as its operations are made), planned with its operations made on demand, then checked and
  // encoded as they are made.
  const { generated } = time('plan', () =>
    planGeneratedFullSync(renderRuleset([...tracker.servicePorts()], config, undefined, undefined, { keepRenderings: false }), 'replace'),
  );
  const tx = new Transaction().queueGenerated(generated!.items, generated!.length);
  const containers = new Map<string, NftSet | NftMap>();
  for (const { object: o } of generatedOperations(generated!))
    if (o.kind === 'set' || o.kind === 'map') containers.set(`${o.family}\0${o.table}\0${o.name}`, o);
  time('encode', () =>
    encodeOperationStream(tx.items(), tx.length, (f, t, n) => containers.get(`${f}\0${t}\0${n}`), new ByteWriter(1 << 16)),
  );
  return { label: size.label, endpoints: size.services * size.endpoints, ops: tx.length, ms, cpuMs };
}

const one = process.argv.find((a) => a.startsWith('--one='));
if (one) {
  process.stdout.write(`${JSON.stringify(measure(parseSize(one.slice('--one='.length))))}\n`);
} else {
  const sizes = parseSizes(process.env.BENCH_SIZES ?? '10k,30k,100k');
  const self = fileURLToPath(import.meta.url);
  const results: SizeFigures[] = [];
  console.log(
    `load average at start: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  for (const size of sizes) {
    const out = execFileSync(process.execPath, [self, `--one=${size.label}`], { encoding: 'utf8', maxBuffer: 1 << 20 });
    const r = JSON.parse(out.trim().split('\n').pop()!) as SizeFigures;
    r.label = size.label;
    results.push(r);
    const per = STAGES.map(
      (s) => `${s} ${r.cpuMs[s].toFixed(0)} (${r.ms[s].toFixed(0)} wall) ms = ${((r.cpuMs[s] * 1000) / r.endpoints).toFixed(2)} us/ep`,
    ).join(', ');
    console.log(`${r.label}: ${r.endpoints} endpoints, ${r.ops} ops; main-thread CPU: ${per} (load ${loadavg()[0]!.toFixed(2)})`);
  }
  const summary: Record<string, number> = {};
  for (const r of results) {
    for (const s of STAGES) summary[`js_${s}_cpu_us_per_endpoint_${r.label}`] = Math.round((r.cpuMs[s] * 1e5) / r.endpoints) / 100;
    const js = r.cpuMs.plan + r.cpuMs.encode;
    summary[`js_plan_validate_encode_cpu_us_per_endpoint_${r.label}`] = Math.round((js * 1e5) / r.endpoints) / 100;
  }
  const [first, last] = [results[0], results.at(-1)];
  if (first && last && first !== last) {
    const per = (r: SizeFigures) => (r.cpuMs.plan + r.cpuMs.encode) / r.endpoints;
    summary[`js_per_endpoint_${last.label}_over_${first.label}`] = Math.round((per(last) / per(first)) * 100) / 100;
  }
  summary.loadavg_1m_end = Math.round(loadavg()[0]! * 100) / 100;
  console.log(JSON.stringify(summary));
}

// bench:sync's raw-load child: the same ServicePorts the agent programs (read
// from the same fake API server through the same streams and model), turned
// into the reconciler's full-sync operations, then committed through the
// NetlinkDataplane into a fresh namespace — timed on its own. Also writes the
// operations as `nft` text for the parent's `nft -f` run, and measures how much
// heap each stage keeps (streams, model, reconciler), for the RSS breakdown.
//
// Run by bench/sync.ts: node --expose-gc bench/sync-raw-load.ts KUBECONFIG NETNS_PATH TEXT_FILE MIN_SYNC

import { writeFileSync } from 'node:fs';
import { parseCommandLine } from '../src/cli/flags.ts';
import { parseFeatureGates } from '../src/config/feature-gates.ts';
import { ServiceChangeTracker } from '../src/model/change-tracker.ts';
import { NetlinkDataplane } from '../src/nft/netlink/netlink-dataplane.ts';
import { renderOperations } from '../src/nft/render-text.ts';
import { createLogger } from '../src/observability/logger.ts';
import { rulesetConfigFor } from '../src/agent/ruleset-config.ts';
import { Reconciler } from '../src/reconciler/reconciler.ts';
import { createClusterStreams } from '../src/streams/cluster-streams.ts';
import { agentFlags, NODE_NAME } from './sync-cluster.ts';

export interface RawLoadResult {
  servicePorts: number;
  ops: number;
  /** Reconciler.plan (render + full-sync plan), ms. */
  planMs: number;
  /** NetlinkDataplane.commit (validate + encode + kernel), ms. */
  commitMs: number;
  textBytes: number;
  /** Heap kept after each stage, after a full GC (MiB). */
  heapMiB: { base: number; streams: number; model: number; reconcilerWithOps: number; reconciler: number };
  /** external + arrayBuffers right after the commit (MiB): the encoded batch. */
  externalAfterCommitMiB: number;
  rssMiB: number;
  /** process.memoryUsage() after the commit, the operations dropped and a full GC (MiB). */
  settled: { rss: number; heapTotal: number; heapUsed: number; external: number; arrayBuffers: number };
}

const MiB = 2 ** 20;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');
const heap = (): number => {
  gc();
  gc();
  return process.memoryUsage().heapUsed / MiB;
};

/** The agent's options, as bench:sync's agent gets them: argv's minimum sync period, endpoint shape and family. */
function agentOptions(kubeconfig: string, minSync: string, shape: string, family: string) {
  const command = parseCommandLine([
    `--kubeconfig=${kubeconfig}`,
    ...agentFlags(minSync, shape === 'chains' ? 'chains' : 'map', family === 'IPv6' ? 'IPv6' : 'IPv4'),
  ]);
  if (command.command !== 'run') throw new Error('unexpected command');
  return command.options;
}

async function main(): Promise<void> {
  const [kubeconfig, netns, textFile, minSync, shape, family] = process.argv.slice(2);
  const options = agentOptions(kubeconfig!, minSync!, shape!, family ?? 'IPv4');
  const logger = createLogger('warn', process.stderr);
  const gates = parseFeatureGates(options.featureGates);
  const base = heap();

  const streams = await createClusterStreams({
    source: 'apiserver',
    kubeConfig: options.kubeconfig,
    nodeName: NODE_NAME,
    serviceProxyName: options.serviceProxyName,
    logger,
  });
  await streams.whenSynced();
  const afterStreams = heap();

  // As the agent does: every stored object through the change tracker.
  const tracker = new ServiceChangeTracker({ nodeName: NODE_NAME, featureGates: gates });
  const now = Date.now();
  streams.services$.subscribe((ev) => tracker.onService(ev, now)).unsubscribe();
  streams.endpointSlices$.subscribe((ev) => tracker.onEndpointSlice(ev, now)).unsubscribe();
  const node = streams.node();
  tracker.onNode(node, now);
  tracker.drain();
  const afterModel = heap();

  // The agent's flowtable probe answers "unsupported" on this kernel, so no offload objects.
  const config = rulesetConfigFor(options, node, {
    wanted: gates.KubeProxyAcceleration && options.offloadPacketThreshold > 0,
    supported: false,
    devices: [],
  });
  const dataplane = new NetlinkDataplane({ netns });
  const reconciler = new Reconciler({
    dataplane,
    config,
    now: Date.now,
    servicePorts: () => ({ ports: [...tracker.servicePorts()], changed: tracker.drain().changed }),
  });
  let t0 = performance.now();
  let planned: ReturnType<Reconciler['plan']> | undefined = reconciler.plan({ kind: 'full', mode: 'replace' });
  const planMs = performance.now() - t0;
  let ops = planned.plan.ops;
  const desired = planned.desired;
  planned = undefined;
  const servicePorts = desired.services.size;
  const afterPlan = heap();

  t0 = performance.now();
  await dataplane.commit(dataplane.begin().queueAll(ops));
  const commitMs = performance.now() - t0;
  const mem = process.memoryUsage();
  const externalAfterCommitMiB = (mem.external + mem.arrayBuffers) / MiB;
  const rssMiB = mem.rss / MiB;

  let text = renderOperations(ops);
  writeFileSync(textFile!, text);
  const textBytes = Buffer.byteLength(text);
  text = '';
  const opCount = ops.length;
  ops = [];
  // A new task: the weakly held renderings of this one may go now, as in the agent after its commit.
  await new Promise((r) => setTimeout(r, 0));
  const afterDrop = heap();
  const settled = process.memoryUsage();
  await streams.stop();

  const result: RawLoadResult = {
    servicePorts,
    ops: opCount,
    planMs,
    commitMs,
    textBytes,
    heapMiB: {
      base,
      streams: afterStreams - base,
      model: afterModel - afterStreams,
      reconcilerWithOps: afterPlan - afterModel,
      reconciler: afterDrop - afterModel,
    },
    externalAfterCommitMiB,
    rssMiB,
    settled: {
      rss: settled.rss / MiB,
      heapTotal: settled.heapTotal / MiB,
      heapUsed: settled.heapUsed / MiB,
      external: settled.external / MiB,
      arrayBuffers: settled.arrayBuffers / MiB,
    },
  };
  // Keep the ruleset alive until here, so that the measurement above saw it held.
  if (desired.services.size < 0) console.log('unreachable');
  process.send!(result);
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`raw load failed: ${(e as Error).stack}\n`);
    process.exit(1);
  },
);

// --dry-run: read the cluster state once, render the full desired ruleset and
// print it as nft text. Touches no kernel, so nothing is probed: flowtable
// support is assumed (the header says so) to show what offload would add.

import { hostname, networkInterfaces } from 'node:os';
import type { AgentOptions } from './options.ts';
import { parseFeatureGates } from '../config/feature-gates.ts';
import { ServiceChangeTracker } from '../model/change-tracker.ts';
import { renderTableText as renderText } from '../nft/render-text.ts';
import type { Logger } from '../observability/logger.ts';
import { rulesetListings } from '../reconciler/listing.ts';
import { renderRuleset } from '../reconciler/ruleset.ts';
import { createClusterStreams } from '../streams/cluster-streams.ts';
import { streamsOptions, warnNodeNotFound } from './agent.ts';
import { rulesetConfigFor } from './ruleset-config.ts';

export async function dryRun(options: AgentOptions, logger: Logger): Promise<string> {
  const gates = parseFeatureGates(options.featureGates);
  const nodeName = options.hostnameOverride ?? hostname();
  const streams = await createClusterStreams(streamsOptions(options, nodeName, logger));
  try {
    await streams.whenSynced();
    const tracker = new ServiceChangeTracker({ nodeName, featureGates: gates });
    const now = Date.now();
    streams.services$.subscribe((ev) => tracker.onService(ev, now)).unsubscribe();
    streams.endpointSlices$.subscribe((ev) => tracker.onEndpointSlice(ev, now)).unsubscribe();
    let node;
    streams.node$.subscribe((n) => (node = n)).unsubscribe();
    tracker.onNode(node, now);
    if (node === undefined) warnNodeNotFound(logger, nodeName);
    const drained = tracker.drain();
    for (const w of drained.warnings) logger.warn({ warning: w }, 'service model warning');

    const wantOffload = gates.KubeProxyAcceleration && options.offloadPacketThreshold > 0;
    const devices = Object.entries(networkInterfaces())
      .filter(([, addrs]) => !(addrs ?? []).some((a) => a.internal))
      .map(([name]) => name)
      .sort();
    const config = rulesetConfigFor(options, node, { wanted: wantOffload, supported: wantOffload, devices });
    const servicePorts = [...tracker.servicePorts()];
    const ruleset = renderRuleset(servicePorts, config);
    for (const p of ruleset.problems) logger.warn({ problem: p }, 'service port left out of the ruleset');
    const header = [
      `# kube-nft-proxy --dry-run for node ${nodeName}: ${servicePorts.length} service ports`,
      wantOffload ? '# flowtable support assumed, not probed (a dry run touches no kernel)' : '# flowtable offload off',
    ];
    return header.join('\n') + '\n' + rulesetListings(ruleset).map((l) => renderText(l)).join('\n');
  } finally {
    await streams.stop();
  }
}

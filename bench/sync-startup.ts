// bench:sync's start-up figure: 1,000 Services x 2 endpoints, all present in
// the fake API server (over TLS, with a bearer token, as a real cluster's)
// before the agent starts, and the time from spawn until every rule is in the
// kernel, split into phases:
//   boot     spawn → node runs user code (a preload prints the moment)
//   modules  → the agent's "starting" line: loading our modules and flags
//   setup    → the API server's first request: the addon and the flowtable
//            probe, the kubeconfig, the client and its TLS connection
//   list     → "cluster state synced": listing (or watch-listing) everything
//   commit   → the first "synced" line: model, plan and the kernel commit
//            (its kernel share apart)
// Several runs against the same server; each phase's median is reported.

import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { EndpointShape } from '../src/reconciler/config.ts';
import { FakeApiServer } from '../test/fake-apiserver/index.ts';
import { createNetns } from '../test/helpers/netns.ts';
import { AgentChild } from './agent-child.ts';
import { agentFlags, populate } from './sync-cluster.ts';

export const STARTUP_SERVICES = 1000;
export const STARTUP_ENDPOINTS = 2;
export const STARTUP_PHASES = ['boot', 'modules', 'setup', 'list', 'commit'] as const;
export type StartupPhase = (typeof STARTUP_PHASES)[number];

export interface StartupRun {
  totalMs: number;
  phasesMs: Record<StartupPhase, number>;
  /** The kernel's share of the first commit. */
  kernelMs: number;
}

export interface StartupResult {
  runs: StartupRun[];
  median: StartupRun;
  load: number[];
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function oneRun(api: FakeApiServer, kubeconfig: string, shape: EndpointShape): Promise<StartupRun> {
  const ns = createNetns('knp-bench-start');
  try {
    const firstRequest = api.requests.length;
    const spawnedAt = Date.now();
    const agent = new AgentChild([`--kubeconfig=${kubeconfig}`, `--netns=${ns.path}`, ...agentFlags('1s', shape)]);
    try {
      const start = await agent.waitFor(0, (r) => r.msg === 'starting kube-nft-proxy', 60_000, 'agent start');
      const ready = await agent.waitFor(
        start.index,
        (r) => r.msg === 'cluster state synced; programming the initial ruleset',
        60_000,
        'list',
      );
      const synced = await agent.waitFor(ready.index, (r) => r.msg === 'synced nftables rules', 60_000, 'first sync');
      if (synced.record.servicePorts !== STARTUP_SERVICES)
        throw new Error(`start-up sync programmed ${String(synced.record.servicePorts)} service ports`);
      const requested = api.requests[firstRequest]?.at;
      if (agent.bootedAt === undefined || requested === undefined) throw new Error('start-up: no boot mark or no API request seen');
      return {
        totalMs: synced.record.time - spawnedAt,
        phasesMs: {
          boot: agent.bootedAt - spawnedAt,
          modules: start.record.time - agent.bootedAt,
          setup: requested - start.record.time,
          list: ready.record.time - requested,
          commit: synced.record.time - ready.record.time,
        },
        kernelMs: Number(synced.record.kernelMs ?? NaN),
      };
    } finally {
      await agent.stop();
    }
  } finally {
    ns.destroy();
  }
}

/** `runs` cold starts of the agent against a TLS fake API server with 1,000 Services x 2 endpoints. */
export async function measureStartup(dir: string, shape: EndpointShape, runs: number): Promise<StartupResult> {
  const api = await FakeApiServer.start({ tls: true, token: 'bench-startup' });
  try {
    populate(api, STARTUP_SERVICES, STARTUP_ENDPOINTS);
    const kubeconfig = join(dir, 'kubeconfig-startup.json');
    api.writeKubeconfig(kubeconfig);
    const load = loadavg();
    // One start first, not counted: the page cache then holds node, the modules and the addon, as on a node that restarts the agent.
    await oneRun(api, kubeconfig, shape);
    const all: StartupRun[] = [];
    for (let i = 0; i < runs; i++) all.push(await oneRun(api, kubeconfig, shape));
    const phasesMs = {} as Record<StartupPhase, number>;
    for (const p of STARTUP_PHASES) phasesMs[p] = median(all.map((r) => r.phasesMs[p]));
    return {
      runs: all,
      median: { totalMs: median(all.map((r) => r.totalMs)), phasesMs, kernelMs: median(all.map((r) => r.kernelMs)) },
      load,
    };
  } finally {
    await api.close();
  }
}

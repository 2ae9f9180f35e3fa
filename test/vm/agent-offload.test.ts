// The REAL agent (node src/cli.ts, manifests) in a kernel that has flowtables
// (the VM), programming a router namespace between a client and a server
// behind a ClusterIP: KEP-4963 end to end. The observations come from
// scenarios/agent-offload.ts; each expectation below is one claim of issue 6.
// One VM boot holds the whole scenario; a VM that does not boot fails every
// test here (beforeAll throws), it never skips.

import { beforeAll, describe, expect, it } from 'vitest';
import type { Flowtable } from '../../src/nft/objects.ts';
import type { FastPathLook } from './scenarios/traffic.ts';
import { runInVm, type VmRunResult } from './vm.ts';

interface Entry {
  line: string;
  offloaded: boolean;
}
interface Devices {
  ip: string[] | null;
  ip6: string[] | null;
  ours: string[] | null;
}
interface LinkStep {
  ms: number;
  devices: Devices;
  deviceLogs: string[][];
  syncs: number;
  incrementalOps: number[];
  failedSyncs: number;
}
interface LogEntry {
  level: number;
  msg: string;
  [k: string]: unknown;
}
interface AgentSummary {
  deviceLogs: string[][];
  syncs: number;
  failedSyncs: number;
  problems: LogEntry[];
  exitCode: number | null;
}
interface Observations {
  /** From spawning the agent to its first successful sync. */
  agentReadyMs: number;
  probeLog: LogEntry | null;
  initialDevices: Devices;
  /** From the first sync's log line to the follower's first decision and to the end of the sync started after it. */
  devicesTiming: { decidedMs: number; programmedMs: number };
  offloadEnabledMetric: number | null;
  devicesMetric: number | null;
  devicesMetricAtEnd: number | null;
  monitorRestartsAtEnd: number | null;
  nftRuleset: string;
  listedFlowtables: Flowtable[] | null;
  unreadable: unknown[];
  longOffloaded: Entry | null;
  shortWhileOpen: Entry | null;
  addVeth: LinkStep;
  flap: LinkStep;
  longAfterFlap: FastPathLook;
  rename: LinkStep;
  renameDesired: string[] | null;
  del: LinkStep;
  afterDelete: Omit<LinkStep, 'ms'>;
  longAfterDelete: FastPathLook;
  recreate: LinkStep;
  longStillOpen: FastPathLook;
  longAfterClose: Entry | null;
  on: AgentSummary;
  off: AgentSummary & {
    firstSyncKind: string | null;
    probeLog: LogEntry | null;
    offloadEnabledMetric: number | null;
    ruleset: string;
    listedFlowtables: Flowtable[] | null;
    samples: Entry[];
  };
  scenarioMs: number;
}

const BOTH = ['r-client', 'r-server'];
const WITH_EXTRA = ['r-client', 'r-extra', 'r-server'];
const RENAMED = ['r-client', 'r-renamed', 'r-server'];
const all = (list: string[]): Devices => ({ ip: list, ip6: list, ours: list });
/** Packets counted by conntrack accounting in each direction of an entry. */
const packets = (line: string) => [...line.matchAll(/packets=(\d+)/g)].map((m) => Number(m[1]));

describe('the agent offloads Service connections in a kernel with flowtables (VM)', () => {
  let run: VmRunResult;
  let obs: Observations;

  beforeAll(async () => {
    run = await runInVm({ command: ['node', 'test/vm/scenarios/agent-offload.ts'], timeoutMs: 420_000 });
    if (run.exitCode !== 0) {
      throw new Error(
        `agent scenario failed with exit code ${run.exitCode}\n${run.stderr.slice(-6000)}\n--- console ---\n${run.consoleLog.slice(-3000)}`,
      );
    }
    obs = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Observations;
    console.log(
      `agent scenario: boot ${run.bootMs} ms, scenario ${run.commandMs} ms (agent spawn to first sync ` +
        `${obs.agentReadyMs} ms; devices decided ${obs.devicesTiming.decidedMs} ms and programmed ` +
        `${obs.devicesTiming.programmedMs} ms after it), whole VM ${run.totalMs} ms; link changes seen in ` +
        `${[obs.addVeth, obs.flap, obs.rename, obs.del, obs.recreate].map((s) => s.ms).join(' / ')} ms`,
    );
  }, 450_000);

  it('probes flowtables at start-up, says offload is on (log and metric)', () => {
    expect(obs.probeLog, 'no start-up log line about the flowtable capability').toMatchObject({ status: 'supported', level: 30 });
    expect(obs.offloadEnabledMetric, 'kube_nft_proxy_flowtable_offload_enabled').toBe(1);
  });

  it('creates the flowtable in both tables with the router interfaces (all but lo), as nft and our list() see it', () => {
    expect(obs.initialDevices, 'flowtable devices (nft ip / nft ip6 / NetlinkDataplane.list)').toEqual(all(BOTH));
    expect(obs.unreadable, 'list() could not decode part of the table').toEqual([]);
    expect(obs.listedFlowtables).toHaveLength(1);
    expect(obs.listedFlowtables![0]).toMatchObject({ family: 'ip', name: 'service-flowtable', hook: 'ingress', priority: 0 });
    expect(obs.devicesMetric, 'kube_nft_proxy_flowtable_devices').toBe(2);
  });

  it('programs the KEP-4963 rule and its IPv6 twin in the forward filter chain', () => {
    expect(obs.nftRuleset).toMatch(/flowtable service-flowtable \{\s*hook ingress priority filter\s*devices = \{ r-client, r-server \}/);
    expect(obs.nftRuleset).toContain('ct original ip daddr @cluster-ips ct packets > 20 flow add @service-flowtable');
    expect(obs.nftRuleset).toContain('ct original ip6 daddr @cluster-ips ct packets > 20 flow add @service-flowtable');
  });

  it('offloads a long transfer to the ClusterIP, DNATed to the server by the agent', () => {
    expect(obs.longOffloaded?.offloaded, `long flow never showed [OFFLOAD]: ${obs.longOffloaded?.line}`).toBe(true);
    expect(obs.longOffloaded!.line).toMatch(/dst=198\.51\.100\.10 .*src=203\.0\.113\.2 /);
  });

  it('does not offload a connection under the packet threshold', () => {
    expect(obs.shortWhileOpen, 'the short flow is missing from conntrack').not.toBeNull();
    expect(obs.shortWhileOpen!.line).toContain('ESTABLISHED');
    expect(obs.shortWhileOpen!.offloaded).toBe(false);
    const counted = packets(obs.shortWhileOpen!.line);
    expect(counted, 'accounting should be on (the rule turns it on)').toHaveLength(2);
    expect(counted[0]! + counted[1]!).toBeLessThanOrEqual(20);
  });

  it('adds a new veth in the router to the flowtable within one sync, without a failed commit', () => {
    expect(obs.addVeth.devices).toEqual(all(WITH_EXTRA));
    expect(obs.addVeth.deviceLogs, 'the agent committed a transient interface name').toEqual([WITH_EXTRA]);
    expect(obs.addVeth.syncs, 'syncs between the link appearing and the kernel holding it').toBeGreaterThanOrEqual(1);
    expect(obs.addVeth.failedSyncs).toBe(0);
  });

  it('rides out a flap of the interface carrying the transfer: no change, no commit, the flow offloaded again', () => {
    expect(obs.flap.devices).toEqual(all(WITH_EXTRA));
    expect(obs.flap.deviceLogs).toEqual([]);
    expect(obs.flap.failedSyncs).toBe(0);
    expect(obs.longAfterFlap.onFastPath, `after the flap: ${JSON.stringify(obs.longAfterFlap)}`).toBe(true);
  });

  it('follows a rename: the old name leaves, the new name joins', () => {
    expect(obs.rename.devices).toEqual(all(RENAMED));
    expect(obs.renameDesired).toEqual(RENAMED);
    expect(obs.rename.failedSyncs).toBe(0);
  });

  it('drops a deleted interface from its desired state and keeps committing; the offloaded transfer survives', () => {
    expect(obs.del.devices).toEqual(all(BOTH));
    expect(obs.del.deviceLogs).toEqual([BOTH]);
    // The kernel dropped it itself: nothing to commit for it (nor a re-created flowtable).
    expect(obs.del.syncs).toBeGreaterThanOrEqual(1);
    expect(
      obs.del.incrementalOps.every((n) => n === 0),
      `operations committed: ${obs.del.incrementalOps}`,
    ).toBe(true);
    expect(obs.afterDelete.devices).toEqual(all(BOTH));
    expect(obs.afterDelete.failedSyncs, 'a sync failed after the delete (a vanished device named?)').toBe(0);
    expect(obs.longAfterDelete.onFastPath, `after the delete: ${JSON.stringify(obs.longAfterDelete)}`).toBe(true);
  });

  it('re-attaches an interface re-created under a name the flowtable held before', () => {
    expect(obs.recreate.devices).toEqual(all(WITH_EXTRA));
    expect(obs.recreate.deviceLogs.at(-1)).toEqual(WITH_EXTRA);
    expect(obs.recreate.failedSyncs).toBe(0);
    expect(obs.devicesMetricAtEnd).toBe(3);
    // The monitor followed every change above itself: none failed and was replaced.
    expect(obs.monitorRestartsAtEnd, 'kube_nft_proxy_link_monitor_restarts_total').toBe(0);
  });

  it('takes the transfer out of the flowtable on FIN', () => {
    expect(obs.longStillOpen.onFastPath, `right before closing: ${JSON.stringify(obs.longStillOpen)}`).toBe(true);
    expect(obs.longAfterClose, 'the entry vanished instead of closing').not.toBeNull();
    expect(obs.longAfterClose!.offloaded, obs.longAfterClose!.line).toBe(false);
  });

  it('logs no failed sync and no error, and exits cleanly', () => {
    expect(obs.on.failedSyncs).toBe(0);
    expect(obs.on.problems, 'error-level log lines').toEqual([]);
    expect(obs.on.syncs).toBeGreaterThanOrEqual(5);
    expect(obs.on.exitCode).toBe(0);
  });

  it('with --offload-packet-threshold 0: no flowtable, no offload rule, nothing offloaded, metric 0', () => {
    expect(obs.off.firstSyncKind).toBe('full');
    expect(obs.off.probeLog, 'the disabled agent still probed or announced offload').toBeNull();
    expect(obs.off.offloadEnabledMetric).toBe(0);
    expect(obs.off.ruleset).toContain('table ip kube-nft-proxy');
    expect(obs.off.ruleset).not.toMatch(/flowtable|flow add|flow offload/);
    expect(obs.off.listedFlowtables).toEqual([]);
    expect(obs.off.samples.length, 'the transfer never showed in conntrack').toBeGreaterThan(0);
    expect(obs.off.samples.filter((s) => s.offloaded)).toEqual([]);
    const last = obs.off.samples.at(-1)!;
    expect(last.line).toMatch(/dst=198\.51\.100\.10 .*src=203\.0\.113\.2 /);
    expect(Math.max(...packets(last.line)), `far past the threshold: ${last.line}`).toBeGreaterThan(200);
    expect(obs.off.failedSyncs).toBe(0);
    expect(obs.off.problems).toEqual([]);
    expect(obs.off.exitCode).toBe(0);
  });
});

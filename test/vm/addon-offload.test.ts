// OUR netlink dataplane in a kernel that has flowtables (the VM): the
// capability probe says "supported"; the addon creates the flowtable and the
// KEP-4963 rule, which offload a long flow and leave a short one; the
// flowtable's devices follow veths added and deleted in the router namespace
// (our list() and the nft CLI agree); naming a vanished device fails the whole
// commit with ENOENT and leaving it out commits again.
// The observations come from scenarios/addon-offload.ts, run in the VM.

import { beforeAll, describe, expect, it } from 'vitest';
import type { Flowtable, Statement } from '../../src/nft/objects.ts';
import type { FastPathLook } from './scenarios/traffic.ts';
import { runInVm, type VmRunResult } from './vm.ts';

interface Entry {
  line: string;
  offloaded: boolean;
}
type Outcome = { ok: true } | { ok: false; code: string; index: number; message: string };
interface Devices {
  ours: string[];
  nft: string[];
}
interface Observations {
  probe: { status: string; reason: string };
  committedRule: Statement[];
  listedRules: Statement[][];
  listedFlowtables: Flowtable[];
  unreadable: unknown[];
  nftTable: string;
  longOffloaded?: Entry;
  shortWhileOpen?: Entry;
  addExtra: Outcome;
  afterAdd: Devices;
  removeExtra: Outcome;
  afterRemove: Devices;
  longAcrossRemove: FastPathLook;
  recreate: Outcome;
  afterRecreate: Devices;
  longAfterRecreate: FastPathLook;
  readd: Outcome;
  beforeDelete: Devices;
  afterLinkDelete: Devices;
  namingMissing: Outcome;
  withoutMissing: Outcome;
  longStillOpen?: Entry;
  longAfterClose?: Entry;
}

const BOTH = ['r-client', 'r-server'];
const WITH_EXTRA = ['r-client', 'r-extra', 'r-server'];

describe('netlink dataplane and flowtables in the VM kernel', () => {
  let run: VmRunResult;
  let obs: Observations;

  beforeAll(async () => {
    // A specific addon build (ASan, a fix under test) can be named from the host.
    const addon = process.env.KUBE_NFT_PROXY_ADDON;
    run = await runInVm({
      command: ['node', 'test/vm/scenarios/addon-offload.ts'],
      env: addon ? { KUBE_NFT_PROXY_ADDON: addon } : {},
      timeoutMs: 170_000,
    });
    if (run.exitCode !== 0) {
      throw new Error(`scenario failed with exit code ${run.exitCode}\n${run.stderr}\n--- console ---\n${run.consoleLog.slice(-4000)}`);
    }
    obs = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Observations;
    console.log(`addon scenario: boot ${run.bootMs} ms, scenario ${run.commandMs} ms, whole VM ${run.totalMs} ms`);
  }, 200_000);

  it('probes flowtables as supported', () => {
    expect(obs.probe.status).toBe('supported');
  });

  it('creates the flowtable and the KEP-4963 rule, and lists them back as committed', () => {
    expect(obs.listedRules).toEqual([obs.committedRule]);
    expect(obs.unreadable).toEqual([]);
    expect(obs.listedFlowtables).toHaveLength(1);
    expect(obs.listedFlowtables[0]).toMatchObject({ name: 'ft', hook: 'ingress', priority: 0 });
    expect([...obs.listedFlowtables[0]!.devices].sort()).toEqual(BOTH);
    expect(obs.nftTable).toContain('ct original ip daddr @cluster-ips ct packets > 20 flow add @ft');
  });

  it('offloads a long flow to the cluster IP and not a short one', () => {
    expect(obs.longOffloaded?.offloaded).toBe(true);
    expect(obs.shortWhileOpen?.line).toContain('ESTABLISHED');
    expect(obs.shortWhileOpen?.offloaded).toBe(false);
  });

  it('adds a new veth to the live flowtable', () => {
    expect(obs.addExtra).toEqual({ ok: true });
    expect(obs.afterAdd).toEqual({ ours: WITH_EXTRA, nft: WITH_EXTRA });
  });

  it('takes a device out in place; the offloaded flow through the others never leaves the fast path', () => {
    expect(obs.removeExtra).toEqual({ ok: true });
    expect(obs.afterRemove).toEqual({ ours: BOTH, nft: BOTH });
    // One look before the commit, one after: forwarded all along, not one packet counted by conntrack.
    expect(obs.longAcrossRemove.onFastPath, JSON.stringify(obs.longAcrossRemove)).toBe(true);
    expect(obs.longAcrossRemove.marked).toBe(true);
  });

  it('re-creates the flowtable in one transaction; the offloaded flow survives and is offloaded again', () => {
    expect(obs.recreate).toEqual({ ok: true });
    expect(obs.afterRecreate).toEqual({ ours: BOTH, nft: BOTH });
    // On the new flowtable's fast path: forwarded, uncounted by conntrack (the looks are in the message).
    expect(obs.longAfterRecreate.onFastPath, JSON.stringify(obs.longAfterRecreate)).toBe(true);
  });

  it('sees the kernel drop a deleted interface from the flowtable', () => {
    expect(obs.readd).toEqual({ ok: true });
    expect(obs.beforeDelete).toEqual({ ours: WITH_EXTRA, nft: WITH_EXTRA });
    expect(obs.afterLinkDelete).toEqual({ ours: BOTH, nft: BOTH });
  });

  it('fails a commit naming the vanished device with ENOENT, and commits again without it', () => {
    expect(obs.namingMissing).toMatchObject({ ok: false, code: 'ENOENT', index: 0 });
    expect(obs.withoutMissing).toEqual({ ok: true });
    expect(obs.longStillOpen).toBeDefined();
  });

  it('takes the long flow out of the flowtable when it closes', () => {
    expect(obs.longAfterClose).toBeDefined();
    expect(obs.longAfterClose?.offloaded).toBe(false);
  });
});

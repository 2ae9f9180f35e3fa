// The flowtable's devices in incremental syncs: they leave in place (the
// flowtable, its rule and its offloaded flows stay); a device the kernel
// dropped itself (gone) is not named again; a newcomer under a departed
// device's name is added; a renamed one makes the flowtable re-created. The fake
// kernel stands in for the kernel's own part (it drops a gone device, keeps a
// renamed one under its new name) by a commit of what the kernel does itself.

import { describe, expect, it } from 'vitest';
import { FakeKernel } from '../../src/nft/fake/fake-kernel.ts';
import type { Flowtable, Operation } from '../../src/nft/objects.ts';
import { type DeviceDepartures, NO_DEPARTURES } from '../../src/reconciler/departed-devices.ts';
import { diffRulesets } from '../../src/reconciler/diff.ts';
import { planFullSync } from '../../src/reconciler/full-sync.ts';
import { Reconciler } from '../../src/reconciler/reconciler.ts';
import { renderRuleset, type Ruleset } from '../../src/reconciler/ruleset.ts';
import { FLOWTABLE } from '../../src/reconciler/names.ts';
import { config, ep, modelReads, renderNext, sp, V4 } from './fixtures.ts';
import { freshKernel, listingsWithoutHandles as listing } from './kernel-listing.ts';

const web = sp({ endpoints: [ep('10.244.1.5')] });
const withDevices = (devices: string[]) =>
  config({ families: { IPv4: V4 }, offloadPacketThreshold: 20, flowtableSupported: true, flowtableDevices: devices });
const LINKS = ['eth0', 'veth-a', 'veth-b', 'veth-w'];

function started(devices: string[]): { k: FakeKernel; applied: Ruleset } {
  const k = new FakeKernel({ flowtables: true, devices: LINKS });
  const applied = renderRuleset([web], withDevices(devices));
  k.commitSync(planFullSync(applied, 'replace').ops);
  return { k, applied };
}

function flowtableOf(r: Ruleset): Flowtable {
  return r.skeletons.get('IPv4')!.flowtables[0]!;
}

/** What the kernel does by itself to its flowtable when a device in it goes away (or is renamed). */
function kernelDrops(k: FakeKernel, applied: Ruleset, device: string, renamedTo?: string): void {
  const ft = flowtableOf(applied);
  const ops: Operation[] = [{ verb: 'delete', object: { ...ft, devices: [device] } }];
  if (renamedTo) ops.push({ verb: 'add', object: { ...ft, devices: [renamedTo] } });
  k.commitSync(ops);
}

const summary = (ops: Operation[]) =>
  ops.map((o) => `${o.verb} ${o.object.kind}${o.object.kind === 'flowtable' ? ` [${o.object.devices.join(',')}]` : ''}`);
const departed = (d: Partial<DeviceDepartures>): DeviceDepartures => ({ ...NO_DEPARTURES, ...d });

describe('flowtable devices in incremental syncs', () => {
  it('a device that leaves while it exists is taken out in place: nothing else is touched', () => {
    const { k, applied } = started(['eth0', 'veth-a', 'veth-b']);
    const next = renderNext([web], withDevices(['eth0', 'veth-b']), applied);
    const plan = diffRulesets(applied, next, { now: 1 });
    expect(summary(plan.ops)).toEqual(['delete flowtable [veth-a]']);
    k.commitSync(plan.ops);
    expect(listing(k)).toEqual(listing(freshKernel(next)));
  });

  it('devices joining and leaving in one sync: one add, one in-place delete', () => {
    const { k, applied } = started(['eth0', 'veth-a']);
    const next = renderNext([web], withDevices(['eth0', 'veth-b']), applied);
    const plan = diffRulesets(applied, next, { now: 1 });
    expect(summary(plan.ops)).toEqual(['add flowtable [eth0,veth-b]', 'delete flowtable [veth-a]']);
    k.commitSync(plan.ops);
    expect(listing(k)).toEqual(listing(freshKernel(next)));
  });

  it('a gone device is not named again (the kernel has dropped it; naming it fails the commit)', () => {
    const { k, applied } = started(['eth0', 'veth-a']);
    kernelDrops(k, applied, 'veth-a');
    const next = renderNext([web], withDevices(['eth0']), applied);
    const plan = diffRulesets(applied, next, { now: 1, departedDevices: departed({ gone: ['veth-a'] }) });
    expect(plan.ops).toEqual([]);
    expect(listing(k)).toEqual(listing(freshKernel(next)));
    // Without the report the plan names it, and the kernel refuses the whole commit.
    expect(() => k.commitSync(diffRulesets(applied, next, { now: 1 }).ops)).toThrow(/ENOENT/);
  });

  it('a newcomer under a gone device name is added, though the device list reads the same', () => {
    const { k, applied } = started(['eth0', 'veth-a']);
    kernelDrops(k, applied, 'veth-a');
    const next = renderNext([web], withDevices(['eth0', 'veth-a']), applied);
    expect(diffRulesets(applied, next, { now: 1 }).ops).toEqual([]);
    const plan = diffRulesets(applied, next, { now: 1, departedDevices: departed({ gone: ['veth-a'] }) });
    expect(summary(plan.ops)).toEqual(['add flowtable [eth0,veth-a]']);
    k.commitSync(plan.ops);
    expect(listing(k)).toEqual(listing(freshKernel(next)));
  });

  it('a renamed device (kept by the kernel under a name never committed) re-creates the flowtable, its rule flushed first', () => {
    const { k, applied } = started(['eth0', 'veth-a']);
    kernelDrops(k, applied, 'veth-a', 'veth-w');
    const next = renderNext([web], withDevices(['eth0']), applied);
    const plan = diffRulesets(applied, next, { now: 1, departedDevices: departed({ renamed: ['veth-a'] }) });
    const ops = summary(plan.ops);
    expect(ops).toContain('delete flowtable []');
    expect(ops).toContain('add flowtable [eth0]');
    expect(ops.indexOf('flush chain')).toBeLessThan(ops.indexOf('delete flowtable []'));
    k.commitSync(plan.ops);
    expect(listing(k)).toEqual(listing(freshKernel(next)));
  });
});

describe('the reconciler keeps departed devices until a commit planned with them lands', () => {
  function setup(devices: string[]) {
    const kernel = new FakeKernel({ flowtables: true, devices: LINKS });
    let ports = [web];
    const r = new Reconciler({ dataplane: kernel, config: withDevices(devices), servicePorts: modelReads(() => ports), now: () => 0 });
    const devicesNow = () => kernel.listSync('ip', 'kube-nft-proxy')!.flowtables[0]!.devices;
    return { kernel, r, devicesNow, setPorts: (p: typeof ports) => (ports = p) };
  }
  /** The kernel's own drop of a device from our flowtable. */
  const drop = (kernel: FakeKernel, device: string) =>
    kernel.commitSync([
      {
        verb: 'delete',
        object: {
          kind: 'flowtable',
          family: 'ip',
          table: 'kube-nft-proxy',
          name: FLOWTABLE,
          hook: 'ingress',
          priority: 0,
          devices: [device],
        },
      },
    ]);

  it('a gone device costs no operation; a newcomer under its name is added, and taken out when no longer wanted', async () => {
    const t = setup(['eth0', 'veth-a']);
    await t.r.sync({ kind: 'incremental' });
    drop(t.kernel, 'veth-a');
    t.r.setConfig(withDevices(['eth0']), { gone: ['veth-a'], renamed: [] });
    expect((await t.r.sync({ kind: 'incremental' })).ops).toBe(0);
    t.r.setConfig(withDevices(['eth0', 'veth-a']));
    expect((await t.r.sync({ kind: 'incremental' })).ops).toBe(1);
    expect(t.devicesNow()).toEqual(['eth0', 'veth-a']);
    // The report is spent: the newcomer, no longer wanted while it exists, is taken out.
    t.r.setConfig(withDevices(['eth0']));
    expect((await t.r.sync({ kind: 'incremental' })).ops).toBe(1);
    expect(t.devicesNow()).toEqual(['eth0']);
  });

  it('a periodic reassert (which only adds) leaves a rename for the next sync, which re-creates the flowtable', async () => {
    const t = setup(['eth0', 'veth-a']);
    await t.r.sync({ kind: 'incremental' });
    // veth-a renamed to veth-w: the kernel keeps the device under its new name, unwanted here.
    t.kernel.commitSync([
      { verb: 'delete', object: { ...flowtableOf(renderRuleset([web], withDevices(['veth-a']))), devices: ['veth-a'] } },
      { verb: 'add', object: { ...flowtableOf(renderRuleset([web], withDevices(['veth-w']))) } },
    ]);
    t.r.setConfig(withDevices(['eth0']), { gone: [], renamed: ['veth-a'] });
    await t.r.sync({ kind: 'full', mode: 'reassert' });
    expect(t.devicesNow()).toEqual(['eth0', 'veth-w']);
    await t.r.sync({ kind: 'incremental' });
    expect(t.devicesNow()).toEqual(['eth0']);
    // Settled now: the next sync has nothing to do.
    expect((await t.r.sync({ kind: 'incremental' })).ops).toBe(0);
  });

  it('a reassert settles a gone device: a newcomer it added under that name is taken out when no longer wanted', async () => {
    const t = setup(['eth0', 'veth-a']);
    await t.r.sync({ kind: 'incremental' });
    drop(t.kernel, 'veth-a');
    t.r.setConfig(withDevices(['eth0', 'veth-a']), { gone: ['veth-a'], renamed: [] });
    await t.r.sync({ kind: 'full', mode: 'reassert' });
    expect(t.devicesNow()).toEqual(['eth0', 'veth-a']);
    t.r.setConfig(withDevices(['eth0']));
    await t.r.sync({ kind: 'incremental' });
    expect(t.devicesNow()).toEqual(['eth0']);
  });

  it('a report made while a commit is on its way waits for the next plan; a refused commit keeps what it saw', async () => {
    const t = setup(['eth0', 'veth-a', 'veth-b']);
    await t.r.sync({ kind: 'incremental' });
    const commit = t.kernel.commit.bind(t.kernel);
    t.kernel.commit = async (ops) => {
      await commit(ops);
      // veth-b goes away right after this commit reached the kernel.
      t.kernel.commit = commit;
      drop(t.kernel, 'veth-b');
      t.r.setConfig(withDevices(['eth0', 'veth-a']), { gone: ['veth-b'], renamed: [] });
    };
    t.setPorts([web, sp({ serviceName: 'api', clusterIP: '10.96.0.20', endpoints: [ep('10.244.3.3')] })]);
    await t.r.sync({ kind: 'incremental' });
    t.r.setConfig(withDevices(['eth0', 'veth-a']));
    t.kernel.faults.push({ code: 'ENOBUFS' });
    t.setPorts([web]);
    await expect(t.r.sync({ kind: 'incremental' })).rejects.toThrow(/ENOBUFS/);
    // Had either commit forgotten veth-b's report, this sync would name it: ENOENT.
    await t.r.sync({ kind: 'incremental' });
    expect(t.devicesNow()).toEqual(['eth0', 'veth-a']);
  });
});

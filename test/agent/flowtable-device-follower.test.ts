// The flowtable device list over (virtual) time: the initial dump at once,
// removals at once, additions once the names have settled, never starved.

import { Subject, VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { followFlowtableDevices, type DeviceDecision } from '../../src/agent/flowtable-device-follower.ts';
import { toLinkInfo, type LinkInfo, type LinkMap } from '../../src/links/link-state.ts';

function link(index: number, name: string, flags = 0x1003): LinkInfo {
  return toLinkInfo({ index, name, flags, kind: 'veth', mtu: 1500, operState: 6, master: 0 });
}
const LO = link(1, 'lo', 0x49);
const links = (...ls: LinkInfo[]): LinkMap => new Map([LO, ...ls].map((l) => [l.index, l]));

function harness(opts: { maxDevices?: number; settleMs?: number; maxWaitMs?: number } = {}) {
  const scheduler = new VirtualTimeScheduler();
  const links$ = new Subject<LinkMap>();
  const seen: Array<DeviceDecision & { at: number }> = [];
  let completed = false;
  let error: unknown;
  const sub = followFlowtableDevices(links$, {
    filter: {},
    maxDevices: opts.maxDevices ?? 255,
    settleMs: opts.settleMs ?? 250,
    maxWaitMs: opts.maxWaitMs ?? 2_000,
    scheduler,
  }).subscribe({
    next: (d: DeviceDecision) => seen.push({ at: scheduler.now(), ...d }),
    complete: () => (completed = true),
    error: (e) => (error = e),
  });
  /** Emits a link state at virtual time `at` (ms). */
  const at = (t: number, state: LinkMap) => scheduler.schedule(() => links$.next(state), t);
  const run = () => scheduler.flush();
  return { scheduler, links$, seen, at, run, sub, done: () => ({ completed, error }) };
}

describe('followFlowtableDevices', () => {
  it('takes the initial dump at once, loopback left out', () => {
    const h = harness();
    h.at(0, links(link(2, 'eth0'), link(3, 'veth1')));
    h.run();
    expect(h.seen).toEqual([{ at: 0, devices: ['eth0', 'veth1'], matched: 2 }]);
  });

  it('adds a new interface once its name has been quiet for settleMs', () => {
    const h = harness();
    h.at(0, links(link(2, 'eth0')));
    h.at(1000, links(link(2, 'eth0'), link(3, 'veth1')));
    h.run();
    expect(h.seen.map((s) => [s.at, s.devices])).toEqual([
      [0, ['eth0']],
      [1250, ['eth0', 'veth1']],
    ]);
  });

  it('never commits a transient name: a veth moved in under a temporary name and renamed at once joins under its final name only', () => {
    const h = harness();
    h.at(0, links(link(2, 'eth0')));
    h.at(1000, links(link(2, 'eth0'), link(7, 'ktmp1234')));
    h.at(1003, links(link(2, 'eth0'), link(7, 'r-extra')));
    h.at(1005, links(link(2, 'eth0'), link(7, 'r-extra', 0x11043)));
    h.run();
    expect(h.seen.map((s) => [s.at, s.devices])).toEqual([
      [0, ['eth0']],
      [1255, ['eth0', 'r-extra']],
    ]);
    expect(h.seen.flatMap((s) => s.devices)).not.toContain('ktmp1234');
  });

  it('removes a vanished interface at once, without waiting', () => {
    const h = harness();
    h.at(0, links(link(2, 'eth0'), link(3, 'veth1')));
    h.at(1000, links(link(2, 'eth0')));
    h.run();
    expect(h.seen.map((s) => [s.at, s.devices])).toEqual([
      [0, ['eth0', 'veth1']],
      [1000, ['eth0']],
    ]);
    // The kernel drops a device that goes away from its flowtable by itself.
    expect(h.seen[1]).toMatchObject({ gone: ['veth1'] });
    expect(h.seen[1]!.renamed).toBeUndefined();
  });

  it('a rename: the old name leaves at once, the new one joins after settling', () => {
    const h = harness();
    h.at(0, links(link(2, 'eth0'), link(3, 'veth1')));
    h.at(1000, links(link(2, 'eth0'), link(3, 'veth-new')));
    h.run();
    expect(h.seen.map((s) => [s.at, s.devices])).toEqual([
      [0, ['eth0', 'veth1']],
      [1000, ['eth0']],
      [1250, ['eth0', 'veth-new']],
    ]);
    // The kernel keeps a renamed device in its flowtable under the new name.
    expect(h.seen[1]).toMatchObject({ renamed: ['veth1'] });
    expect(h.seen[1]!.gone).toBeUndefined();
    expect(h.seen[2]!.renamed).toBeUndefined();
  });

  it('a new link under a gone device name: the name leaves at once (gone), the newcomer joins once settled', () => {
    const h = harness();
    h.at(0, links(link(2, 'eth0'), link(3, 'veth1')));
    h.at(1000, links(link(2, 'eth0'), link(9, 'veth1')));
    h.run();
    expect(h.seen).toEqual([
      { at: 0, devices: ['eth0', 'veth1'], matched: 2 },
      { at: 1000, devices: ['eth0'], matched: 2, gone: ['veth1'] },
      { at: 1250, devices: ['eth0', 'veth1'], matched: 2 },
    ]);
  });

  it('two renames in a row: the second is said of the name committed last', () => {
    const h = harness();
    h.at(0, links(link(2, 'eth0'), link(3, 'veth1')));
    h.at(1000, links(link(2, 'eth0'), link(3, 'veth2')));
    h.at(2000, links(link(2, 'eth0'), link(3, 'veth3')));
    h.run();
    expect(h.seen.map((s) => [s.at, s.devices, s.renamed])).toEqual([
      [0, ['eth0', 'veth1'], undefined],
      [1000, ['eth0'], ['veth1']],
      [1250, ['eth0', 'veth2'], undefined],
      [2000, ['eth0'], ['veth2']],
      [2250, ['eth0', 'veth3'], undefined],
    ]);
  });

  it('a device pushed past maxDevices by a newcomer leaves neither gone nor renamed (it is still in the kernel)', () => {
    const h = harness({ maxDevices: 2 });
    h.at(0, links(link(2, 'b'), link(3, 'c')));
    h.at(1000, links(link(2, 'b'), link(3, 'c'), link(4, 'a')));
    h.run();
    expect(h.seen).toEqual([
      { at: 0, devices: ['b', 'c'], matched: 2 },
      { at: 1000, devices: ['b'], matched: 3 },
      { at: 1250, devices: ['a', 'b'], matched: 3 },
    ]);
  });

  it('a flap (down, up) changes nothing', () => {
    const h = harness();
    h.at(0, links(link(2, 'eth0'), link(3, 'veth1')));
    h.at(100, links(link(2, 'eth0'), link(3, 'veth1', 0x1002)));
    h.at(200, links(link(2, 'eth0'), link(3, 'veth1')));
    h.run();
    expect(h.seen).toHaveLength(1);
  });

  it('an interface that appears and vanishes before settling is never added', () => {
    const h = harness();
    h.at(0, links(link(2, 'eth0')));
    h.at(100, links(link(2, 'eth0'), link(3, 'veth1')));
    h.at(200, links(link(2, 'eth0')));
    h.run();
    expect(h.seen.map((s) => s.devices)).toEqual([['eth0']]);
  });

  it('under continuous link events, additions still land within maxWaitMs', () => {
    const h = harness({ settleMs: 250, maxWaitMs: 2_000 });
    h.at(0, links(link(2, 'eth0')));
    // A new link at 1000, then an event every 100 ms (flaps of eth0) until 5000.
    for (let t = 1000; t <= 5000; t += 100) {
      h.at(t, links(link(2, 'eth0', t % 200 === 0 ? 0x1003 : 0x1002), link(3, 'veth1')));
    }
    h.run();
    expect(h.seen.map((s) => [s.at, s.devices])).toEqual([
      [0, ['eth0']],
      [3000, ['eth0', 'veth1']],
    ]);
  });

  it('a removal during a pending addition applies at once and the addition still follows', () => {
    const h = harness();
    h.at(0, links(link(2, 'eth0'), link(3, 'veth1')));
    h.at(1000, links(link(2, 'eth0'), link(3, 'veth1'), link(4, 'veth2')));
    h.at(1100, links(link(2, 'eth0'), link(4, 'veth2')));
    h.run();
    expect(h.seen.map((s) => [s.at, s.devices])).toEqual([
      [0, ['eth0', 'veth1']],
      [1100, ['eth0']],
      [1350, ['eth0', 'veth2']],
    ]);
  });

  it('caps the list at maxDevices (first in sorted order) and reports how many matched', () => {
    const h = harness({ maxDevices: 2 });
    h.at(0, links(link(2, 'c'), link(3, 'a'), link(4, 'b')));
    h.run();
    expect(h.seen).toEqual([{ at: 0, devices: ['a', 'b'], matched: 3 }]);
  });

  it('completes and errors with the link stream, and drops a pending addition', () => {
    const h = harness();
    h.at(0, links(link(2, 'eth0')));
    h.at(100, links(link(2, 'eth0'), link(3, 'veth1')));
    h.scheduler.schedule(() => h.links$.complete(), 150);
    h.run();
    expect(h.seen.map((s) => s.devices)).toEqual([['eth0']]);
    expect(h.done()).toEqual({ completed: true, error: undefined });

    const e = harness();
    const boom = new Error('socket');
    e.scheduler.schedule(() => e.links$.error(boom), 10);
    e.run();
    expect(e.done().error).toBe(boom);
  });

  it('unsubscribing cancels a pending addition', () => {
    const h = harness();
    h.at(0, links(link(2, 'eth0')));
    h.at(100, links(link(2, 'eth0'), link(3, 'veth1')));
    h.scheduler.schedule(() => h.sub.unsubscribe(), 200);
    h.run();
    expect(h.seen.map((s) => s.devices)).toEqual([['eth0']]);
  });
});

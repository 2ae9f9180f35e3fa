// The addon's ctnetlink cleanup against the kernel's conntrack table in a
// fresh namespace: entries are created through ctnetlink, cleaned, and read
// back with the conntrack tool (an oracle only).

import { afterEach, describe, expect, it } from 'vitest';
import { createNetns, type NetNs } from '../helpers/netns.ts';
import { loadAddon } from '../../src/native/addon.ts';
import type { NativeConntrackEntry } from '../../src/native/conntrack-types.ts';

const addon = loadAddon();
const open: NetNs[] = [];
afterEach(() => {
  for (const ns of open.splice(0)) ns.destroy();
});
function netns(): NetNs {
  const ns = createNetns('knp-ct');
  open.push(ns);
  return ns;
}

const UDP = 17;
const TCP = 6;
const SCTP = 132;

/** A NATed-looking entry: client:sport -> vip:vport, answered by backend:bport. */
function entry(
  protocol: number,
  client: string,
  sport: number,
  vip: string,
  vport: number,
  backend: string,
  bport = 8080,
): NativeConntrackEntry {
  return {
    protocol,
    origSrc: client,
    origDst: vip,
    origSport: sport,
    origDport: vport,
    replySrc: backend,
    replyDst: client,
    replySport: bport,
    replyDport: sport,
    timeoutSec: 600,
  };
}

/** `conntrack -L` lines of one family, protocol names and reply sources only. */
function table(ns: NetNs, family: 'ipv4' | 'ipv6'): string[] {
  const out = ns.tryExec('conntrack', ['-L', '-f', family]).stdout;
  return out
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      const srcs = [...l.matchAll(/src=(\S+)/g)].map((m) => m[1]);
      const dport = /dport=(\d+)/.exec(l)?.[1];
      return `${l.split(/\s+/)[0]} ${srcs[0]}->${/dst=(\S+)/.exec(l)?.[1]}:${dport} reply-from ${srcs[1]}`;
    })
    .sort();
}

describe('conntrackClean', () => {
  it('deletes, by a kernel-filtered dump, only the stale UDP/SCTP entries of the target; TCP and other frontends stay', async () => {
    const ns = netns();
    const entries: NativeConntrackEntry[] = [];
    for (let i = 0; i < 200; i++)
      entries.push(entry(UDP, '192.0.2.10', 10_000 + i, '10.96.0.10', 53, i % 2 ? '10.244.0.11' : '10.244.0.12'));
    for (let i = 0; i < 50; i++) entries.push(entry(UDP, '192.0.2.10', 20_000 + i, '10.96.0.11', 53, '10.244.0.12'));
    entries.push(entry(TCP, '192.0.2.10', 30_000, '10.96.0.10', 53, '10.244.0.12'));
    entries.push(entry(SCTP, '192.0.2.10', 30_001, '10.96.0.10', 53, '10.244.0.12'));
    expect((await addon.conntrackCreate(4, entries, 64, { netns: ns.path })).created).toBe(entries.length);

    const r = await addon.conntrackClean(
      { family: 4, full: false, batchSize: 16, targets: [{ protocol: UDP, address: '10.96.0.10', port: 53, keep: ['10.244.0.11'] }] },
      { netns: ns.path },
    );
    // The kernel returned only the target's UDP entries: the cost follows the target, not the table.
    expect(r).toMatchObject({ scanned: 200, stale: 100, deleted: 100, failed: 0, vanished: 0, dumps: 1, batches: 7 });
    expect(r.error).toBeUndefined();
    const left = table(ns, 'ipv4');
    expect(left.filter((l) => l.startsWith('udp') && l.includes('10.96.0.10:53'))).toEqual(
      Array(100).fill('udp 192.0.2.10->10.96.0.10:53 reply-from 10.244.0.11'),
    );
    expect(left.filter((l) => l.includes('10.96.0.11:53'))).toHaveLength(50);
    expect(left.filter((l) => l.startsWith('tcp'))).toEqual(['tcp 192.0.2.10->10.96.0.10:53 reply-from 10.244.0.12']);
    expect(left.filter((l) => l.startsWith('sctp'))).toEqual(['sctp 192.0.2.10->10.96.0.10:53 reply-from 10.244.0.12']);
  });

  it('matches a NodePort on any destination address, and un-NATed entries (reply from the Service IP itself)', async () => {
    const ns = netns();
    const entries = [
      entry(UDP, '192.0.2.10', 40_000, '192.0.2.1', 30053, '10.244.0.11'),
      entry(UDP, '192.0.2.10', 40_001, '198.51.100.1', 30053, '10.244.0.12'),
      entry(UDP, '192.0.2.10', 40_002, '198.51.100.1', 30054, '10.244.0.12'),
      // Never NATed: the reply comes from the address the client sent to.
      entry(UDP, '192.0.2.10', 40_003, '198.51.100.60', 80, '198.51.100.60', 80),
    ];
    await addon.conntrackCreate(4, entries, 8, { netns: ns.path });
    const r = await addon.conntrackClean(
      {
        family: 4,
        full: false,
        batchSize: 8,
        targets: [
          { protocol: UDP, port: 30053, keep: ['10.244.0.11'] },
          { protocol: UDP, address: '198.51.100.60', port: 80, keep: ['10.244.0.11'] },
        ],
      },
      { netns: ns.path },
    );
    expect(r).toMatchObject({ scanned: 3, deleted: 2, failed: 0, dumps: 2 });
    expect(table(ns, 'ipv4')).toEqual([
      'udp 192.0.2.10->192.0.2.1:30053 reply-from 10.244.0.11',
      'udp 192.0.2.10->198.51.100.1:30054 reply-from 10.244.0.12',
    ]);
  });

  it('cleans IPv6 (filtered by port in the kernel, by address here) and a full dump finds the same', async () => {
    for (const full of [false, true]) {
      const ns = netns();
      const entries = [
        entry(UDP, '2001:db8:1::10', 50_000, 'fd00:10:96::10', 53, 'fd00:10:244::b'),
        entry(UDP, '2001:db8:1::10', 50_001, 'fd00:10:96::10', 53, 'fd00:10:244::c'),
        entry(UDP, '2001:db8:1::10', 50_002, 'fd00:10:96::11', 53, 'fd00:10:244::c'),
        entry(TCP, '2001:db8:1::10', 50_003, 'fd00:10:96::10', 53, 'fd00:10:244::c'),
      ];
      await addon.conntrackCreate(6, entries, 8, { netns: ns.path });
      const r = await addon.conntrackClean(
        { family: 6, full, batchSize: 8, targets: [{ protocol: UDP, address: 'fd00:10:96::10', port: 53, keep: ['fd00:10:244::b'] }] },
        { netns: ns.path },
      );
      expect(r).toMatchObject({ scanned: full ? 4 : 3, stale: 1, deleted: 1, failed: 0 });
      expect(table(ns, 'ipv6')).toEqual([
        'tcp 2001:db8:1::10->fd00:10:96::10:53 reply-from fd00:10:244::c',
        'udp 2001:db8:1::10->fd00:10:96::10:53 reply-from fd00:10:244::b',
        'udp 2001:db8:1::10->fd00:10:96::11:53 reply-from fd00:10:244::c',
      ]);
    }
  });

  it('cleans SCTP entries for an SCTP target and leaves UDP ones on the same frontend', async () => {
    const ns = netns();
    await addon.conntrackCreate(
      4,
      [
        entry(SCTP, '192.0.2.10', 40_000, '10.96.0.10', 9, '10.244.0.11'),
        entry(SCTP, '192.0.2.10', 40_001, '10.96.0.10', 9, '10.244.0.12'),
        entry(UDP, '192.0.2.10', 40_002, '10.96.0.10', 9, '10.244.0.12'),
      ],
      8,
      { netns: ns.path },
    );
    const r = await addon.conntrackClean(
      { family: 4, full: false, batchSize: 8, targets: [{ protocol: SCTP, address: '10.96.0.10', port: 9, keep: ['10.244.0.11'] }] },
      { netns: ns.path },
    );
    expect(r).toMatchObject({ scanned: 2, deleted: 1, failed: 0 });
    expect(table(ns, 'ipv4')).toEqual([
      'sctp 192.0.2.10->10.96.0.10:9 reply-from 10.244.0.11',
      'udp 192.0.2.10->10.96.0.10:9 reply-from 10.244.0.12',
    ]);
  });

  it('refuses malformed requests on the JS thread', async () => {
    const base = { family: 4 as const, full: false, batchSize: 8, targets: [] };
    expect(() => addon.conntrackClean({ ...base, family: 5 as 4 })).toThrow(/family/);
    expect(() => addon.conntrackClean({ ...base, batchSize: 0 })).toThrow(/batchSize/);
    expect(() => addon.conntrackClean({ ...base, targets: [{ protocol: UDP, address: 'fd00::1', port: 53, keep: [] }] })).toThrow(
      /not an address/,
    );
    expect(() => addon.conntrackClean({ ...base, targets: [{ protocol: UDP, port: 0, keep: [] }] })).toThrow(/port/);
  });
});

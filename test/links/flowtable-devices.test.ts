import { describe, expect, it } from 'vitest';
import { flowtableDevices, type FlowtableDeviceFilter } from '../../src/links/flowtable-devices.ts';
import { toLinkInfo, type LinkInfo } from '../../src/links/link-state.ts';

function link(index: number, name: string, flags = 0x1003, kind = 'veth'): LinkInfo {
  return toLinkInfo({ index, name, flags, kind, mtu: 1500, operState: 6, master: 0 });
}

const node = new Map<number, LinkInfo>(
  [
    link(1, 'lo', 0x49, ''),
    link(2, 'eth0', 0x11043, ''),
    link(3, 'cni0', 0x1003, 'bridge'),
    link(4, 'veth1b2c', 0x1003),
    link(5, 'veth0a1b', 0x1002), // down: still a member
    link(6, 'flannel.1', 0x11043, 'vxlan'),
    link(7, 'Zed', 0x1003, 'dummy'),
  ].map((l) => [l.index, l]),
);

describe('flowtableDevices', () => {
  const cases: Array<{ name: string; opts?: FlowtableDeviceFilter; want: string[] }> = [
    { name: 'default: all but loopback, sorted by code unit', want: ['Zed', 'cni0', 'eth0', 'flannel.1', 'veth0a1b', 'veth1b2c'] },
    { name: 'include regexp', opts: { include: /^veth/ }, want: ['veth0a1b', 'veth1b2c'] },
    { name: 'include names (unknown names ignored)', opts: { include: ['eth0', 'cni0', 'nope'] }, want: ['cni0', 'eth0'] },
    { name: 'exclude regexp', opts: { exclude: /^(flannel|cni)/ }, want: ['Zed', 'eth0', 'veth0a1b', 'veth1b2c'] },
    { name: 'exclude names', opts: { exclude: ['eth0', 'Zed'] }, want: ['cni0', 'flannel.1', 'veth0a1b', 'veth1b2c'] },
    { name: 'include then exclude', opts: { include: /^veth|^eth/, exclude: ['veth0a1b'] }, want: ['eth0', 'veth1b2c'] },
    { name: 'loopback never, even when included by name', opts: { include: ['lo', 'eth0'] }, want: ['eth0'] },
    {
      name: 'loopback never, even when included by regexp',
      opts: { include: /.*/ },
      want: ['Zed', 'cni0', 'eth0', 'flannel.1', 'veth0a1b', 'veth1b2c'],
    },
    { name: 'global regexp is not stateful', opts: { include: /veth/g }, want: ['veth0a1b', 'veth1b2c'] },
    { name: 'sticky regexp is not stateful and stays anchored', opts: { exclude: /veth/y }, want: ['Zed', 'cni0', 'eth0', 'flannel.1'] },
    { name: 'sticky regexp anchors at the start', opts: { include: /eth/y }, want: ['eth0'] },
    { name: 'empty include list selects nothing', opts: { include: [] }, want: [] },
    {
      name: 'empty exclude list removes nothing',
      opts: { exclude: [] },
      want: ['Zed', 'cni0', 'eth0', 'flannel.1', 'veth0a1b', 'veth1b2c'],
    },
  ];
  it.each(cases)('$name', ({ opts, want }) => {
    expect(flowtableDevices(node, opts)).toEqual(want);
  });

  it('empty state gives an empty list', () => {
    expect(flowtableDevices(new Map())).toEqual([]);
  });

  it('deduplicates a name held by two indexes (a rename in flight)', () => {
    const links = new Map([
      [10, link(10, 'veth9')],
      [11, link(11, 'veth9')],
      [12, link(12, 'eth1')],
    ]);
    expect(flowtableDevices(links)).toEqual(['eth1', 'veth9']);
  });

  it('the same regexp object gives the same answer when used twice', () => {
    const re = /e/g;
    expect(flowtableDevices(node, { include: re })).toEqual(flowtableDevices(node, { include: re }));
  });
});

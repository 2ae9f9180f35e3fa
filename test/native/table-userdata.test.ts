// Reading one table's own attributes (tableUserdata, and NetlinkDataplane.table
// over it) against the kernel in a fresh namespace; tables made with nft.

import { afterEach, describe, expect, it } from 'vitest';
import { loadAddon } from '../../src/native/addon.ts';
import { NetlinkDataplane } from '../../src/nft/netlink/netlink-dataplane.ts';
import { createNetns, type NetNs } from '../helpers/netns.ts';

const addon = loadAddon();
const open: NetNs[] = [];
afterEach(() => {
  for (const ns of open.splice(0)) ns.destroy();
});

describe('tableUserdata', () => {
  it('tells an absent table, one without userdata and one with a comment apart', async () => {
    const ns = createNetns('knp-tbl');
    open.push(ns);
    ns.exec('nft', ['-f', '-'], {
      input: 'table ip plain {\n}\ntable ip6 marked {\n  comment "managed by kube-nft-proxy (table format 1)"\n}\n',
    });
    expect(await addon.tableUserdata(2, 'absent', { netns: ns.path })).toBeNull();
    expect((await addon.tableUserdata(2, 'plain', { netns: ns.path }))?.length).toBe(0);
    // The same name in another family is another table.
    expect(await addon.tableUserdata(10, 'plain', { netns: ns.path })).toBeNull();
    const dp = new NetlinkDataplane({ netns: ns.path });
    expect(await dp.table('ip6', 'marked')).toEqual({
      kind: 'table',
      family: 'ip6',
      name: 'marked',
      comment: 'managed by kube-nft-proxy (table format 1)',
    });
    expect(await dp.table('ip', 'plain')).toEqual({ kind: 'table', family: 'ip', name: 'plain' });
    expect(await dp.table('ip', 'absent')).toBeUndefined();
  });

  it('rejects bad arguments on the JS thread and a missing namespace with the errno', async () => {
    expect(() => addon.tableUserdata(3, 'x')).toThrow(/family/);
    expect(() => addon.tableUserdata(2, '')).toThrow(/table name/);
    await expect(addon.tableUserdata(2, 'x', { netns: '/var/run/netns/knp-does-not-exist' })).rejects.toMatchObject({
      code: 'ERR_NFT_NETLINK',
    });
  });
});

// loadBalancerSourceRanges of any length the API allows reach the real kernel
// (6.18 here, in a network namespace of the test's own) through the
// reconciler and the netlink dataplane: one lookup in an interval set, not one
// match per range in one rule (60 ranges were EINVAL, 400 a builder error).

import { afterEach, describe, expect, it } from 'vitest';
import { NetlinkDataplane } from '../../src/nft/netlink/netlink-dataplane.ts';
import { Reconciler } from '../../src/reconciler/reconciler.ts';
import type { ServicePort } from '../../src/model/service-port.ts';
import { createNetns, type NetNs } from '../helpers/netns.ts';
import { config, ep, modelReads, sp, V4 } from './fixtures.ts';

const namespaces: NetNs[] = [];
afterEach(() => {
  for (const ns of namespaces.splice(0)) ns.destroy();
});

/** n adjacent /28s from 172.16.0.0 (adjacent intervals are their own case in the kernel's interval sets). */
function adjacentRanges(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `172.${16 + (i >> 12)}.${(i >> 4) & 255}.${(i & 15) << 4}/28`);
}

const plain = sp({ serviceName: 'plain', clusterIP: '10.96.0.10', endpoints: [ep('10.244.1.5')] });
const lb = (ranges: string[]): ServicePort =>
  sp({
    serviceName: 'guarded',
    clusterIP: '10.96.0.20',
    nodePort: 30020,
    loadBalancerIPs: ['203.0.113.20'],
    loadBalancerSourceRanges: ranges,
    endpoints: [ep('10.244.2.5')],
  });

describe('loadBalancerSourceRanges in a real kernel', { timeout: 60_000 }, () => {
  it.each([60, 400, 1000])(
    '%i ranges: programmed with the rest of the sync, the set holds them all, and a change to the list is applied',
    async (n) => {
      const ns = createNetns('knp-lbsr');
      namespaces.push(ns);
      const ranges = adjacentRanges(n);
      let ports = [plain, lb(ranges)];
      const r = new Reconciler({
        dataplane: new NetlinkDataplane({ netns: ns.path }),
        config: config({ families: { IPv4: V4 } }),
        servicePorts: modelReads(() => ports),
        now: () => 0,
      });
      const rep = await r.sync({ kind: 'incremental' });
      expect(rep.rejected).toEqual([]);
      const elements = () => {
        const sets = ns.nftJson().nftables.flatMap((o) => ('set' in o ? [o.set as { name: string; elem?: unknown[] }] : []));
        const set = sets.find((s) => s.name.startsWith('firewall-allow-'));
        return set?.elem?.length ?? 0;
      };
      expect(elements()).toBe(n);
      const rule = ns.exec('nft', [
        'list',
        'chain',
        'ip',
        'kube-nft-proxy',
        (ns.exec('nft', ['list', 'chains', 'ip']).match(/chain (firewall-[A-Z2-7]{8}-\S+)/) ?? [])[1]!,
      ]);
      expect(rule).toMatch(/ip saddr != @firewall-allow-\S+ drop/);
      // Half of them go, and the LB's own address would now be a match of its own.
      ports = [plain, lb(ranges.slice(0, n / 2))];
      const again = await r.sync({ kind: 'incremental' });
      expect(again).toMatchObject({ rejected: [], stats: { rulesAdded: 0 } });
      expect(elements()).toBe(n / 2);
      expect(ns.exec('nft', ['list', 'map', 'ip', 'kube-nft-proxy', 'service-ips'])).toContain('10.96.0.10 . tcp . 80');
    },
  );
});

// A refused element is traced to the port it belongs to, in the 'map' endpoint
// shape too, where slots of the shared endpoint maps and hairpin elements are
// not claimed (element-claims.ts) and must be found another way.

import { describe, expect, it } from 'vitest';
import type { Element } from '../../src/nft/objects.ts';
import { planFullSync } from '../../src/reconciler/full-sync.ts';
import { OperationOwners } from '../../src/reconciler/operation-owner.ts';
import { renderRuleset } from '../../src/reconciler/ruleset.ts';
import { config, ep, sp, V4 } from './fixtures.ts';

describe('OperationOwners (endpoint shape map)', () => {
  const cfg = config({ families: { IPv4: V4 }, endpointShape: 'map' });
  const a = sp({ serviceName: 'a', clusterIP: '10.96.0.20', endpoints: [ep('10.244.1.5'), ep('10.244.1.6')] });
  const b = sp({ serviceName: 'b', clusterIP: '10.96.0.21', externalIPs: ['203.0.113.7'], endpoints: [ep('10.244.2.5')] });
  const r = renderRuleset([a, b], cfg);
  const owners = new OperationOwners([r]);
  const elements = planFullSync(r, 'replace')
    .ops.map((op) => op.object)
    .filter((o): o is Element => o.kind === 'element');
  const ownerOf = (e: Element) => owners.servicePortOf({ verb: 'add', object: e });

  it('every slot of a shared endpoint map: the port whose range holds it', () => {
    const slots = elements.filter((e) => e.set.startsWith('service-endpoints-'));
    expect(slots.length).toBe(3);
    for (const e of slots) {
      const [ip] = e.value as string[];
      expect(ownerOf(e)).toBe(ip!.startsWith('10.244.1.') ? a.id : b.id);
    }
  });

  it('a hairpin element: a port that wants it; claimed elements: their claimant', () => {
    const hairpin = elements.filter((e) => e.set === 'hairpin-endpoints');
    expect(hairpin.map((e) => [e.key[0], ownerOf(e)])).toEqual(
      expect.arrayContaining([
        ['10.244.1.5', a.id],
        ['10.244.1.6', a.id],
        ['10.244.2.5', b.id],
      ]),
    );
    const external = elements.find((e) => e.set === 'service-ips' && e.key[0] === '203.0.113.7')!;
    expect(ownerOf(external)).toBe(b.id);
  });
});

// What the fake kernel holds in our tables, rule handles aside (they count
// commits, not content), to compare a kernel after any series of syncs with
// one after a single fresh full sync.

import type { ServicePort } from '../../src/model/service-port.ts';
import type { TableListing } from '../../src/nft/dataplane.ts';
import { FakeKernel } from '../../src/nft/fake/fake-kernel.ts';
import type { Family } from '../../src/nft/objects.ts';
import type { RulesetConfig } from '../../src/reconciler/config.ts';
import { planFullSync } from '../../src/reconciler/full-sync.ts';
import { renderRuleset, type Ruleset } from '../../src/reconciler/ruleset.ts';

export function listingWithoutHandles(k: FakeKernel, family: Family = 'ip'): TableListing | undefined {
  const l = k.listSync(family, 'kube-nft-proxy');
  if (l) for (const r of l.rules) delete r.handle;
  return l;
}

/** Both families' tables. */
export function listingsWithoutHandles(k: FakeKernel): Array<TableListing | undefined> {
  return [listingWithoutHandles(k, 'ip'), listingWithoutHandles(k, 'ip6')];
}

export function afterFreshFullSync(ports: ServicePort[], config: RulesetConfig) {
  const k = new FakeKernel();
  k.commitSync(planFullSync(renderRuleset(ports, config), 'replace').ops);
  return listingWithoutHandles(k);
}

/** A kernel after one full sync of what `desired` was rendered from. */
export function freshKernel(desired: Ruleset): FakeKernel {
  const k = new FakeKernel({ flowtables: true });
  k.commitSync(
    planFullSync(
      renderRuleset(
        [...desired.services.values()].map((s) => s.port),
        desired.config,
      ),
      'replace',
    ).ops,
  );
  return k;
}

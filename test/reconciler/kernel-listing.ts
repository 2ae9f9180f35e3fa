// What the fake kernel holds in our IPv4 table, rule handles aside (they count
// commits, not content), to compare a kernel after any series of syncs with
// one after a single fresh full sync.

import type { ServicePort } from '../../src/model/service-port.ts';
import { FakeKernel } from '../../src/nft/fake-kernel.ts';
import type { RulesetConfig } from '../../src/reconciler/config.ts';
import { planFullSync } from '../../src/reconciler/full-sync.ts';
import { renderRuleset } from '../../src/reconciler/ruleset.ts';

export function listingWithoutHandles(k: FakeKernel) {
  const l = k.listSync('ip', 'kube-nft-proxy');
  if (l) for (const r of l.rules) delete r.handle;
  return l;
}

export function afterFreshFullSync(ports: ServicePort[], config: RulesetConfig) {
  const k = new FakeKernel();
  k.commitSync(planFullSync(renderRuleset(ports, config), 'replace').ops);
  return listingWithoutHandles(k);
}

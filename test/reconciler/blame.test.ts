// The blame of a failed attempt asks for the attempt's operations once: a
// full sync's are generated, and each call makes the whole list again (2.5M
// operations at 100k Services), so asking per error or per suspect would be
// quadratic in the failure path.

import { describe, expect, it } from 'vitest';
import { NftCommitError } from '../../src/nft/dataplane.ts';
import { NftInvalidError } from '../../src/nft/transaction.ts';
import { blameInvalid, blameRefusal, type FailedAttempt } from '../../src/reconciler/blame.ts';
import { generatedOperations } from '../../src/reconciler/diff.ts';
import { planGeneratedFullSync } from '../../src/reconciler/full-sync.ts';
import { renderRuleset } from '../../src/reconciler/ruleset.ts';
import { config, ep, sp, V4 } from './fixtures.ts';

const ports = Array.from({ length: 5 }, (_, i) =>
  sp({ serviceName: `svc-${i}`, clusterIP: `10.96.0.${10 + i}`, endpoints: [ep(`10.244.1.${10 + i}`)] }),
);
const desired = renderRuleset(ports, config({ families: { IPv4: V4 }, endpointShape: 'map' }));

/** A failed attempt over the generated full sync, counting how often its operations are made. */
function attempt() {
  const { generated } = planGeneratedFullSync(desired, 'replace');
  const made = { count: 0 };
  const a: FailedAttempt = {
    ops: () => {
      made.count++;
      return Array.from(generatedOperations(generated!));
    },
    rulesets: [desired],
    blamable: () => true,
  };
  return { a, made, ops: Array.from(generatedOperations(generated!)) };
}

describe('blame over generated operations', () => {
  it('makes them once for every error and every suspect', () => {
    const { a, made, ops } = attempt();
    // Operations no port owns (the tables): no owner, so every port is a suspect.
    const errors = [0, 1].map((i) => new NftInvalidError(i, ops[i]!, 'refused by the test'));
    const blame = blameInvalid(errors, a);
    expect(blame.kind).toBe('unattributed');
    if (blame.kind !== 'unattributed') return;
    expect(blame.suspects()).toEqual(ports.map((p) => p.id).sort());
    expect(made.count).toBe(1);
  });

  it('names the owners of refused operations, making them once', () => {
    const { a, made, ops } = attempt();
    const owned = ops.flatMap((op, index) => (op.object.kind === 'rule' && op.object.chain.includes('svc-3') ? [index] : []));
    expect(owned.length).toBeGreaterThan(1);
    const failures = owned.map((index) => ({ index, errno: 22, code: 'EINVAL', message: 'no' }));
    const blame = blameRefusal(new NftCommitError(failures, ops), a);
    expect(blame.kind).toBe('owners');
    if (blame.kind !== 'owners') return;
    expect([...blame.owners.keys()]).toEqual([ports[3]!.id]);
    expect(made.count).toBe(1);
  });
});

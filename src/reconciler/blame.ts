// Whose a failed attempt was: the ServicePorts owning the operations that the
// transaction's checks, the batch builder or the kernel refused (isolation.ts
// sets them aside), or, when the failure names none of them, every port with
// operations in the transaction as suspects for bisection. Pure.

import { NftCommitError } from '../nft/dataplane.ts';
import type { Operation } from '../nft/objects.ts';
import type { NftInvalidError } from '../nft/transaction.ts';
import type { Blame, Refusal } from './isolation.ts';
import { OperationOwners } from './operation-owner.ts';
import type { Ruleset } from './ruleset.ts';

/** Errnos about the moment, not the rules: retrying the same transaction may well succeed. */
const TRANSIENT = new Set(['ENOMEM', 'ENOBUFS', 'EBUSY', 'EAGAIN', 'EINTR', 'ENOSPC', 'EPERM', 'EACCES', 'ETIMEDOUT']);

export interface FailedAttempt {
  /** The attempt's operations, in order (made again for a full sync, whose are generated). */
  ops: () => readonly Operation[];
  /** The rulesets whose fragments own operations: the desired one, then the last applied. */
  rulesets: ReadonlyArray<Ruleset | undefined>;
  /** Whether a port may be blamed: present in the model and not left out already. */
  blamable: (id: string) => boolean;
}

/**
 * Who owns the attempt's operations: the index is built once, when first
 * asked, and shared by the attribution and the suspects (at 100k Services it
 * costs a pass over every rendered port). So is the list of operations, which
 * a full sync makes again on each call of `a.ops`.
 */
function owners(a: FailedAttempt) {
  let index: OperationOwners | undefined;
  const ownersIndex = () => (index ??= new OperationOwners(a.rulesets));
  let list: readonly Operation[] | undefined;
  const ops = () => (list ??= a.ops());
  /** The blamable port owning operation `i`, if any. */
  const ownerOf = (i: number): string | undefined => {
    const op = ops()[i];
    const id = op ? ownersIndex().servicePortOf(op) : undefined;
    return id !== undefined && a.blamable(id) ? id : undefined;
  };
  /** The ServicePorts whose operations are in the attempt. */
  const suspects = (): string[] => {
    const out = new Set<string>();
    const n = ops().length;
    for (let i = 0; i < n; i++) {
      const id = ownerOf(i);
      if (id !== undefined) out.add(id);
    }
    return [...out].sort();
  };
  return { ops, ownerOf, suspects };
}

/** A transaction whose checks refused operations before anything was sent. */
export function blameInvalid(errors: readonly NftInvalidError[], a: FailedAttempt): Blame {
  const { ops, ownerOf, suspects } = owners(a);
  const found = new Map<string, Refusal>();
  for (const e of errors) {
    const id = ownerOf(e.index);
    if (id === undefined || found.has(id)) continue;
    const op = ops()[e.index]!;
    found.set(id, { stage: 'validation', errno: 0, code: e.code, message: `${op.verb} ${op.object.kind}: ${e.reason}` });
  }
  return found.size > 0 ? { kind: 'owners', owners: found } : { kind: 'unattributed', suspects };
}

/** A commit the dataplane (encoder, batch builder or kernel) refused. */
export function blameRefusal(error: unknown, a: FailedAttempt): Blame {
  const { ownerOf, suspects } = owners(a);
  if (!(error instanceof NftCommitError) || error.failures.length === 0) return { kind: 'unattributed', suspects };
  const found = new Map<string, Refusal>();
  let transientOnly = true;
  for (const f of error.failures) {
    if (TRANSIENT.has(f.code)) continue;
    transientOnly = false;
    const id = ownerOf(f.index);
    if (id === undefined || found.has(id)) continue;
    found.set(id, { stage: 'dataplane', errno: f.errno, code: f.code, message: f.message });
  }
  if (found.size > 0) return { kind: 'owners', owners: found };
  return transientOnly ? { kind: 'transient' } : { kind: 'unattributed', suspects };
}

// Capability probes: what this kernel's nf_tables can do, found by asking it.
//
// Flowtables: one transaction adds a scratch table and a flowtable in it and
// deletes the table again, so nothing stays behind whatever the answer. A
// kernel built without CONFIG_NF_FLOW_TABLE refuses the flowtable operation
// itself with ENOENT (no flowtable type for the family); a failure anywhere
// else (no permission, the table op refused...) says nothing about flowtables.

import { NftCommitError, type Dataplane } from './dataplane.ts';
import type { Family, Operation } from './objects.ts';

export type CapabilityStatus = 'supported' | 'unsupported' | 'unknown';

export interface CapabilityAnswer {
  status: CapabilityStatus;
  /** One sentence for logs and status pages. */
  reason: string;
}

export interface FlowtableProbeOptions {
  family?: Family;
  /** Scratch table name; must not exist. */
  table?: string;
}

function flowtableProbeOperations(family: Family, table: string): Operation[] {
  return [
    { verb: 'add', object: { kind: 'table', family, name: table } },
    { verb: 'add', object: { kind: 'flowtable', family, table, name: 'probe', hook: 'ingress', priority: 0, devices: [] } },
    { verb: 'delete', object: { kind: 'table', family, name: table } },
  ];
}

const FLOWTABLE_OP = 1;

/** Interprets the outcome of flowtableProbeOperations (pure, for tests of every branch). */
function interpretFlowtableProbe(error: unknown): CapabilityAnswer {
  if (error === undefined) return { status: 'supported', reason: 'the kernel created a flowtable' };
  if (!(error instanceof NftCommitError)) {
    return { status: 'unknown', reason: `flowtable probe could not run: ${(error as Error)?.message ?? String(error)}` };
  }
  const first = error.failures[0];
  if (!first) return { status: 'unknown', reason: 'flowtable probe failed without naming an operation' };
  if (first.index === FLOWTABLE_OP && first.code === 'ENOENT') {
    return {
      status: 'unsupported',
      reason: 'the kernel has no flowtable support (creating a flowtable answered ENOENT; CONFIG_NF_FLOW_TABLE is not built)',
    };
  }
  if (first.index === FLOWTABLE_OP) {
    return { status: 'unknown', reason: `flowtable probe: creating the flowtable failed with ${first.code}: ${first.message}` };
  }
  return { status: 'unknown', reason: `flowtable probe: operation ${first.index} failed with ${first.code}: ${first.message}` };
}

export async function probeFlowtables(dp: Dataplane, options: FlowtableProbeOptions = {}): Promise<CapabilityAnswer> {
  const family = options.family ?? 'inet';
  const table = options.table ?? `knp-probe-${process.pid}`;
  try {
    await dp.commit(dp.begin().queueAll(flowtableProbeOperations(family, table)));
    return interpretFlowtableProbe(undefined);
  } catch (e) {
    return interpretFlowtableProbe(e);
  }
}

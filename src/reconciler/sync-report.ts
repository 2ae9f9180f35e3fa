// What one sync asks for and what it reports, apart from the reconciler that
// runs it: the sync runner, the agent and the metrics read these.

import type { SyncStats } from './diff.ts';
import type { FullSyncMode } from './full-sync.ts';
import type { Refusal } from './isolation.ts';
import type { RenderProblem } from './ruleset.ts';

export type SyncRequest = { kind: 'incremental' } | { kind: 'full'; mode: FullSyncMode };

export interface SyncReport {
  /** What ran: a first sync is always a full one (replace, or adopt when allowed), whatever was asked. */
  kind: 'incremental' | 'full';
  mode?: FullSyncMode | 'adopt';
  /** Operations committed (0: nothing to do, no commit). */
  ops: number;
  stats: SyncStats;
  servicePorts: number;
  /** Distinct endpoint chains in the desired ruleset. */
  endpointChains: number;
  problems: RenderProblem[];
  /** Flushed chains awaiting deletion. */
  staleChains: number;
  /** Run a sync in this many ms to delete stale chains (undefined: none). */
  followUpMs?: number;
  /** ServicePorts whose operations failed in this sync, now set aside (see the top of reconciler.ts). */
  rejected: RejectedServicePort[];
  /** ServicePorts set aside, this sync's and earlier ones'. */
  setAside: number;
  /** A first sync that could have adopted the kernel's tables but replaced them: why. */
  adoptionRefused?: string;
}

/** A ServicePort set aside: its operations failed (see the top of reconciler.ts). */
export interface RejectedServicePort extends Refusal {
  servicePortId: string;
  namespace: string;
  serviceName: string;
  portName: string;
  /** Its last applied version is still programmed (false: it is not in the kernel at all). */
  keptLastApplied: boolean;
}

// The addon's conntrack functions (native/conntrack-napi.cc): the contract
// between the cleanup in src/agent/ and the ctnetlink code.

/** Where to act: the network namespace at this path (default: the process's own). */
export interface NativeConntrackOptions {
  netns?: string;
}

/** An original destination whose entries must have one of `keep` as reply source. */
export interface NativeConntrackTarget {
  /** IP protocol number (17 UDP, 132 SCTP). The addon honours any; JS never sends 6 (TCP). */
  protocol: number;
  /** Original destination address; absent for a NodePort (any address). */
  address?: string;
  port: number;
  /** Allowed reply sources: the serving endpoints. */
  keep: readonly string[];
}

export interface NativeConntrackCleanRequest {
  family: 4 | 6;
  /** One unfiltered dump of the family (full reconcile) instead of one kernel-filtered dump per target. */
  full: boolean;
  /** Delete messages per send(), 1 to 4096. */
  batchSize: number;
  targets: readonly NativeConntrackTarget[];
}

export interface NativeConntrackCleanResult {
  /** Entries the dumps returned. */
  scanned: number;
  /** Of them, entries whose reply source a target does not allow. */
  stale: number;
  deleted: number;
  /** Gone before the delete reached them (ENOENT): not a failure. */
  vanished: number;
  failed: number;
  dumps: number;
  batches: number;
  dumpMs: number;
  deleteMs: number;
  /** The first error, when there was one (the other counts stay valid). */
  error?: string;
  errno?: number;
}

/** One entry to create (tests and benchmarks: a conntrack table of a chosen size). */
export interface NativeConntrackEntry {
  protocol: number;
  origSrc: string;
  origDst: string;
  origSport: number;
  origDport: number;
  replySrc: string;
  replyDst: string;
  replySport: number;
  replyDport: number;
  timeoutSec: number;
}

export interface NativeConntrack {
  /** Dumps, matches and deletes off the JS thread; resolves with counts (also on kernel errors), rejects only on bad arguments. */
  conntrackClean(request: NativeConntrackCleanRequest, options?: NativeConntrackOptions): Promise<NativeConntrackCleanResult>;
  /** Creates entries; rejects when none could be created. */
  conntrackCreate(
    family: 4 | 6,
    entries: readonly NativeConntrackEntry[],
    batchSize: number,
    options?: NativeConntrackOptions,
  ): Promise<{ created: number; failed: number; error?: string }>;
}

// The reconciler's view of the kernel: commit a transaction, list a table.
// Injected by the agent: the netlink addon in production, the kernel-modelling
// fake in pure tests. Only src/native/addon.ts loads the addon.
//
// One door: commit takes a Transaction, whose operations were checked as they
// were queued, so no dataplane can forget to validate and none validates twice.

import type { Family, ListOptions, Operation, Table, TableListing } from './objects.ts';
import type { Transaction } from './transaction.ts';

/** One operation the kernel (or the fake) refused. */
export interface OperationFailure {
  /** Index into the committed operation list. */
  index: number;
  errno: number;
  /** Symbolic errno, e.g. 'ENOENT'. */
  code: string;
  /** The kernel's extended-ack text where it gave one, else strerror. */
  message: string;
}

/** A transaction that did not apply; nothing of it is in the kernel. */
export class NftCommitError extends Error {
  readonly code = 'ERR_NFT_COMMIT';
  readonly failures: OperationFailure[];
  readonly operations: readonly Operation[];
  constructor(failures: OperationFailure[], operations: readonly Operation[]) {
    const first = failures[0];
    const op = first ? operations[first.index] : undefined;
    super(
      first
        ? `nftables transaction rejected: operation ${first.index} (${op?.verb} ${op?.object.kind}) failed with ` +
            `${first.code}: ${first.message}`
        : 'nftables transaction rejected',
    );
    this.name = 'NftCommitError';
    this.failures = failures;
    this.operations = operations;
  }
}

// Defined beside the objects it lists, so that rendering a listing needs nothing of the dataplane.
export type { TableListing } from './objects.ts';

export interface Dataplane {
  /**
   * A new, empty transaction that checks elements and rules against the sets
   * and maps this dataplane knows the kernel to hold.
   */
  begin(): Transaction;
  /**
   * Applies the transaction's operations as one atomic transaction; throws
   * NftInvalidError for a transaction with an invalid operation (nothing is
   * sent) and NftCommitError naming the operations the kernel (or the batch
   * builder) refused.
   */
  commit(tx: Transaction): Promise<void>;
  /** Reads one table back; undefined when it does not exist. */
  list(family: Family, table: string, options?: ListOptions): Promise<TableListing | undefined>;
  /** Reads one table's own attributes only (not its contents); undefined when it does not exist. Where absent, list() serves. */
  table?(family: Family, table: string): Promise<Table | undefined>;
  /** Gives native memory the process no longer uses back to the OS; where there is any (the netlink addon's). */
  releaseMemory?(): void;
  /**
   * The kernel's own time for every commit so far, in ms (from sending a batch
   * to its last answer), where the dataplane can tell (the netlink addon's):
   * the floor a sync's duration is compared with.
   */
  readonly kernelMs?: number;
  /** The transactions the kernel was sent so far, where it counts them (a first start's staged commit is many). */
  readonly kernelTransactions?: number;
}

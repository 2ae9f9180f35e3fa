// A model of the kernel's nf_tables for pure tests: the same Dataplane the
// netlink addon implements, with the kernel's rules rather than a script of
// answers. Each behaviour below was checked against kernel 6.18 through
// `nft` in a network namespace (test/nft/fake-kernel-oracle.test.ts):
//
// - a transaction applies on a copy and replaces the state only if every
//   operation succeeded (all or nothing);
// - add is idempotent (an existing object with the same definition is left
//   alone); add of an existing map key with a different value, or of a set
//   with other types or flags, fails EEXIST; create fails EEXIST if present;
//   delete and flush fail ENOENT if missing; destroy never fails for missing;
// - references must exist (ENOENT): rule → chain, jump/goto → chain (not a
//   base chain: EOPNOTSUPP), lookup/vmap/set-update → set or map, element →
//   set, flow offload → flowtable;
// - a chain referenced by a jump/goto (rule or map element) cannot be deleted
//   (EBUSY); a chain's own rules go with it; a set or flowtable a rule uses
//   cannot be deleted (EBUSY); `flush table` removes rules only;
// - at the end, paths from base chains are validated like the kernel does:
//   a cycle or 16 nested jumps → EMLINK; NAT statements outside
//   their chain type and hooks, flow offload outside forward → EOPNOTSUPP.
//
// A transaction with an invalid operation throws NftInvalidError before
// anything applies, as the netlink dataplane does. Only the first failing
// operation is reported (the kernel may report more).

import { NftCommitError } from '../dataplane.ts';
import type { Dataplane, OperationFailure, TableListing } from '../dataplane.ts';
import type { Element, Family, ListOptions, Operation } from '../objects.ts';
import { Transaction } from '../transaction.ts';
import { Working } from './apply.ts';
import { HeldElements } from './held-elements.ts';
import { validateBaseChainPaths } from './paths.ts';
import {
  copyChain,
  copyContainer,
  copyElement,
  copyRule,
  ERRNO,
  KernelError,
  tableKey,
  type FakeKernelOptions,
  type TableState,
} from './state.ts';

export { ERRNO, KernelError } from './state.ts';
export type { FakeKernelOptions } from './state.ts';

/** A failure the next commit should report instead of applying (reconciler recovery tests). */
export interface InjectedFault {
  code: string;
  /** Defaults to ERRNO[code]. */
  errno?: number;
  /** Index of the operation to blame; defaults to 0. */
  index?: number;
  message?: string;
}

export class FakeKernel implements Dataplane {
  #tables = new Map<string, TableState>();
  readonly #options: FakeKernelOptions;
  /** Faults to report, one per commit, in order. */
  readonly faults: InjectedFault[] = [];
  /** Transactions applied. */
  commits = 0;
  /** Commit calls, applied or not. */
  attempts = 0;

  constructor(options: FakeKernelOptions = {}) {
    this.#options = options;
  }

  begin(): Transaction {
    return new Transaction((family, table, name) => this.#tables.get(tableKey(family, table))?.sets.get(name)?.set);
  }

  async commit(tx: Transaction): Promise<void> {
    this.#apply(tx);
  }

  async list(family: Family, table: string, options?: ListOptions): Promise<TableListing | undefined> {
    return this.listSync(family, table, options);
  }

  /** Checks the operations in a transaction of this kernel's (begin()) and commits it, synchronously: for tests. */
  commitSync(ops: readonly Operation[]): void {
    this.#apply(this.begin().queueAll(ops));
  }

  #apply(transaction: Transaction): void {
    // Listed (a generated transaction checked as it is) before anything else: an invalid
    // transaction never reaches a kernel (see Dataplane.commit), no attempt, no fault taken.
    const ops = transaction.ops();
    this.attempts++;
    const fault = this.faults.shift();
    if (fault) {
      const index = fault.index ?? 0;
      throw new NftCommitError(
        [{ index, errno: fault.errno ?? ERRNO[fault.code] ?? 0, code: fault.code, message: fault.message ?? `injected ${fault.code}` }],
        ops,
      );
    }
    const tx = new Working(this.#tables, this.#options);
    let i = 0;
    try {
      for (; i < ops.length; i++) tx.apply(ops[i]!, i);
      if (tx.needsValidation) validateBaseChainPaths(tx.touchedTables(), tx.origin, ops.length);
    } catch (e) {
      if (e instanceof KernelError) throw failure(ops, e.index ?? i, e.errnoCode, e.message);
      throw e;
    }
    this.#tables = tx.tables;
    this.commits++;
  }

  listSync(family: Family, name: string, options?: ListOptions): TableListing | undefined {
    const ts = this.#tables.get(tableKey(family, name));
    if (!ts) return undefined;
    const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    const chains = [...ts.chains.values()].map((c) => c.chain).sort(byName);
    const sets = [...ts.sets.values()].map((s) => s.set).sort(byName);
    const elements: Element[] = [];
    const skipped = sets.filter((s) => options?.skipElementsOf?.includes(s.name)).map((s) => s.name);
    const encodedOf = new Set(options?.elementsEncodedOf);
    const held = encodedOf.size > 0 ? new HeldElements() : undefined;
    for (const s of sets) {
      if (skipped.includes(s.name)) continue;
      const els = [...ts.sets.get(s.name)!.elements.entries()]
        .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
        .map(([, e]) => copyElement(e));
      if (held && encodedOf.has(s.name) && held.hold(s, els)) continue;
      for (const e of els) elements.push(e);
    }
    const rulesOf = (chain: string) => (ts.chains.get(chain)?.rules ?? []).map(copyRule);
    const onDemand = options?.rulesOnDemand ?? false;
    return {
      table: { ...ts.table },
      chains: chains.map(copyChain),
      // Asked for a chain at a time (ListOptions.rulesOnDemand), they are what the table held when listed, as the
      // kernel's dump is: a commit never changes a committed table's state, it replaces it (apply.ts, copy on write).
      rules: onDemand ? [] : chains.flatMap((c) => rulesOf(c.name)),
      ...(onDemand ? { rulesOf } : {}),
      sets: sets.map(copyContainer),
      elements,
      flowtables: [...ts.flowtables.values()].sort(byName).map((f) => ({ ...f, devices: [...f.devices] })),
      ...(skipped.length > 0 ? { elementsNotRead: skipped } : {}),
      ...(held ? { encodedElements: held } : {}),
    };
  }

  /** Names of the tables present, as `family name`. */
  tableNames(): string[] {
    return [...this.#tables.keys()].sort();
  }
}

function failure(ops: readonly Operation[], index: number, code: string, message: string): NftCommitError {
  const f: OperationFailure = { index, errno: ERRNO[code] ?? 0, code, message };
  return new NftCommitError([f], ops);
}

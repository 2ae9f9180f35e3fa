// A transaction: an ordered list of (verb, object) operations that the kernel
// applies atomically, and the only thing a Dataplane commits. Each operation
// is checked as it is queued (generated ones as the dataplane's encoding
// makes them, see queueGenerated); a transaction with an invalid operation can
// never be applied (the kernel would refuse it anyway, only later and with
// less to say about why). Every operation is checked, not only those before
// the first invalid one, so that a caller learns at once every operation that
// would fail and whose it is (the reconciler sets those owners aside).

import type { Family, NftMap, NftObject, NftObjectKind, NftSet, Operation, Verb } from './objects.ts';
import { CheckContext, checkElementRun, checkOperation, fail, VERBS_BY_KIND } from './operation-checks.ts';
import { isElementRun, runOperations, type ElementRun, type GeneratedItem } from './element-run.ts';
import { RuleCheckFailure } from './rule-checks.ts';

export { selectorType } from './rule-checks.ts';
export { VERBS_BY_KIND } from './operation-checks.ts';
export type { SelectorType } from './rule-checks.ts';

/** An operation that cannot be applied, found before anything was sent. */
export class NftInvalidError extends Error {
  readonly code = 'ERR_NFT_INVALID';
  /** Index of the operation in the transaction. */
  readonly index: number;
  readonly reason: string;
  readonly operation: Operation;
  constructor(index: number, operation: Operation, reason: string) {
    super(`invalid nftables operation ${index} (${operation?.verb} ${operation?.object?.kind}): ${reason}`);
    this.name = 'NftInvalidError';
    this.index = index;
    this.reason = reason;
    this.operation = operation;
  }
}

// A record, so that a verb added to the type is a compile error here until counted.
const EVERY_VERB: Record<Verb, true> = { add: true, create: true, insert: true, replace: true, delete: true, destroy: true, flush: true };
const VERBS = Object.keys(EVERY_VERB) as Verb[];
const KINDS = Object.keys(VERBS_BY_KIND) as NftObjectKind[];
// Records, not Maps: #check reads both for each of a full sync's millions of operations.
const VERB_INDEX = Object.fromEntries(VERBS.map((v, i) => [v, i])) as Record<Verb, number>;
const KIND_INDEX = Object.fromEntries(KINDS.map((k, i) => [k, i])) as Record<NftObjectKind, number>;

/** How many valid operations a transaction holds of one verb and kind. */
export interface OperationCount {
  verb: Verb;
  kind: NftObjectKind;
  count: number;
}

function containerKey(family: Family, table: string, name: string): string {
  return `${family}\0${table}\0${name}`;
}

/** Looks up a set or map that exists outside the transaction (the dataplane's knowledge of the kernel). */
export type ContainerLookup = (family: Family, table: string, name: string) => NftSet | NftMap | undefined;

export class Transaction {
  /** Valid operations; the caller's own list (never written) when queueAll took one whole into an empty transaction. */
  #ops: Operation[] = [];
  #ownsOps = true;
  /** After queueGenerated(), until ops() lists them: makes the operations again, one at a time (runs of elements as runs). */
  #source: (() => Iterable<GeneratedItem>) | undefined;
  /** How many #source makes, as its planner announced them. */
  #announced: number | undefined;
  /** Whether every operation #source makes has been checked (its errors and counts complete). */
  #generatedChecked = false;
  readonly #containers = new Map<string, NftSet | NftMap>();
  readonly #known: ContainerLookup | undefined;
  readonly #context = new CheckContext(
    (family, table, name) => this.#containers.get(containerKey(family, table, name)) ?? this.#known?.(family, table, name),
  );
  readonly #errors: NftInvalidError[] = [];
  /** Valid operations by verb and kind (VERB_INDEX * KINDS.length + KIND_INDEX), counted as they are checked. */
  readonly #counts = new Uint32Array(VERBS.length * KINDS.length);
  /** Operations queued, valid or not: the next one's index. */
  #queued = 0;
  #stageable = 0;

  /** `known`: sets and maps that already exist, so that elements and rules using them are checked against their types. */
  constructor(known?: ContainerLookup | ReadonlyArray<NftSet | NftMap>) {
    if (typeof known === 'function') this.#known = known;
    else for (const c of known ?? []) this.#containers.set(containerKey(c.family, c.table, c.name), c);
  }

  /** Registers a set or map that already exists (see the constructor). */
  knownContainer(c: NftSet | NftMap): this {
    this.#containers.set(containerKey(c.family, c.table, c.name), c);
    this.#context.forget();
    return this;
  }

  add(object: NftObject): this {
    return this.queue('add', object);
  }
  create(object: NftObject): this {
    return this.queue('create', object);
  }
  insert(object: NftObject): this {
    return this.queue('insert', object);
  }
  replace(object: NftObject): this {
    return this.queue('replace', object);
  }
  delete(object: NftObject): this {
    return this.queue('delete', object);
  }
  destroy(object: NftObject): this {
    return this.queue('destroy', object);
  }
  flush(object: NftObject): this {
    return this.queue('flush', object);
  }

  queue(verb: Verb, object: NftObject): this {
    this.#refuseWhenGenerated();
    const op = { verb, object };
    if (this.#check(op)) this.#push(op);
    return this;
  }

  /**
   * Queues operations made elsewhere (a planned sync), as they are: one check
   * each. Into an empty transaction, a list whose operations are all valid is
   * kept as it is, not copied (a full sync's is millions at 100k Services).
   */
  queueAll(ops: readonly Operation[]): this {
    this.#refuseWhenGenerated();
    if (this.#queued > 0) {
      for (const op of ops) if (this.#check(op)) this.#push(op);
      return this;
    }
    // The valid ones, made only once one is not.
    let valid: Operation[] | undefined;
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i]!;
      const ok = this.#check(op);
      if (!ok) valid ??= ops.slice(0, i);
      else if (valid) valid.push(op);
    }
    this.#ops = valid ?? (ops as Operation[]);
    this.#ownsOps = valid !== undefined;
    return this;
  }

  /**
   * Queues the `count` operations `source` makes (a full sync's plan), not
   * kept: at 100k Services they are millions of small objects, most of a full
   * sync's peak. They are checked as the dataplane's encoding makes them
   * (operations()), so that they are made once for both; until then errors()
   * and counts() know nothing of them, and a dataplane throws the first
   * error, with every one recorded, before it sends any (but the stages
   * before it of a staged commit, see stageable). check() checks
   * them without encoding; ops() makes and keeps the list (a failure's blame,
   * a dataplane that wants a list). `source` must make the very same
   * operations every time; runs of element additions among them (ElementRun)
   * count as their length. Only into an empty transaction, which then takes no more.
   */
  queueGenerated(source: () => Iterable<GeneratedItem>, count: number, options: { stageable?: number } = {}): this {
    this.#refuseWhenGenerated();
    if (this.#queued > 0) throw new Error('generated operations go into an empty transaction');
    this.#source = source;
    this.#announced = count;
    this.#stageable = Math.min(options.stageable ?? 0, count);
    return this;
  }

  /**
   * How many of its first operations hook nothing a packet passes (no base
   * chain, nor anything one reaches yet), in tables the kernel does not hold:
   * a dataplane may commit them as transactions of their own, the kernel
   * working on one while the next is encoded, and the rest as the last,
   * which is when a packet first sees any of it. 0: one transaction. A
   * transaction the kernel refuses leaves the stages before it in place,
   * hooked to nothing, until the next replace of those tables.
   */
  get stageable(): number {
    return this.#stageable;
  }

  /**
   * The operations to commit, as ops() but made one at a time when they were
   * generated. Generated ones not yet checked are checked as they are made:
   * after the first invalid one no more are given, and once all are made the
   * first error is thrown. Otherwise throws the first error as ops() does.
   */
  operations(): Iterable<Operation> {
    const items = this.items();
    // Listed (queued, or generated and then listed by ops()): only operations.
    return this.#source ? runOperations(items) : (items as readonly Operation[]);
  }

  /** Whether its operations were queued as generated (queueGenerated): made on demand, not listed. */
  get generated(): boolean {
    return this.#announced !== undefined;
  }

  /**
   * As operations(), but a generated transaction's runs of elements are given
   * as they were made (see ElementRun), each checked once against its set:
   * what a streamed encoder takes.
   */
  items(): Iterable<GeneratedItem> {
    if (this.#source && !this.#generatedChecked) return this.#checking(this.#source);
    if (this.#errors.length > 0) throw this.#errors[0];
    return this.#source ? this.#source() : this.#ops;
  }

  /** Checks generated operations not checked yet (none are kept); then errors() and counts() are complete. */
  check(): this {
    if (this.#source && !this.#generatedChecked) {
      try {
        for (const _ of this.#checking(this.#source));
      } catch (e) {
        if (!(e instanceof NftInvalidError)) throw e;
      }
    }
    return this;
  }

  /** One pass over what `source` makes, each operation checked and counted, the valid ones given until one is not. */
  *#checking(source: () => Iterable<GeneratedItem>): Generator<GeneratedItem> {
    // A pass given up half way (its consumer threw) is started over.
    this.#queued = 0;
    this.#errors.length = 0;
    this.#counts.fill(0);
    let made = 0;
    for (const item of source()) {
      if (isElementRun(item)) {
        // An empty run stands for nothing: there is no element to name in an error.
        if (item.length === 0) continue;
        made += item.length;
        if (this.#checkRun(item) && this.#errors.length === 0) yield item;
        continue;
      }
      made++;
      if (this.#check(item) && this.#errors.length === 0) yield item;
    }
    if (made !== this.#announced) throw new Error(`the generated operations are ${made}, not the ${this.#announced} announced`);
    this.#generatedChecked = true;
    if (this.#errors.length > 0) throw this.#errors[0];
  }

  #refuseWhenGenerated(): void {
    if (this.#announced !== undefined) throw new Error('a transaction of generated operations takes no more');
  }

  #push(op: Operation): void {
    if (!this.#ownsOps) {
      this.#ops = [...this.#ops];
      this.#ownsOps = true;
    }
    this.#ops.push(op);
  }

  /** Checks one operation and counts it; false (its error recorded) when invalid. */
  #check(op: Operation): boolean {
    const index = this.#queued++;
    try {
      if (!op || typeof op !== 'object') fail('no operation');
      checkOperation(op, this.#context);
    } catch (e) {
      if (!(e instanceof RuleCheckFailure)) throw e;
      this.#errors.push(new NftInvalidError(index, op, e.message));
      return false;
    }
    const o = op.object;
    if ((o.kind === 'set' || o.kind === 'map') && (op.verb === 'add' || op.verb === 'create')) this.knownContainer(o);
    this.#counts[VERB_INDEX[op.verb] * KINDS.length + KIND_INDEX[o.kind]]!++;
    return true;
  }

  /** Checks a run of element additions once, against its set, and counts them; false (its error recorded on its first) when invalid. */
  #checkRun(run: ElementRun): boolean {
    const index = this.#queued;
    this.#queued += run.length;
    try {
      checkElementRun(run, this.#context);
    } catch (e) {
      if (!(e instanceof RuleCheckFailure)) throw e;
      this.#errors.push(new NftInvalidError(index, { verb: 'add', object: run.element(0) }, e.message));
      return false;
    }
    this.#counts[VERB_INDEX.add * KINDS.length + KIND_INDEX.element]! += run.length;
    return true;
  }

  /**
   * The valid operations by verb and kind, counted while they were checked:
   * no pass of their own (a full sync's are counted as its encoding checks them, see queueGenerated).
   */
  counts(): OperationCount[] {
    const out: OperationCount[] = [];
    for (let v = 0; v < VERBS.length; v++) {
      for (let k = 0; k < KINDS.length; k++) {
        const count = this.#counts[v * KINDS.length + k]!;
        if (count > 0) out.push({ verb: VERBS[v]!, kind: KINDS[k]!, count });
      }
    }
    return out;
  }

  /** The first invalid operation, if any. */
  get error(): NftInvalidError | undefined {
    return this.#errors[0];
  }

  /** Every invalid operation, in order (indexes count every operation queued). */
  get errors(): readonly NftInvalidError[] {
    return this.#errors;
  }

  /** Operations queued and valid so far; generated ones not yet checked count as announced. */
  get length(): number {
    if (this.#announced === undefined) return this.#ops.length;
    return this.#generatedChecked ? this.#queued - this.#errors.length : this.#announced;
  }

  /** The operations to commit; throws the first error if any operation was invalid. Generated ones are made and kept from then on. */
  ops(): readonly Operation[] {
    if (!this.#source) {
      if (this.#errors.length > 0) throw this.#errors[0];
      return this.#ops;
    }
    // Made by operations(): checked as they are listed when no pass has checked them, else made again.
    const checkedBefore = this.#generatedChecked;
    const made = Array.from(this.operations());
    if (checkedBefore && made.length !== this.length)
      throw new Error(`the operations made again are ${made.length}, not the ${this.length} that were checked`);
    this.#ops = made;
    this.#source = undefined;
    return this.#ops;
  }
}

/**
 * Checks a whole operation list; throws NftInvalidError for the first bad one.
 * A Transaction's checks (the one loop there is), for callers that only want
 * to know.
 */
export function validateOperations(ops: readonly Operation[], known: ReadonlyArray<NftSet | NftMap> = []): void {
  const tx = new Transaction(known).queueAll(ops);
  if (tx.error) throw tx.error;
}

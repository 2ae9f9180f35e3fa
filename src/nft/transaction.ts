// A transaction: an ordered list of (verb, object) operations that the kernel
// applies atomically, and the only thing a Dataplane commits. Each operation
// is checked as it is queued; a transaction with an invalid operation can
// never be applied (the kernel would refuse it anyway, only later and with
// less to say about why). Every operation is checked, not only those before
// the first invalid one, so that a caller learns at once every operation that
// would fail and whose it is (the reconciler sets those owners aside).

import {
  isVerdictValue,
  type ChainHook,
  type ChainType,
  type DataType,
  type Element,
  type Family,
  type NftMap,
  type NftObject,
  type NftObjectKind,
  type NftSet,
  type Operation,
  type SetFlag,
  type Verb,
} from './objects.ts';
import { checkCanonical, checkName, checkStatements, checkVerdict, isCanonical, RuleCheckFailure } from './rule-checks.ts';
import { typeLength } from './values.ts';
import { assertNever } from '../assert-never.ts';

export { selectorType } from './rule-checks.ts';
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

/** The verbs each kind of object accepts. */
export const VERBS_BY_KIND: Readonly<Record<NftObjectKind, readonly Verb[]>> = {
  table: ['add', 'create', 'delete', 'destroy', 'flush'],
  chain: ['add', 'create', 'delete', 'destroy', 'flush'],
  set: ['add', 'create', 'delete', 'destroy', 'flush'],
  map: ['add', 'create', 'delete', 'destroy', 'flush'],
  flowtable: ['add', 'create', 'delete', 'destroy'],
  rule: ['add', 'insert', 'replace', 'delete', 'destroy'],
  element: ['add', 'create', 'delete', 'destroy'],
};

const CHAIN_TYPES: readonly ChainType[] = ['filter', 'nat', 'route'];
const HOOKS_BY_TYPE: Readonly<Record<ChainType, readonly ChainHook[]>> = {
  filter: ['prerouting', 'input', 'forward', 'output', 'postrouting'],
  nat: ['prerouting', 'input', 'output', 'postrouting'],
  route: ['output'],
};
const KEY_TYPES: readonly DataType[] = ['ipv4_addr', 'ipv6_addr', 'inet_proto', 'inet_service', 'ifname', 'mark', 'integer'];
const SET_FLAGS: readonly SetFlag[] = ['interval', 'timeout', 'dynamic', 'constant'];
const COMMENT_MAX = 128;
const INT32_MIN = -0x80000000;
const INT32_MAX = 0x7fffffff;

function fail(reason: string): never {
  throw new RuleCheckFailure(reason);
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
  /** After releaseOperations(): makes the same list again when one is asked for. */
  #again: (() => readonly Operation[]) | undefined;
  /** While released: how many there are. */
  #length: number | undefined;
  readonly #containers = new Map<string, NftSet | NftMap>();
  readonly #known: ContainerLookup | undefined;
  readonly #context = new CheckContext(
    (family, table, name) => this.#containers.get(containerKey(family, table, name)) ?? this.#known?.(family, table, name),
  );
  readonly #errors: NftInvalidError[] = [];
  /** Operations queued, valid or not: the next one's index. */
  #queued = 0;

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
    this.#refuseWhenReleased();
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
    this.#refuseWhenReleased();
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

  #refuseWhenReleased(): void {
    if (this.#length !== undefined) throw new Error('a transaction whose operations were released takes no more');
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
    return true;
  }

  /** The first invalid operation, if any. */
  get error(): NftInvalidError | undefined {
    return this.#errors[0];
  }

  /** Every invalid operation, in order (indexes count every operation queued). */
  get errors(): readonly NftInvalidError[] {
    return this.#errors;
  }

  /** Operations queued and valid so far. */
  get length(): number {
    return this.#length ?? this.#ops.length;
  }

  /** The operations to commit; throws the first error if any operation was invalid. */
  ops(): readonly Operation[] {
    if (this.#errors.length > 0) throw this.#errors[0];
    if (this.#again) {
      const again = this.#again();
      if (again.length !== this.#length)
        throw new Error(`the operations made again are ${again.length}, not the ${this.#length} that were released`);
      this.#ops = again as Operation[];
      this.#ownsOps = false;
      this.#again = undefined;
      this.#length = undefined;
    }
    return this.#ops;
  }

  /**
   * Lets go of the operations of a transaction the dataplane has taken (encoded
   * and handed to the kernel): a full sync's are most of what the agent holds
   * at its peak, and the kernel works on the batch for seconds. Only a failure
   * needs them again, to name the operations it refused: ops() then asks
   * `again` for the very same list (a full sync's plan is a pure function of
   * what it was planned from). Nothing may be queued afterwards.
   */
  releaseOperations(again: () => readonly Operation[]): void {
    if (this.#errors.length > 0) throw this.#errors[0];
    this.#length = this.length;
    this.#ops = [];
    this.#ownsOps = true;
    this.#again = again;
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

type FindContainer = (family: Family, table: string, name: string) => NftSet | NftMap | undefined;

/**
 * What the checks of one operation list remember between operations: the
 * names already found valid (a transaction names its table thousands of
 * times) and the last container looked up (elements come in runs per set).
 */
class CheckContext {
  readonly #find: FindContainer;
  #validName: unknown = undefined;
  #validSetName: unknown = undefined;
  // The last lookup, in fields rather than an object: a full sync's elements alternate
  // between a dozen sets, and an object per miss was most of what checking them allocated.
  #lastFamily: Family | undefined;
  #lastTable = '';
  #lastName = '';
  #lastFound: NftSet | NftMap | undefined;

  #inFamily: Family = 'ip';
  #inTable = '';
  // One function for every rule: a closure per rule would be 50k allocations per full sync.
  readonly #lookup = (name: string) => this.find(this.#inFamily, this.#inTable, name);

  constructor(find: FindContainer) {
    this.#find = find;
  }

  /** A lookup of containers in one table, valid until the next call. */
  lookupIn(family: Family, table: string): (name: string) => NftSet | NftMap | undefined {
    this.#inFamily = family;
    this.#inTable = table;
    return this.#lookup;
  }

  find(family: Family, table: string, name: string): NftSet | NftMap | undefined {
    if (this.#lastFamily === family && this.#lastName === name && this.#lastTable === table) return this.#lastFound;
    const c = this.#find(family, table, name);
    this.#lastFamily = family;
    this.#lastTable = table;
    this.#lastName = name;
    this.#lastFound = c;
    return c;
  }

  /** Sets and maps changed: forget the last lookup. */
  forget(): void {
    this.#lastFamily = undefined;
  }

  tableName(name: unknown): void {
    if (name === this.#validName) return;
    checkName(name, 'table');
    this.#validName = name;
  }

  setName(name: unknown): void {
    if (name === this.#validSetName) return;
    checkName(name, 'set');
    this.#validSetName = name;
  }
}

function checkOperation(op: Operation, ctx: CheckContext): void {
  const o = op.object;
  if (!o || typeof o !== 'object') fail('no object');
  const verbs = VERBS_BY_KIND[o.kind];
  if (!verbs) fail(`unknown object kind ${JSON.stringify(o.kind)}`);
  if (!verbs.includes(op.verb)) fail(`${o.kind} does not take the verb ${JSON.stringify(op.verb)}`);
  if (o.family !== 'ip' && o.family !== 'ip6' && o.family !== 'inet') fail(`unknown family ${JSON.stringify(o.family)}`);
  ctx.tableName(o.kind === 'table' ? o.name : o.table);
  const comment = (o as { comment?: unknown }).comment;
  if (comment !== undefined) {
    if (typeof comment !== 'string') fail('comment must be a string');
    if (comment.length * 3 > COMMENT_MAX && Buffer.byteLength(comment) > COMMENT_MAX) fail(`comment is longer than ${COMMENT_MAX} bytes`);
    if (comment.includes('"')) fail('comment contains a double quote, which nft syntax cannot print');
  }
  // Deleting names an object; only its identity matters.
  const defining = op.verb === 'add' || op.verb === 'create' || op.verb === 'insert' || op.verb === 'replace';
  switch (o.kind) {
    case 'table':
      return;
    case 'chain':
      checkName(o.name, 'chain');
      if (defining && o.base) checkBase(o.base);
      return;
    case 'set':
    case 'map':
      checkName(o.name, o.kind);
      if (defining) checkContainer(o);
      return;
    case 'flowtable':
      checkName(o.name, 'flowtable');
      if (defining) {
        if (o.hook !== 'ingress') fail('a flowtable hooks ingress');
        if (!Number.isInteger(o.priority) || o.priority < INT32_MIN || o.priority > INT32_MAX) fail('priority must be a 32-bit integer');
        if (!Array.isArray(o.devices)) fail('devices must be a list');
        for (const d of o.devices) checkCanonical('ifname', d, 'flowtable device');
        if (new Set(o.devices).size !== o.devices.length) fail('a device is listed twice');
      }
      return;
    case 'rule': {
      checkName(o.chain, 'chain');
      const needsHandle = op.verb === 'replace' || op.verb === 'delete' || op.verb === 'destroy';
      if (needsHandle && !(Number.isInteger(o.handle) && o.handle! > 0)) fail(`${op.verb} rule needs the rule's handle`);
      if (!needsHandle && o.handle !== undefined) fail(`${op.verb} rule takes no handle (positions are not supported)`);
      if (defining) checkStatements(o.exprs, o.family, ctx.lookupIn(o.family, o.table));
      return;
    }
    case 'element':
      ctx.setName(o.set);
      checkElement(o, ctx.find(o.family, o.table, o.set), defining);
      return;
    default:
      assertNever(o);
  }
}

function checkBase(base: NonNullable<Extract<NftObject, { kind: 'chain' }>['base']>): void {
  if (!CHAIN_TYPES.includes(base.type)) fail(`unknown chain type ${JSON.stringify(base.type)}`);
  const hooks = HOOKS_BY_TYPE[base.type];
  if (!hooks.includes(base.hook)) {
    fail(
      base.hook === 'ingress'
        ? 'ingress base chains need a device, which this model does not carry'
        : `a ${base.type} chain cannot hook ${base.hook}`,
    );
  }
  if (!Number.isInteger(base.priority) || base.priority < INT32_MIN || base.priority > INT32_MAX) fail('priority must be a 32-bit integer');
  if (base.policy !== undefined && base.policy !== 'accept' && base.policy !== 'drop')
    fail(`unknown policy ${JSON.stringify(base.policy)}`);
}

function checkContainer(c: NftSet | NftMap): void {
  if (!Array.isArray(c.keyType) || c.keyType.length === 0) fail(`a ${c.kind} needs a key type`);
  for (const t of c.keyType) if (!KEY_TYPES.includes(t)) fail(`${JSON.stringify(t)} cannot be a key type`);
  if (c.kind === 'map') {
    const d = c.dataType;
    if (Array.isArray(d)) {
      // A one-part array would list back as a plain type: refuse it so that desired and listed objects compare equal.
      if (d.length < 2) fail('concatenated data needs at least two types (write a single type without brackets)');
      for (const t of d) if (!KEY_TYPES.includes(t)) fail(`${JSON.stringify(t)} cannot be part of concatenated data`);
      if (d.reduce((n, t) => n + ((typeLength(t) + 3) & ~3), 0) > 64) fail('concatenated data is longer than 64 bytes');
    } else if (!KEY_TYPES.includes(d) && d !== 'verdict') fail(`unknown data type ${JSON.stringify(d)}`);
  }
  const flags = c.flags ?? [];
  for (const f of flags) if (!SET_FLAGS.includes(f)) fail(`unknown set flag ${JSON.stringify(f)}`);
  if (new Set(flags).size !== flags.length) fail('a flag is listed twice');
  if (c.kind === 'set' && c.timeout !== undefined) {
    if (!Number.isInteger(c.timeout) || c.timeout < 1) fail('timeout must be a whole number of seconds from 1');
    if (!flags.includes('timeout')) fail('a default timeout needs the timeout flag');
  }
}

function checkElement(e: Element, c: NftSet | NftMap | undefined, defining: boolean): void {
  if (!Array.isArray(e.key) || e.key.length === 0) fail('an element needs a key');
  for (const part of e.key) if (typeof part !== 'string' || part.length === 0) fail('key parts must be non-empty strings');
  if (isVerdictValue(e.value)) checkVerdict(e.value);
  if (e.timeout !== undefined && !(Number.isInteger(e.timeout) && e.timeout >= 1)) fail('timeout must be a whole number of seconds from 1');
  if (!c) return;
  if (e.key.length !== c.keyType.length) fail(`key has ${e.key.length} parts, ${c.kind} ${c.name} has ${c.keyType.length}`);
  const interval = c.flags?.includes('interval') ?? false;
  for (let i = 0; i < e.key.length; i++) {
    const part = e.key[i]!;
    const type = c.keyType[i]!;
    if (!interval && part.includes('/')) fail(`key part ${i}: prefixes need an interval ${c.kind}`);
    // The label is only built for the message.
    if (!isCanonical(type, part)) checkCanonical(type, part, `key part ${i}`);
  }
  if (e.timeout !== undefined && !c.flags?.includes('timeout')) fail(`${c.kind} ${c.name} has no timeout flag`);
  if (!defining) return;
  if (c.kind === 'set') {
    if (e.value !== undefined) fail(`set ${c.name} holds no values`);
    return;
  }
  if (e.value === undefined) fail(`map ${c.name} needs a value`);
  if (c.dataType === 'verdict') {
    if (typeof e.value === 'string') fail(`verdict map ${c.name} needs a verdict value`);
  } else if (Array.isArray(c.dataType)) {
    const types = c.dataType;
    const v = e.value;
    if (!Array.isArray(v) || v.length !== types.length) fail(`map ${c.name} holds ${types.join(' . ')} values: one text per part`);
    for (let i = 0; i < v.length; i++) {
      if (typeof v[i] !== 'string' || v[i]!.includes('/')) fail(`value part ${i} must be a value text, not a prefix`);
      if (!isCanonical(types[i]!, v[i]!)) checkCanonical(types[i]!, v[i]!, `value part ${i}`);
    }
  } else {
    if (typeof e.value !== 'string')
      fail(`map ${c.name} holds ${c.dataType} values, not ${Array.isArray(e.value) ? 'concatenations' : 'verdicts'}`);
    if (e.value.includes('/')) fail('a map value cannot be a prefix');
    checkCanonical(c.dataType, e.value, 'value');
  }
}

// The checks of one operation, as a transaction runs them while it is
// queued (transaction.ts): kinds, verbs, names, hooks, types, and elements
// against the set they go into. A failure is a RuleCheckFailure.

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
  sameTypes,
  type SetFlag,
  type Verb,
} from './objects.ts';
import { checkCanonical, checkName, checkStatements, checkVerdict, isCanonical, RuleCheckFailure } from './rule-checks.ts';
import { typeLength } from './values.ts';
import type { ElementRun } from './element-run.ts';
import { assertNever } from '../assert-never.ts';

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

export function fail(reason: string): never {
  throw new RuleCheckFailure(reason);
}

type FindContainer = (family: Family, table: string, name: string) => NftSet | NftMap | undefined;

/**
 * What the checks of one operation list remember between operations: the
 * names already found valid (a transaction names its table thousands of
 * times) and the containers looked up in the last table (elements come in
 * runs per set, a full sync's fragments alternating between a few).
 */
export class CheckContext {
  readonly #find: FindContainer;
  #validName: unknown = undefined;
  #validSetName: unknown = undefined;
  // By name, in the table of the last lookup: the transaction's own lookup builds a key
  // string per call, and a full sync's fragments alternate between its ClusterIP and
  // service maps, a miss of a last-lookup cache for each of their elements.
  #foundFamily: Family | undefined;
  #foundTable = '';
  readonly #found = new Map<string, NftSet | NftMap | undefined>();

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
    if (this.#foundFamily !== family || this.#foundTable !== table) {
      this.#found.clear();
      this.#foundFamily = family;
      this.#foundTable = table;
    }
    let c = this.#found.get(name);
    if (c === undefined && !this.#found.has(name)) {
      c = this.#find(family, table, name);
      this.#found.set(name, c);
    }
    return c;
  }

  /** Sets and maps changed: forget the lookups. */
  forget(): void {
    this.#foundFamily = undefined;
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

function checkFamily(family: Family): void {
  if (family !== 'ip' && family !== 'ip6' && family !== 'inet') fail(`unknown family ${JSON.stringify(family)}`);
}

export function checkOperation(op: Operation, ctx: CheckContext): void {
  const o = op.object;
  if (!o || typeof o !== 'object') fail('no object');
  const verbs = VERBS_BY_KIND[o.kind];
  if (!verbs) fail(`unknown object kind ${JSON.stringify(o.kind)}`);
  if (!verbs.includes(op.verb)) fail(`${o.kind} does not take the verb ${JSON.stringify(op.verb)}`);
  checkFamily(o.family);
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
      }
      if (defining || op.verb === 'delete') {
        if (!Array.isArray(o.devices)) fail('devices must be a list');
        for (const d of o.devices) checkCanonical('ifname', d, 'flowtable device');
        if (new Set(o.devices).size !== o.devices.length) fail('a device is listed twice');
      } else if (op.verb === 'destroy' && Array.isArray(o.devices) && o.devices.length > 0) {
        // Kernels differ on a missing device here; only delete takes devices out.
        fail('destroy takes the whole flowtable: list no devices');
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

/**
 * A run of element additions, checked once for all its elements: its set is
 * known (added earlier in the transaction, or existing), takes no intervals
 * and has exactly the key and data types the run's texts are of. The texts
 * themselves are the run's maker's to vouch for (see element-run.ts).
 */
export function checkElementRun(run: ElementRun, ctx: CheckContext): void {
  checkFamily(run.family);
  ctx.tableName(run.table);
  ctx.setName(run.set);
  const c = ctx.find(run.family, run.table, run.set);
  if (!c) fail(`set ${run.set} is not known: a run of elements goes into a set added before it`);
  if (c.flags?.includes('interval') || c.flags?.includes('timeout'))
    fail(`${c.kind} ${c.name} has intervals or timeouts, which a run of elements does not write`);
  if (!sameTypes(c.keyType, run.keyType)) fail(`${c.kind} ${c.name} is keyed by ${c.keyType.join(' . ')}, not ${run.keyType.join(' . ')}`);
  const data = c.kind === 'map' ? c.dataType : undefined;
  if (run.dataType === undefined ? data !== undefined : !Array.isArray(data) || !sameTypes(data, run.dataType))
    fail(`${c.kind} ${c.name} does not hold ${run.dataType ? run.dataType.join(' . ') : 'no'} values`);
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

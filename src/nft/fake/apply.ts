// How the fake kernel applies one operation to a transaction's working copy.
// See fake-kernel.ts for the behaviours modelled and how they were checked.

import {
  isVerdictValue,
  type Chain,
  type Element,
  type Flowtable,
  type NftMap,
  type NftSet,
  type Operation,
  type Rule,
  type Table,
} from '../objects.ts';
import { compareBytes, prefixRange } from '../values.ts';
import {
  copyChain,
  copyContainer,
  copyElement,
  copyRule,
  elementKey,
  err,
  tableKey,
  type ChainState,
  type FakeKernelOptions,
  type SetState,
  type TableState,
} from './state.ts';
import { assertNever, UnreachableError } from '../../assert-never.ts';
import { checkJumpTarget, checkRuleReferences, countElementReferences, countRuleReferences } from './references.ts';

/** A verb validateOperations refuses for this kind of object (VERBS_BY_KIND): it never reaches the fake's state. */
function refusedVerb(kind: string, verb: string): UnreachableError {
  return new UnreachableError(`${verb} of a ${kind}`);
}

/** The state a transaction builds: copied on first write, object by object. */
export class Working {
  readonly tables: Map<string, TableState>;
  readonly #owned = new Set<object>();
  readonly #options: FakeKernelOptions;
  /** Which operation added each rule or element, to blame path errors on. */
  readonly origin = new Map<object, number>();
  readonly #touched = new Set<string>();
  needsValidation = false;

  constructor(committed: Map<string, TableState>, options: FakeKernelOptions) {
    this.tables = new Map(committed);
    this.#options = options;
  }

  touchedTables(): TableState[] {
    return [...this.#touched].map((k) => this.tables.get(k)).filter((t): t is TableState => t !== undefined);
  }

  apply(op: Operation, index: number): void {
    const o = op.object;
    const key = tableKey(o.family, o.kind === 'table' ? o.name : o.table);
    if (o.kind === 'table') {
      this.#table(op.verb, o, key);
      return;
    }
    const existing = this.tables.get(key);
    if (!existing) {
      if (op.verb === 'destroy') return;
      err('ENOENT', `table ${o.family} ${o.table} does not exist`);
    }
    const ts = this.#mutTable(key);
    switch (o.kind) {
      case 'chain':
        this.#chain(op.verb, o, ts);
        return;
      case 'set':
      case 'map':
        this.#set(op.verb, o, ts);
        return;
      case 'flowtable':
        this.#flowtable(op.verb, o, ts);
        return;
      case 'rule':
        this.#rule(op.verb, o, ts, index);
        return;
      case 'element':
        this.#element(op.verb, o, ts, index);
        return;
      default:
        assertNever(o);
    }
  }

  #mutTable(key: string): TableState {
    let ts = this.tables.get(key)!;
    this.#touched.add(key);
    if (this.#owned.has(ts)) return ts;
    ts = {
      table: ts.table,
      chains: new Map(ts.chains),
      sets: new Map(ts.sets),
      flowtables: new Map(ts.flowtables),
      chainUse: new Map(ts.chainUse),
      setUse: new Map(ts.setUse),
      flowtableUse: new Map(ts.flowtableUse),
      nextHandle: ts.nextHandle,
    };
    this.#owned.add(ts);
    this.tables.set(key, ts);
    return ts;
  }

  #mutChain(ts: TableState, name: string): ChainState | undefined {
    let cs = ts.chains.get(name);
    if (!cs || this.#owned.has(cs)) return cs;
    cs = { chain: cs.chain, rules: [...cs.rules] };
    this.#owned.add(cs);
    ts.chains.set(name, cs);
    return cs;
  }

  #mutSet(ts: TableState, name: string): SetState | undefined {
    let ss = ts.sets.get(name);
    if (!ss || this.#owned.has(ss)) return ss;
    ss = { set: ss.set, elements: new Map(ss.elements) };
    this.#owned.add(ss);
    ts.sets.set(name, ss);
    return ss;
  }

  #table(verb: Operation['verb'], t: Table, key: string): void {
    const ts = this.tables.get(key);
    switch (verb) {
      case 'add':
      case 'create':
        if (ts) {
          if (verb === 'create') err('EEXIST', `table ${t.family} ${t.name} exists`);
          return;
        }
        this.tables.set(
          key,
          this.#own({
            table: { ...t },
            chains: new Map(),
            sets: new Map(),
            flowtables: new Map(),
            chainUse: new Map(),
            setUse: new Map(),
            flowtableUse: new Map(),
            nextHandle: 1,
          }),
        );
        this.#touched.add(key);
        return;
      case 'delete':
      case 'destroy':
        if (!ts) {
          if (verb === 'destroy') return;
          err('ENOENT', `table ${t.family} ${t.name} does not exist`);
        }
        this.tables.delete(key);
        this.#touched.delete(key);
        return;
      case 'flush': {
        if (!ts) err('ENOENT', `table ${t.family} ${t.name} does not exist`);
        const m = this.#mutTable(key);
        for (const name of [...m.chains.keys()]) this.#dropRules(m, this.#mutChain(m, name)!, () => true);
        return;
      }
      case 'insert':
      case 'replace':
        throw refusedVerb('table', verb);
      default:
        assertNever(verb);
    }
  }

  #own<T extends object>(o: T): T {
    this.#owned.add(o);
    return o;
  }

  #chain(verb: Operation['verb'], c: Chain, ts: TableState): void {
    const cs = ts.chains.get(c.name);
    const what = `chain ${c.family} ${c.table} ${c.name}`;
    switch (verb) {
      case 'add':
      case 'create':
        if (!cs) {
          // The kernel gives every base chain a policy, accept unless told.
          const stored = c.base ? { ...c, base: { ...c.base, policy: c.base.policy ?? 'accept' } } : copyChain(c);
          ts.chains.set(c.name, this.#own({ chain: stored, rules: [] }));
          ts.nextHandle++;
          if (c.base) this.needsValidation = true;
          return;
        }
        if (verb === 'create') err('EEXIST', `${what} exists`);
        if (!c.base) return;
        {
          const old = cs.chain.base;
          if (!old || old.type !== c.base.type) err('EEXIST', `${what} exists with another type`);
          if (old!.hook !== c.base.hook || old!.priority !== c.base.priority) err('EOPNOTSUPP', `${what}: hook and priority cannot change`);
          if (c.base.policy !== undefined && c.base.policy !== old!.policy) {
            const m = this.#mutChain(ts, c.name)!;
            m.chain = { ...m.chain, base: { ...old!, policy: c.base.policy } };
          }
        }
        return;
      case 'delete':
      case 'destroy':
        if (!cs) {
          if (verb === 'destroy') return;
          err('ENOENT', `${what} does not exist`);
        }
        if ((ts.chainUse.get(c.name) ?? 0) > 0) err('EBUSY', `${what} is the target of a jump or goto`);
        this.#dropRules(ts, this.#mutChain(ts, c.name)!, () => true);
        ts.chains.delete(c.name);
        return;
      case 'flush':
        if (!cs) err('ENOENT', `${what} does not exist`);
        this.#dropRules(ts, this.#mutChain(ts, c.name)!, () => true);
        return;
      case 'insert':
      case 'replace':
        throw refusedVerb('chain', verb);
      default:
        assertNever(verb);
    }
  }

  #set(verb: Operation['verb'], s: NftSet | NftMap, ts: TableState): void {
    const ss = ts.sets.get(s.name);
    const what = `${s.kind} ${s.family} ${s.table} ${s.name}`;
    switch (verb) {
      case 'add':
      case 'create':
        if (!ss) {
          ts.sets.set(s.name, this.#own({ set: copyContainer(s), elements: new Map() }));
          ts.nextHandle++;
          return;
        }
        if (verb === 'create') err('EEXIST', `${what} exists`);
        if (!sameContainer(ss.set, s)) err('EEXIST', `${what} exists with other types or flags`);
        return;
      case 'delete':
      case 'destroy':
        if (!ss) {
          if (verb === 'destroy') return;
          err('ENOENT', `${what} does not exist`);
        }
        if ((ts.setUse.get(s.name) ?? 0) > 0) err('EBUSY', `${what} is used by a rule`);
        for (const e of ss.elements.values()) countElementReferences(ts, e, -1);
        ts.sets.delete(s.name);
        return;
      case 'flush': {
        if (!ss) err('ENOENT', `${what} does not exist`);
        const m = this.#mutSet(ts, s.name)!;
        for (const e of m.elements.values()) countElementReferences(ts, e, -1);
        m.elements.clear();
        return;
      }
      case 'insert':
      case 'replace':
        throw refusedVerb('set', verb);
      default:
        assertNever(verb);
    }
  }

  /** The kernel looks every device a flowtable operation names up first (when the fake knows the links). */
  #devicesExist(f: Flowtable): void {
    for (const d of f.devices) if (this.#options.devices?.includes(d) === false) err('ENOENT', `device ${d} does not exist`);
  }

  #flowtable(verb: Operation['verb'], f: Flowtable, ts: TableState): void {
    const old = ts.flowtables.get(f.name);
    const what = `flowtable ${f.family} ${f.table} ${f.name}`;
    switch (verb) {
      case 'add':
      case 'create': {
        if (this.#options.flowtables === false) err('ENOENT', 'flowtables are not supported by this kernel');
        this.#devicesExist(f);
        if (!old) {
          ts.flowtables.set(f.name, { ...f, devices: [...f.devices].sort() });
          ts.nextHandle++;
          return;
        }
        if (verb === 'create') err('EEXIST', `${what} exists`);
        if (old.hook !== f.hook || old.priority !== f.priority) err('EOPNOTSUPP', `${what}: hook and priority cannot change`);
        // Adding to an existing flowtable adds devices; it never removes any.
        ts.flowtables.set(f.name, { ...old, devices: [...new Set([...old.devices, ...f.devices])].sort() });
        return;
      }
      case 'delete':
      case 'destroy':
        if (!old) {
          if (verb === 'destroy') return;
          err('ENOENT', `${what} does not exist`);
        }
        if (f.devices.length > 0) {
          // In place: the flowtable, its rule and its other devices stay.
          this.#devicesExist(f);
          for (const d of f.devices) if (!old.devices.includes(d)) err('ENOENT', `device ${d} is not in ${what}`);
          ts.flowtables.set(f.name, { ...old, devices: old.devices.filter((d) => !f.devices.includes(d)) });
          return;
        }
        if ((ts.flowtableUse.get(f.name) ?? 0) > 0) err('EBUSY', `${what} is used by a rule`);
        ts.flowtables.delete(f.name);
        return;
      case 'insert':
      case 'replace':
      case 'flush':
        throw refusedVerb('flowtable', verb);
      default:
        assertNever(verb);
    }
  }

  #rule(verb: Operation['verb'], r: Rule, ts: TableState, index: number): void {
    const what = `chain ${r.family} ${r.table} ${r.chain}`;
    const cs = this.#mutChain(ts, r.chain);
    if (!cs) {
      if (verb === 'destroy') return;
      err('ENOENT', `${what} does not exist`);
    }
    const at = r.handle === undefined ? -1 : cs.rules.findIndex((x) => x.handle === r.handle);
    switch (verb) {
      case 'add':
      case 'insert': {
        const stored = this.#newRule(ts, r, ts.nextHandle++, index);
        if (verb === 'add') cs.rules.push(stored);
        else cs.rules.unshift(stored);
        return;
      }
      case 'replace': {
        if (at < 0) err('ENOENT', `${what} has no rule with handle ${r.handle}`);
        const stored = this.#newRule(ts, r, r.handle!, index);
        this.#dropRules(ts, cs, (x) => x.handle === r.handle);
        cs.rules.splice(at, 0, stored);
        return;
      }
      case 'delete':
      case 'destroy':
        if (at < 0) {
          if (verb === 'destroy') return;
          err('ENOENT', `${what} has no rule with handle ${r.handle}`);
        }
        this.#dropRules(ts, cs, (x) => x.handle === r.handle);
        return;
      case 'create':
      case 'flush':
        throw refusedVerb('rule', verb);
      default:
        assertNever(verb);
    }
  }

  /** Checks a rule's references and counts them; returns the rule as stored. */
  #newRule(ts: TableState, r: Rule, handle: number, index: number): Rule {
    checkRuleReferences(ts, r);
    countRuleReferences(ts, r, +1);
    this.needsValidation = true;
    const stored: Rule = { ...copyRule(r), handle };
    this.origin.set(stored, index);
    return stored;
  }

  #dropRules(ts: TableState, cs: ChainState, which: (r: Rule) => boolean): void {
    const keep: Rule[] = [];
    for (const r of cs.rules) {
      if (which(r)) countRuleReferences(ts, r, -1);
      else keep.push(r);
    }
    cs.rules = keep;
  }

  #element(verb: Operation['verb'], e: Element, ts: TableState, index: number): void {
    const what = `set ${e.family} ${e.table} ${e.set}`;
    const ss = this.#mutSet(ts, e.set);
    if (!ss) {
      if (verb === 'destroy') return;
      err('ENOENT', `${what} does not exist`);
    }
    const k = elementKey(e.key);
    const old = ss.elements.get(k);
    switch (verb) {
      case 'add':
      case 'create': {
        if (old) {
          if (verb === 'create') err('EEXIST', `element ${e.key.join(' . ')} exists in ${what}`);
          if (!sameValue(old.value, e.value)) err('EEXIST', `element ${e.key.join(' . ')} exists in ${what} with another value`);
          return;
        }
        const v = e.value;
        if (isVerdictValue(v) && (v.verdict === 'jump' || v.verdict === 'goto')) {
          checkJumpTarget(ts, v.chain);
          this.needsValidation = true;
        }
        if (ss.set.flags?.includes('interval') && ss.set.keyType.length === 1) checkOverlap(ss, e);
        const stored = copyElement(e);
        this.origin.set(stored, index);
        countElementReferences(ts, stored, +1);
        ss.elements.set(k, stored);
        return;
      }
      case 'delete':
      case 'destroy':
        if (!old) {
          if (verb === 'destroy') return;
          err('ENOENT', `element ${e.key.join(' . ')} does not exist in ${what}`);
        }
        countElementReferences(ts, old, -1);
        ss.elements.delete(k);
        return;
      case 'insert':
      case 'replace':
      case 'flush':
        throw refusedVerb('element', verb);
      default:
        assertNever(verb);
    }
  }
}

function sameContainer(a: NftSet | NftMap, b: NftSet | NftMap): boolean {
  if (a.kind !== b.kind) return false;
  if (a.keyType.join() !== b.keyType.join()) return false;
  if (a.kind === 'map' && b.kind === 'map' && String(a.dataType) !== String(b.dataType)) return false;
  return [...(a.flags ?? [])].sort().join() === [...(b.flags ?? [])].sort().join();
}

function sameValue(a: Element['value'], b: Element['value']): boolean {
  if (Array.isArray(a) || Array.isArray(b)) return Array.isArray(a) && Array.isArray(b) && a.join(' . ') === b.join(' . ');
  if (a === undefined || b === undefined || typeof a === 'string' || typeof b === 'string') return a === b;
  return a.verdict === b.verdict && (a as { chain?: string }).chain === (b as { chain?: string }).chain;
}

/** An interval overlapping one already in the set fails EEXIST (the kernel's ENOTEMPTY, reported as EEXIST). */
function checkOverlap(ss: SetState, e: Element): void {
  const type = ss.set.keyType[0]!;
  const r = prefixRange(type, e.key[0]!);
  for (const other of ss.elements.values()) {
    const o = prefixRange(type, other.key[0]!);
    const startsBeforeOtherEnds = o.endExclusive === null || compareBytes(r.start, o.endExclusive) < 0;
    const otherStartsBeforeEnd = r.endExclusive === null || compareBytes(o.start, r.endExclusive) < 0;
    if (startsBeforeOtherEnds && otherStartsBeforeEnd) err('EEXIST', `interval ${e.key[0]} overlaps ${other.key[0]} in set ${ss.set.name}`);
  }
}

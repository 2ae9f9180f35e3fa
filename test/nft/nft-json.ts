// Test oracle: `nft -j list ruleset` read back into our object model, so a
// test can compare what the kernel holds with what it meant to write.
// nft's listing canonicalises a few things; `asNftLists` applies the same to
// the expected side so the comparison stays exact everywhere else.

import type { Chain, Element, Family, Flowtable, NftMap, NftSet, Rule, Selector, Statement, Verdict } from '../../src/nft/objects.ts';
import type { TableListing } from '../../src/nft/dataplane.ts';
import type { NftJson } from '../helpers/netns.ts';

type J = any;

const hexMark = (v: J): string => (typeof v === 'number' ? `0x${v.toString(16)}` : String(v));
const proto = (v: J): string => (v === 'ipv6-icmp' ? 'icmpv6' : String(v));

function selector(j: J): Selector {
  if (j.payload) {
    const { protocol, field } = j.payload;
    if (protocol === 'ip' || protocol === 'ip6') return { kind: 'payload', field: `${protocol} ${field}` as never };
    // nft prints `th sport` after a `udp dport` match as `udp sport`; the model only has `th sport`.
    if (field === 'sport') return { kind: 'payload', field: 'th sport' };
    return { kind: 'payload', field: `${protocol} ${field}` as never };
  }
  if (j.meta) return { kind: 'meta', key: j.meta.key };
  if (j.ct) {
    if (j.ct.dir) return { kind: 'ct-addr', dir: j.ct.dir, field: j.ct.key };
    return { kind: 'ct', key: j.ct.key };
  }
  if (j.fib) return { kind: 'fib-type', addr: j.fib.flags[0] };
  // nft 1.0.6's JSON prints an offset of 2^31 or more as a negative number; its text listing does not.
  if (j.numgen)
    return j.numgen.offset ? { kind: 'numgen', mod: j.numgen.mod, offset: j.numgen.offset >>> 0 } : { kind: 'numgen', mod: j.numgen.mod };
  throw new Error(`unknown selector ${JSON.stringify(j)}`);
}

function operand(s: Selector, j: J, ifindex: Map<string, string>): string {
  if (j && typeof j === 'object' && j.prefix) return `${j.prefix.addr}/${j.prefix.len}`;
  if (j && typeof j === 'object' && j['|']) return j['|'].join(',');
  if (s.kind === 'meta' && (s.key === 'iif' || s.key === 'oif')) return ifindex.get(j) ?? String(j);
  if ((s.kind === 'meta' || s.kind === 'ct') && s.key === 'mark') return hexMark(j);
  if (s.kind === 'meta' && s.key === 'l4proto') return proto(j);
  if (s.kind === 'payload' && (s.field === 'ip protocol' || s.field === 'ip6 nexthdr')) return proto(j);
  return String(j);
}

function verdict(j: J): Verdict | undefined {
  for (const v of ['accept', 'drop', 'return', 'continue'] as const) if (v in j) return { verdict: v };
  if (j.jump) return { verdict: 'jump', chain: j.jump.target };
  if (j.goto) return { verdict: 'goto', chain: j.goto.target };
  return undefined;
}

function keysOf(j: J): Selector[] {
  return j.concat ? j.concat.map((k: J) => selector(k)) : [selector(j)];
}

function statement(j: J, ifindex: Map<string, string>): Statement {
  const v = verdict(j);
  if (v) return { kind: 'verdict', ...v };
  if (j.match) {
    const { op, left, right } = j.match;
    if (typeof right === 'string' && right.startsWith('@')) {
      return { kind: 'lookup', keys: keysOf(left), set: right.slice(1), ...(op === '!=' ? { negate: true } : {}) };
    }
    const masked = left['&'];
    const sel = selector(masked ? masked[0] : left);
    const st: Statement = { kind: 'match', left: sel, op: op === 'in' ? '==' : op, right: operand(sel, right, ifindex) };
    if (masked) st.mask = operand(sel, masked[1], ifindex);
    return st;
  }
  if (j.vmap) return { kind: 'vmap', keys: keysOf(j.vmap.key), map: j.vmap.data.slice(1) };
  if ('counter' in j) return { kind: 'counter' };
  if ('notrack' in j) return { kind: 'notrack' };
  if (j.dnat?.addr?.map) {
    const m = j.dnat.addr.map;
    return { kind: 'dnat-map', family: j.dnat.family, keys: keysOf(m.key), map: m.data.slice(1) };
  }
  if (j.dnat || j.snat) {
    const n = j.dnat ?? j.snat;
    return { kind: j.dnat ? 'dnat' : 'snat', addr: n.addr, ...(n.port !== undefined ? { port: n.port } : {}) };
  }
  if ('masquerade' in j) return { kind: 'masquerade', ...(j.masquerade?.flags === 'fully-random' ? { fullyRandom: true } : {}) };
  if (j.reject)
    return { kind: 'reject', with: j.reject.type === 'tcp reset' ? 'tcp reset' : (`${j.reject.type} ${j.reject.expr}` as never) };
  if (j.mangle && j.mangle.key.meta?.key === 'mark') {
    const val = j.mangle.value;
    if (typeof val === 'number') return { kind: 'mark-set', value: hexMark(val) };
    if (val['|']) return { kind: 'mark-set', value: hexMark(val['|'][1]), or: true };
    if (val['^']) return { kind: 'mark-xor', value: hexMark(val['^'][1]) };
  }
  if (j.set) {
    const e = j.set.elem;
    const inner = e.elem ? e.elem.val : e;
    return {
      kind: 'set-update',
      op: j.set.op,
      set: j.set.set.slice(1),
      keys: keysOf(inner),
      ...(e.elem?.timeout !== undefined ? { timeout: e.elem.timeout } : {}),
    };
  }
  if (j.flow) return { kind: 'flow-offload', flowtable: j.flow.flowtable.slice(1) };
  throw new Error(`unknown statement ${JSON.stringify(j)}`);
}

function keyPart(type: string, j: J): string {
  if (j && typeof j === 'object' && j.prefix) return `${j.prefix.addr}/${j.prefix.len}`;
  if (type === 'mark') return hexMark(j);
  if (type === 'inet_proto') return proto(j);
  return String(j);
}

function element(c: NftSet | NftMap, j: J): Element {
  let keyJ = c.kind === 'map' ? j[0] : j;
  const valJ = c.kind === 'map' ? j[1] : undefined;
  let timeout: number | undefined;
  let comment: string | undefined;
  if (keyJ && typeof keyJ === 'object' && keyJ.elem) {
    timeout = keyJ.elem.timeout;
    comment = keyJ.elem.comment;
    keyJ = keyJ.elem.val;
  }
  const parts: J[] = keyJ && typeof keyJ === 'object' && keyJ.concat ? keyJ.concat : [keyJ];
  const e: Element = {
    kind: 'element',
    family: c.family,
    table: c.table,
    set: c.name,
    key: parts.map((p, i) => keyPart(c.keyType[i]!, p)),
  };
  if (valJ !== undefined && c.kind === 'map') {
    const dt = c.dataType;
    if (dt === 'verdict') e.value = verdict(valJ)!;
    else if (Array.isArray(dt)) e.value = (valJ.concat as J[]).map((p, i) => keyPart(dt[i]!, p));
    else e.value = keyPart(dt, valJ);
  }
  if (timeout !== undefined) e.timeout = timeout;
  if (comment !== undefined) e.comment = comment;
  return e;
}

/** nft prints concatenated map data as one string (`ipv4_addr . inet_service`). */
function mapData(j: J): NftMap['dataType'] {
  const parts = String(j).split(' . ');
  return parts.length > 1 ? (parts as NftMap['keyType']) : (j as NftMap['dataType']);
}

/** One table of an `nft -j list ruleset` answer as a listing (sorted like FakeKernel.list, rules in chain order). */
export function listingFromNftJson(
  json: NftJson,
  family: Family,
  name: string,
  ifindex = new Map([['lo', '1']]),
): TableListing | undefined {
  let listing: TableListing | undefined;
  const mine = (o: J) => o.family === family && (o.table ?? o.name) === name;
  for (const item of json.nftables) {
    const [kind, o] = Object.entries(item)[0] as [string, J];
    if (kind === 'table' && mine(o)) {
      listing = {
        table: { kind: 'table', family, name, ...(o.comment !== undefined ? { comment: o.comment } : {}) },
        chains: [],
        rules: [],
        sets: [],
        elements: [],
        flowtables: [],
      };
    }
    if (!listing || !mine(o) || kind === 'table') continue;
    if (kind === 'chain') {
      const c: Chain = { kind: 'chain', family, table: name, name: o.name };
      if (o.hook) c.base = { type: o.type, hook: o.hook, priority: o.prio, policy: o.policy };
      if (o.comment !== undefined) c.comment = o.comment;
      listing.chains.push(c);
    } else if (kind === 'set' || kind === 'map') {
      const keyType = Array.isArray(o.type) ? o.type : [o.type];
      const c: NftSet | NftMap =
        kind === 'map'
          ? { kind: 'map', family, table: name, name: o.name, keyType, dataType: mapData(o.map) }
          : { kind: 'set', family, table: name, name: o.name, keyType };
      if (o.flags?.length) c.flags = [...o.flags].sort();
      if (c.kind === 'set' && o.timeout !== undefined) c.timeout = o.timeout;
      if (o.comment !== undefined) c.comment = o.comment;
      listing.sets.push(c);
      for (const e of o.elem ?? []) listing.elements.push(element(c, e));
    } else if (kind === 'flowtable') {
      const f: Flowtable = {
        kind: 'flowtable',
        family,
        table: name,
        name: o.name,
        hook: o.hook,
        priority: o.prio,
        devices: [...(o.dev ?? [])].sort(),
      };
      listing.flowtables.push(f);
    } else if (kind === 'rule') {
      const r: Rule = {
        kind: 'rule',
        family,
        table: name,
        chain: o.chain,
        exprs: o.expr.map((e: J) => statement(e, ifindex)),
        handle: o.handle,
      };
      if (o.comment !== undefined) r.comment = o.comment;
      listing.rules.push(r);
    }
  }
  return listing && sortListing(listing);
}

const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
const elemKey = (e: Element) => `${e.set}\0${e.key.join('\0')}`;

/** Sorts a listing the way FakeKernel.list does: by name; elements by set then key; rules stay in chain order, chains by name. */
export function sortListing(l: TableListing): TableListing {
  const chainOrder = [...l.chains].sort(byName).map((c) => c.name);
  const rules = [...l.rules].sort((a, b) => chainOrder.indexOf(a.chain) - chainOrder.indexOf(b.chain));
  return {
    table: l.table,
    chains: [...l.chains].sort(byName),
    rules,
    sets: [...l.sets].sort(byName),
    elements: [...l.elements].sort((a, b) => (elemKey(a) < elemKey(b) ? -1 : elemKey(a) > elemKey(b) ? 1 : 0)),
    flowtables: [...l.flowtables].sort(byName),
  };
}

/**
 * The expected listing as nft prints it: policy shown on every base chain,
 * no table or chain comments (nft 1.0.6's JSON leaves them out),
 * handles dropped, `dynamic` missing from JSON set flags (nft 1.0.6 omits it),
 * the `meta nfproto` dependency dropped before a family-specific reject.
 */
export function asNftLists(l: TableListing): TableListing {
  const out = sortListing(l);
  const { comment: _c, ...tableRest } = out.table;
  return {
    ...out,
    table: tableRest,
    chains: out.chains.map(({ comment: _cc, ...c }) => (c.base ? { ...c, base: { ...c.base, policy: c.base.policy ?? 'accept' } } : c)),
    rules: out.rules.map((r) => {
      const exprs = r.exprs.filter((st, i) => {
        const next = r.exprs[i + 1];
        return !(
          st.kind === 'match' &&
          st.left.kind === 'meta' &&
          st.left.key === 'nfproto' &&
          next?.kind === 'reject' &&
          next.with !== 'tcp reset'
        );
      });
      const { handle: _h, ...rest } = r;
      return { ...rest, exprs };
    }),
    sets: out.sets.map((c) => {
      const flags = c.flags?.filter((f) => f !== 'dynamic').sort();
      const { flags: _f, ...rest } = c;
      return flags?.length ? { ...rest, flags } : rest;
    }),
  };
}

export function withoutHandles(l: TableListing): TableListing {
  return { ...l, rules: l.rules.map(({ handle: _h, ...r }) => r) };
}

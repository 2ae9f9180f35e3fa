// nftables objects as `nft` syntax: a pure function of the objects, for
// --dry-run, logs, golden tests and loading with `nft -f` in benchmarks.
// Nothing here is parsed back; the netlink encoding is the source of truth and
// this text must mean exactly what that encoding means.

import type {
  Chain,
  DataType,
  Element,
  Flowtable,
  NftMap,
  NftSet,
  Operation,
  Rule,
  Selector,
  Statement,
  Table,
  Verdict,
  TableListing,
} from './objects.ts';
import { assertNever } from '../assert-never.ts';

// Words nft 1.0.6 reads as keywords where a chain name is expected (measured:
// `nft add chain inet t <word>` fails for each); a name spelled like one is
// quoted. nft's keyword list is longer; these are the ones near our domain.
const KEYWORDS = new Set(
  (
    'table chain set map element elements rule flowtable ruleset add create insert replace delete destroy flush list ' +
    'reset rename describe get monitor export import handle index position type typeof hook device devices priority ' +
    'policy accept drop continue return jump goto queue counter quota log limit ip ip6 inet arp bridge netdev ether ' +
    'vlan tcp udp udplite sctp dccp icmp icmpv6 igmp esp ah comp th meta ct fib numgen mark snat dnat masquerade ' +
    'redirect reject notrack flow offload update dynamic constant interval timeout expires flags comment vmap iif oif ' +
    'iifname oifname random define include size auto-merge synproxy secmark tproxy dup fwd socket osf rt exthdr'
  ).split(' '),
);
const IDENT = /^[A-Za-z_.][A-Za-z0-9_./-]*$/;

/** A table, chain, set or flowtable name as nft reads it. */
export function renderName(name: string): string {
  return IDENT.test(name) && !KEYWORDS.has(name) ? name : `"${name}"`;
}

function str(text: string): string {
  return `"${text}"`;
}

function comment(c: string | undefined): string {
  return c === undefined ? '' : ` comment ${str(c)}`;
}

export function renderSelector(s: Selector): string {
  switch (s.kind) {
    case 'payload':
      return s.field;
    case 'meta':
      return `meta ${s.key}`;
    case 'ct':
      return `ct ${s.key}`;
    case 'ct-addr':
      return `ct ${s.dir} ${s.field}`;
    case 'fib-type':
      return `fib ${s.addr} type`;
    case 'numgen':
      return s.offset ? `numgen random mod ${s.mod} offset ${s.offset}` : `numgen random mod ${s.mod}`;
    default:
      assertNever(s);
  }
}

function keys(ks: readonly Selector[]): string {
  return ks.map(renderSelector).join(' . ');
}

/** A value text of a given type in nft syntax (interface names are quoted strings). */
function value(type: DataType | undefined, text: string): string {
  return type === 'ifname' ? str(text) : text;
}

function operand(s: Selector, text: string): string {
  return s.kind === 'meta' && (s.key === 'iifname' || s.key === 'oifname') ? str(text) : text;
}

function renderVerdict(v: Verdict): string {
  return v.verdict === 'jump' || v.verdict === 'goto' ? `${v.verdict} ${renderName(v.chain)}` : v.verdict;
}

function renderStatement(st: Statement, family: Rule['family']): string {
  switch (st.kind) {
    case 'match': {
      const left = renderSelector(st.left);
      const right = operand(st.left, st.right);
      if (st.mask !== undefined) return `${left} & ${st.mask} ${st.op} ${right}`;
      return st.op === '==' ? `${left} ${right}` : `${left} ${st.op} ${right}`;
    }
    case 'lookup':
      return `${keys(st.keys)} ${st.negate ? '!= ' : ''}@${renderName(st.set)}`;
    case 'vmap':
      return `${keys(st.keys)} vmap @${renderName(st.map)}`;
    case 'counter':
      return 'counter';
    case 'verdict':
      return renderVerdict(st);
    case 'dnat':
    case 'snat': {
      const v6 = st.addr.includes(':');
      // Only an inet table needs telling which family the address is of.
      const fam = family === 'inet' ? (v6 ? ' ip6' : ' ip') : '';
      const to = st.port === undefined ? st.addr : v6 ? `[${st.addr}]:${st.port}` : `${st.addr}:${st.port}`;
      return `${st.kind}${fam} to ${to}`;
    }
    case 'dnat-map':
      // nft needs `addr . port` to read a map's concatenated data as both (it lists it back without them).
      return `dnat ${st.family} addr . port to ${keys(st.keys)} map @${renderName(st.map)}`;
    case 'masquerade':
      return st.fullyRandom ? 'masquerade fully-random' : 'masquerade';
    case 'reject':
      return `reject with ${st.with}`;
    case 'mark-set':
      return st.or ? `meta mark set meta mark | ${st.value}` : `meta mark set ${st.value}`;
    case 'mark-xor':
      return `meta mark set meta mark ^ ${st.value}`;
    case 'set-update':
      return `${st.op} @${renderName(st.set)} { ${keys(st.keys)}${st.timeout === undefined ? '' : ` timeout ${st.timeout}s`} }`;
    case 'flow-offload':
      return `flow add @${renderName(st.flowtable)}`;
    case 'notrack':
      return 'notrack';
    default:
      assertNever(st);
  }
}

function renderRuleBody(r: Rule): string {
  let s = '';
  for (const st of r.exprs) s += (s ? ' ' : '') + renderStatement(st, r.family);
  return s + comment(r.comment);
}

function baseSpec(c: Chain): string[] {
  const out: string[] = [];
  if (c.base) {
    out.push(`type ${c.base.type} hook ${c.base.hook} priority ${c.base.priority} ;`);
    if (c.base.policy) out.push(`policy ${c.base.policy} ;`);
  }
  if (c.comment !== undefined) out.push(`comment ${str(c.comment)} ;`);
  return out;
}

// nft will not take `type integer` (it has no size); `typeof` names a 32-bit
// integer by an expression of that type. Each entry yields its type's id.
const TYPEOF: Record<Exclude<DataType, 'verdict'>, string> = {
  integer: 'numgen random mod 1',
  ipv4_addr: 'ip daddr',
  ipv6_addr: 'ip6 daddr',
  inet_proto: 'meta l4proto',
  inet_service: 'th dport',
  mark: 'meta mark',
  ifname: 'meta iifname',
};

function containerSpec(c: NftSet | NftMap): string[] {
  const data = c.kind === 'map' ? (Array.isArray(c.dataType) ? c.dataType : [c.dataType]) : [];
  let out: string[];
  if (c.keyType.includes('integer') || data.includes('integer')) {
    const typeofs = (ts: readonly DataType[]) => ts.map((t) => (t === 'verdict' ? t : TYPEOF[t])).join(' . ');
    out = [c.kind === 'map' ? `typeof ${typeofs(c.keyType)} : ${typeofs(data)} ;` : `typeof ${typeofs(c.keyType)} ;`];
  } else {
    const type = c.keyType.join(' . ');
    out = [c.kind === 'map' ? `type ${type} : ${data.join(' . ')} ;` : `type ${type} ;`];
  }
  if (c.flags?.length) out.push(`flags ${c.flags.join(',')} ;`);
  if (c.kind === 'set' && c.timeout !== undefined) out.push(`timeout ${c.timeout}s ;`);
  if (c.comment !== undefined) out.push(`comment ${str(c.comment)} ;`);
  return out;
}

function flowtableSpec(f: Flowtable): string[] {
  const out = [`hook ${f.hook} priority ${f.priority} ;`];
  if (f.devices.length) out.push(`devices = { ${f.devices.map(str).join(', ')} } ;`);
  return out;
}

/** Key types of the sets and maps seen so far, to print element values of the right type. */
type Types = Map<string, NftSet | NftMap>;

function renderElement(e: Element, c: NftSet | NftMap | undefined, withValue: boolean): string {
  let s = '';
  for (let i = 0; i < e.key.length; i++) s += (i ? ' . ' : '') + value(c?.keyType[i], e.key[i]!);
  if (!withValue) return s;
  if (e.timeout !== undefined) s += ` timeout ${e.timeout}s`;
  if (e.comment !== undefined) s += ` comment ${str(e.comment)}`;
  if (e.value !== undefined) {
    const dt = c?.kind === 'map' ? c.dataType : undefined;
    const v = e.value;
    if (Array.isArray(v)) s += ` : ${v.map((p, k) => value(Array.isArray(dt) ? dt[k] : undefined, p)).join(' . ')}`;
    else s += ` : ${typeof v === 'string' ? value(Array.isArray(dt) ? undefined : dt, v) : renderVerdict(v)}`;
  }
  return s;
}

function braces(spec: string[]): string {
  return spec.length ? ` { ${spec.join(' ')} }` : '';
}

function head(verb: string, kind: string, o: { family: string; table: string }, name: string): string {
  return `${verb} ${kind} ${o.family} ${renderName(o.table)} ${name}`;
}

/**
 * A script `nft -f` applies as one transaction. Consecutive element operations
 * on one set with one verb share a line (`add element ... { a, b, c }`), which
 * is what makes 100k elements cheap to print and to parse. `known` names sets
 * and maps defined elsewhere, so that their elements print with the right
 * quoting (interface names).
 */
export function renderOperations(ops: readonly Operation[], known: ReadonlyArray<NftSet | NftMap> = []): string {
  const lines: string[] = [];
  const types: Types = new Map();
  for (const c of known) types.set(`${c.family} ${c.table} ${c.name}`, c);
  let i = 0;
  while (i < ops.length) {
    const { verb, object: o } = ops[i]!;
    if (o.kind === 'element') {
      const c = types.get(`${o.family} ${o.table} ${o.set}`);
      const withValue = verb === 'add' || verb === 'create';
      const parts: string[] = [];
      let j = i;
      for (; j < ops.length; j++) {
        const op = ops[j]!;
        const e = op.object;
        if (op.verb !== verb || e.kind !== 'element' || e.set !== o.set || e.table !== o.table || e.family !== o.family) break;
        parts.push(renderElement(e, c, withValue));
      }
      lines.push(`${head(verb, 'element', o, renderName(o.set))} { ${parts.join(', ')} }`);
      i = j;
      continue;
    }
    i++;
    lines.push(renderOperation(verb, o, types));
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}

function renderOperation(verb: Operation['verb'], o: Exclude<Operation['object'], Element>, types: Types): string {
  const defining = verb === 'add' || verb === 'create';
  switch (o.kind) {
    case 'table':
      return (
        `${verb} table ${o.family} ` +
        `${renderName(o.name)}${defining && o.comment !== undefined ? ` { comment ${str(o.comment)} ; }` : ''}`
      );
    case 'chain':
      return head(verb, 'chain', o, renderName(o.name)) + (defining ? braces(baseSpec(o)) : '');
    case 'set':
    case 'map':
      if (defining) types.set(`${o.family} ${o.table} ${o.name}`, o);
      return head(verb, o.kind, o, renderName(o.name)) + (defining ? braces(containerSpec(o)) : '');
    case 'flowtable':
      return head(verb, 'flowtable', o, renderName(o.name)) + (defining || o.devices.length > 0 ? braces(flowtableSpec(o)) : '');
    case 'rule': {
      const at = head(verb, 'rule', o, renderName(o.chain));
      if (verb === 'delete' || verb === 'destroy') return `${at} handle ${o.handle}`;
      if (verb === 'replace') return `${at} handle ${o.handle} ${renderRuleBody(o)}`;
      return `${at} ${renderRuleBody(o)}`;
    }
    default:
      assertNever(o);
  }
}

export interface RenderTableTextOptions {
  /** Print each rule's kernel handle as a trailing `# handle N` (nft -a style). */
  handles?: boolean;
}

/**
 * One table as the `table <family> <name> { ... }` block `nft list` prints and
 * `nft -f` reads: flowtables, sets and maps (with their elements), then chains
 * with their rules, each group in listing order.
 */
export function renderTableText(listing: TableListing, opts: RenderTableTextOptions = {}): string {
  const t: Table = listing.table;
  const out: string[] = [`table ${t.family} ${renderName(t.name)} {`];
  if (t.comment !== undefined) out.push(`\tcomment ${str(t.comment)}`);
  const block = (header: string, body: string[]) => {
    if (out.length > 1 + (t.comment !== undefined ? 1 : 0)) out.push('');
    out.push(`\t${header} {`);
    for (const l of body) out.push(`\t\t${l}`);
    out.push('\t}');
  };
  for (const f of listing.flowtables) {
    block(`flowtable ${renderName(f.name)}`, flowtableSpec(f).map(stripSemicolon));
  }
  const elementsBySet = new Map<string, Element[]>();
  for (const e of listing.elements) {
    const list = elementsBySet.get(e.set);
    if (list) list.push(e);
    else elementsBySet.set(e.set, [e]);
  }
  for (const c of listing.sets) {
    const body = containerSpec(c).map(stripSemicolon);
    const els = elementsBySet.get(c.name);
    if (els?.length) {
      const items = els.map((e) => renderElement(e, c, true));
      body.push(`elements = { ${items.join(',\n\t\t\t     ')} }`);
    }
    block(`${c.kind} ${renderName(c.name)}`, body);
  }
  const rulesByChain = new Map<string, Rule[]>();
  for (const r of listing.rules) {
    const list = rulesByChain.get(r.chain);
    if (list) list.push(r);
    else rulesByChain.set(r.chain, [r]);
  }
  for (const c of listing.chains) {
    const body: string[] = [];
    if (c.base) body.push(`type ${c.base.type} hook ${c.base.hook} priority ${c.base.priority}; policy ${c.base.policy ?? 'accept'};`);
    if (c.comment !== undefined) body.push(`comment ${str(c.comment)}`);
    for (const r of rulesByChain.get(c.name) ?? []) {
      body.push(renderRuleBody(r) + (opts.handles && r.handle !== undefined ? ` # handle ${r.handle}` : ''));
    }
    block(`chain ${renderName(c.name)}`, body);
  }
  out.push('}');
  return `${out.join('\n')}\n`;
}

function stripSemicolon(s: string): string {
  return s.endsWith(' ;') ? s.slice(0, -2) : s;
}

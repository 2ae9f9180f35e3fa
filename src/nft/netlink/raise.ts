// Raising: kernel expressions back into rule Statements, for exactly the
// shapes lower.ts produces (see its header). Anything else is refused with
// NftRaiseError rather than guessed at: a rule we cannot read is a rule we
// did not write, and the caller decides what to do with it.

import type { Family, Selector, Statement } from '../objects.ts';
import {
  BYTEORDER_HTON,
  CMP_OP,
  CT_STATE_BIT,
  CT_STATUS_BIT,
  DYNSET_OP,
  LOOKUP_F_INV,
  META_KEY,
  NAT_RANGE_PROTO_RANDOM_FULLY,
  NAT_TYPE,
  NFPROTO,
  REG,
  REJECT_TYPE,
} from './kernel-constants.ts';
import { REGISTER_FIELDS, reg32, type KernelExpr } from './kernel-exprs.ts';
import { rawU32 } from './listing-reader.ts';
import {
  DEPENDENCY_REG,
  isHostOrder,
  keyBytes,
  MAX_DEPENDENCY_INDEX,
  natMapPortRegister,
  networkBytes,
  selectorWidth,
  statementDependencies,
  type Dependency,
} from './lower.ts';
import { selectorType } from '../rule-checks.ts';
import { u32ValueText, valueFromBytes } from '../values.ts';
import type { CmpOp, DataType } from '../objects.ts';

import {
  only,
  bytes,
  eqBytes,
  CMP_BY_OP,
  VERDICT_BY_CODE,
  parseLoad,
  readHost,
  readNet,
  flagNames,
  operandText,
} from './raise-operands.ts';

export class NftRaiseError extends Error {
  readonly code = 'ERR_NFT_RAISE';
  /** Index of the kernel expression where reading stopped. */
  readonly index: number;
  constructor(index: number, reason: string) {
    super(`cannot read kernel expression ${index}: ${reason}`);
    this.name = 'NftRaiseError';
    this.index = index;
  }
}

type Parsed = { st: Statement; n: number } | null;

// Registers in NFT_REG32 numbering (reg32).
const R1 = REG.R32_00;
const R2 = REG.R32_00 + 4;

function normalizeRegisters(e: KernelExpr): KernelExpr {
  let out: KernelExpr | undefined;
  for (const f of REGISTER_FIELDS) {
    const v = e[f];
    if (typeof v === 'number' && reg32(v) !== v) {
      out ??= { ...e };
      out[f] = reg32(v);
    }
  }
  return out ?? e;
}

function parseMatch(x: readonly KernelExpr[], i: number): Parsed {
  const left = parseLoad(x[i]);
  if (!left || x[i]!.dreg !== R1) return null;
  const t = selectorType(left);
  const width = selectorWidth(left);
  let j = i + 1;
  let bw: KernelExpr | undefined;
  let swap = false;
  if (x[j]?.name === 'bitwise') {
    bw = x[j]!;
    if (!only(bw, 'sreg', 'dreg', 'len', 'mask', 'xor', 'op') || (bw.op ?? 0) !== 0) return null;
    if (bw.sreg !== R1 || bw.dreg !== R1 || bw.len !== width || !eqBytes(bytes(bw.xor), new Uint8Array(width))) return null;
    j++;
  }
  if (x[j]?.name === 'byteorder') {
    const b = x[j]!;
    if (!only(b, 'sreg', 'dreg', 'op', 'len', 'size') || b.sreg !== R1 || b.dreg !== R1) return null;
    if (b.op !== BYTEORDER_HTON || b.len !== width || b.size !== width || !isHostOrder(left)) return null;
    swap = true;
    j++;
  }
  const cmp = x[j];
  if (cmp?.name !== 'cmp' || !only(cmp, 'sreg', 'op', 'data') || cmp.sreg !== R1) return null;
  const op = CMP_BY_OP.get(cmp.op as number) as CmpOp | undefined;
  const data = bytes(cmp.data);
  if (!op || !data) return null;
  const n = j + 1 - i;
  const mask = bytes(bw?.mask);
  if (t === 'ct_state' || t === 'ct_status') {
    if (!mask || swap || !eqBytes(data, new Uint8Array(4)) || (op !== '==' && op !== '!=')) return null;
    const names =
      t === 'ct_state'
        ? flagNames(Number(readHost(mask)), CT_STATE_BIT, ['invalid', 'established', 'related', 'new', 'untracked'])
        : flagNames(Number(readHost(mask)), CT_STATUS_BIT, Object.keys(CT_STATUS_BIT));
    if (!names) return null;
    return { st: { kind: 'match', left, op: op === '!=' ? '==' : '!=', right: names }, n };
  }
  if ((t === 'ipv4_addr' || t === 'ipv6_addr') && mask) {
    let len = 0;
    while (len < width * 8 && (mask[len >> 3]! & (0x80 >> (len & 7))) !== 0) len++;
    for (let k = len; k < width * 8; k++) if ((mask[k >> 3]! & (0x80 >> (k & 7))) !== 0) return null;
    if (len === width * 8 || (op !== '==' && op !== '!=')) return null;
    const addr = operandText(left, data);
    return addr ? { st: { kind: 'match', left, op, right: `${addr}/${len}` }, n } : null;
  }
  if (mask && t !== 'mark' && t !== 'integer') return null;
  if (swap && (op === '==' || op === '!=')) return null;
  if (!swap && isHostOrder(left) && op !== '==' && op !== '!=') return null;
  const right = swap ? operandText(left, data, data.length === width ? readNet(data) : undefined) : operandText(left, data);
  if (right === null) return null;
  const st: Statement = { kind: 'match', left, op, right };
  if (mask) {
    const m = operandText(left, mask);
    if (m === null) return null;
    st.mask = m;
  }
  return { st, n };
}

function padTo4(n: number): number {
  return (n + 3) & ~3;
}

/** Key loads in lower's register layout, followed by the expression that uses them. */
function parseKeys(x: readonly KernelExpr[], i: number): { keys: Selector[]; sreg: number; next: number } | null {
  const keys: Selector[] = [];
  let j = i;
  const regs: number[] = [];
  for (; j < x.length; j++) {
    const s = parseLoad(x[j]);
    if (!s) break;
    keys.push(s);
    regs.push(x[j]!.dreg as number);
  }
  if (keys.length === 0) return null;
  if (keys.length === 1) return regs[0] === R1 ? { keys, sreg: R1, next: j } : null;
  let reg: number = REG.R32_00;
  for (let k = 0; k < keys.length; k++) {
    if (regs[k] !== reg) return null;
    reg += padTo4(selectorWidth(keys[k]!)) / 4;
  }
  return { keys, sreg: REG.R32_00, next: j };
}

function parseKeyed(x: readonly KernelExpr[], i: number): Parsed {
  const k = parseKeys(x, i);
  const e = k && x[k.next];
  if (!k || !e || (e.sreg !== k.sreg && e.sreg_key !== k.sreg)) return null;
  const n = k.next + 1 - i;
  if (e.name === 'lookup' && only(e, 'sreg', 'dreg', 'set', 'flags') && typeof e.set === 'string') {
    const flags = (e.flags as number | undefined) ?? 0;
    if (e.dreg === REG.VERDICT) return flags === 0 ? { st: { kind: 'vmap', keys: k.keys, map: e.set }, n } : null;
    if (e.dreg === R1) return flags === 0 ? parseNatMap(x[k.next + 1], k.keys, e.set, n + 1) : null;
    if (e.dreg !== undefined || (flags & ~LOOKUP_F_INV) !== 0) return null;
    const st: Statement = { kind: 'lookup', keys: k.keys, set: e.set };
    if (flags & LOOKUP_F_INV) st.negate = true;
    return { st, n };
  }
  if (e.name === 'dynset' && only(e, 'sreg_key', 'op', 'set', 'timeout', 'flags') && typeof e.set === 'string') {
    if (((e.flags as number | undefined) ?? 0) !== 0) return null;
    const op = e.op === DYNSET_OP.add ? 'add' : e.op === DYNSET_OP.update ? 'update' : undefined;
    if (!op) return null;
    const st: Statement = { kind: 'set-update', op, set: e.set, keys: k.keys };
    const ms = (e.timeout as bigint | undefined) ?? 0n;
    if (ms % 1000n !== 0n) return null;
    if (ms > 0n) st.timeout = Number(ms / 1000n);
    return { st, n };
  }
  return null;
}

/** The nat after a lookup into NFT_REG_1: `dnat <family> addr . port to <keys> map @set`. */
function parseNatMap(nat: KernelExpr | undefined, keys: Selector[], map: string, n: number): Parsed {
  if (nat?.name !== 'nat' || !only(nat, 'type', 'family', 'reg_addr_min', 'reg_addr_max', 'reg_proto_min', 'reg_proto_max', 'flags'))
    return null;
  const family = nat.family === NFPROTO.ipv4 ? 'ip' : nat.family === NFPROTO.ipv6 ? 'ip6' : undefined;
  if (nat.type !== NAT_TYPE.dnat || !family) return null;
  const port = natMapPortRegister(family);
  if (nat.reg_addr_min !== R1 || (nat.reg_addr_max ?? R1) !== R1) return null;
  if (nat.reg_proto_min !== port || (nat.reg_proto_max ?? port) !== port) return null;
  if ((((nat.flags as number | undefined) ?? 0) & ~0x3) !== 0) return null;
  return { st: { kind: 'dnat-map', family, keys, map }, n };
}

function parseNat(x: readonly KernelExpr[], i: number): Parsed {
  const a = x[i];
  if (a?.name !== 'immediate' || a.dreg !== R1 || !only(a, 'dreg', 'data')) return null;
  let j = i + 1;
  let port: number | undefined;
  const p = x[j];
  if (p?.name === 'immediate' && p.dreg === R2 && only(p, 'dreg', 'data')) {
    const b = bytes(p.data);
    if (b?.length !== 2) return null;
    port = (b[0]! << 8) | b[1]!;
    j++;
  }
  const nat = x[j];
  if (nat?.name !== 'nat' || !only(nat, 'type', 'family', 'reg_addr_min', 'reg_addr_max', 'reg_proto_min', 'reg_proto_max', 'flags'))
    return null;
  if (nat.reg_addr_min !== R1 || (nat.reg_addr_max ?? R1) !== R1) return null;
  if (port === undefined ? nat.reg_proto_min !== undefined : nat.reg_proto_min !== R2 || (nat.reg_proto_max ?? R2) !== R2) return null;
  // The kernel reports the range flags it derived from the registers (map IPs, proto specified).
  if ((((nat.flags as number | undefined) ?? 0) & ~0x3) !== 0) return null;
  const kind = nat.type === NAT_TYPE.dnat ? 'dnat' : nat.type === NAT_TYPE.snat ? 'snat' : undefined;
  const v6 = nat.family === NFPROTO.ipv6;
  if (!kind || (!v6 && nat.family !== NFPROTO.ipv4)) return null;
  let addr: string;
  try {
    addr = valueFromBytes(v6 ? 'ipv6_addr' : 'ipv4_addr', bytes(a.data)!);
  } catch {
    return null;
  }
  const st: Extract<Statement, { kind: 'dnat' | 'snat' }> = { kind, addr };
  if (port !== undefined) st.port = port;
  return { st, n: j + 1 - i };
}

function parseMark(x: readonly KernelExpr[], i: number): Parsed {
  const isSet = (e: KernelExpr | undefined) => e?.name === 'meta' && e.key === META_KEY.mark && e.sreg === R1 && only(e, 'key', 'sreg');
  const text = (b: Uint8Array | undefined) => (b && b.length === 4 ? valueFromBytes('mark', networkBytes(readHost(b), 4)) : null);
  const a = x[i];
  if (a?.name === 'immediate' && a.dreg === R1 && only(a, 'dreg', 'data') && isSet(x[i + 1])) {
    const value = text(bytes(a.data));
    return value ? { st: { kind: 'mark-set', value }, n: 2 } : null;
  }
  const bw = x[i + 1];
  if (
    a?.name === 'meta' &&
    a.key === META_KEY.mark &&
    a.dreg === R1 &&
    only(a, 'key', 'dreg') &&
    bw?.name === 'bitwise' &&
    isSet(x[i + 2])
  ) {
    if (!only(bw, 'sreg', 'dreg', 'len', 'mask', 'xor', 'op') || (bw.op ?? 0) !== 0 || bw.len !== 4) return null;
    const mask = bytes(bw.mask);
    const xor = bytes(bw.xor);
    const value = text(xor);
    if (!mask || !xor || !value) return null;
    if (eqBytes(mask, Uint8Array.of(255, 255, 255, 255))) return { st: { kind: 'mark-xor', value }, n: 3 };
    if (
      eqBytes(
        mask,
        xor.map((b) => ~b & 0xff),
      )
    )
      return { st: { kind: 'mark-set', value, or: true }, n: 3 };
  }
  return null;
}

function parseSingle(x: readonly KernelExpr[], i: number): Parsed {
  const e = x[i]!;
  switch (e.name) {
    case 'counter':
      return only(e, 'packets', 'bytes') ? { st: { kind: 'counter' }, n: 1 } : null;
    case 'notrack':
      return only(e) ? { st: { kind: 'notrack' }, n: 1 } : null;
    case 'flow_offload':
      return only(e, 'table') && typeof e.table === 'string' ? { st: { kind: 'flow-offload', flowtable: e.table }, n: 1 } : null;
    case 'masq': {
      if (!only(e, 'flags')) return null;
      const flags = (e.flags as number | undefined) ?? 0;
      if (flags === 0) return { st: { kind: 'masquerade' }, n: 1 };
      return flags === NAT_RANGE_PROTO_RANDOM_FULLY ? { st: { kind: 'masquerade', fullyRandom: true }, n: 1 } : null;
    }
    case 'reject': {
      if (!only(e, 'type', 'code')) return null;
      if (e.type === REJECT_TYPE.tcpRst && e.code === undefined) return { st: { kind: 'reject', with: 'tcp reset' }, n: 1 };
      if (e.type === REJECT_TYPE.icmp && e.code === 3) return { st: { kind: 'reject', with: 'icmp port-unreachable' }, n: 1 };
      if (e.type === REJECT_TYPE.icmp && e.code === 4) return { st: { kind: 'reject', with: 'icmpv6 port-unreachable' }, n: 1 };
      if (e.type === REJECT_TYPE.icmpx && e.code === 1) return { st: { kind: 'reject', with: 'icmpx port-unreachable' }, n: 1 };
      return null;
    }
    case 'immediate': {
      if (e.dreg !== REG.VERDICT || !only(e, 'dreg', 'verdict', 'chain')) return null;
      const verdict = VERDICT_BY_CODE.get((e.verdict as number) | 0);
      if (!verdict) return null;
      if (verdict === 'jump' || verdict === 'goto') {
        return typeof e.chain === 'string' ? { st: { kind: 'verdict', verdict, chain: e.chain }, n: 1 } : null;
      }
      return e.chain === undefined ? { st: { kind: 'verdict', verdict }, n: 1 } : null;
    }
  }
  return null;
}

function parseCore(x: readonly KernelExpr[], i: number): Parsed {
  if (i >= x.length) return null;
  return parseMatch(x, i) ?? parseKeyed(x, i) ?? parseNat(x, i) ?? parseMark(x, i) ?? parseSingle(x, i);
}

function parseDependency(x: readonly KernelExpr[], i: number): Dependency | null {
  const a = x[i];
  const b = x[i + 1];
  if (a?.name !== 'meta' || typeof a.dreg !== 'number' || !only(a, 'key', 'dreg')) return null;
  const index = DEPENDENCY_REG - a.dreg;
  if (index < 0 || index > MAX_DEPENDENCY_INDEX) return null;
  if (b?.name !== 'cmp' || b.sreg !== a.dreg || b.op !== CMP_OP['=='] || !only(b, 'sreg', 'op', 'data')) return null;
  const data = bytes(b.data);
  const key = a.key === META_KEY.l4proto ? 'l4proto' : a.key === META_KEY.nfproto ? 'nfproto' : undefined;
  return key && data?.length === 1 ? { key, value: data[0]!, index } : null;
}

const L4_FIELD: Record<number, 'tcp dport' | 'udp dport' | 'sctp dport'> = { 6: 'tcp dport', 17: 'udp dport', 132: 'sctp dport' };

/**
 * Puts back the protocol-specific port fields that lower() expressed as
 * `th dport` plus an l4proto dependency on that key, then checks that the
 * statement needs exactly the dependencies found.
 */
function withDependencies(st: Statement, deps: Dependency[], family: Family): Statement | null {
  const fix = (s: Selector, index: number): Selector => {
    const d = deps.find((x) => x.index === index && x.key === 'l4proto');
    const field = d && L4_FIELD[d.value];
    return field && s.kind === 'payload' && s.field === 'th dport' ? { kind: 'payload', field } : s;
  };
  let out: Statement = st;
  if (st.kind === 'match') out = { ...st, left: fix(st.left, 0) };
  else if (st.kind === 'lookup' || st.kind === 'vmap' || st.kind === 'set-update' || st.kind === 'dnat-map')
    out = { ...st, keys: st.keys.map(fix) };
  const want = statementDependencies(out, family);
  const same =
    want.length === deps.length && want.every((d, k) => d.key === deps[k]!.key && d.value === deps[k]!.value && d.index === deps[k]!.index);
  return same ? out : null;
}

/** Raises a rule's kernel expressions; throws NftRaiseError for anything lower() would not produce. */
export function raise(input: readonly KernelExpr[], family: Family): Statement[] {
  const exprs = input.map(normalizeRegisters);
  const out: Statement[] = [];
  let i = 0;
  while (i < exprs.length) {
    const deps: Dependency[] = [];
    let j = i;
    for (let d = parseDependency(exprs, j); d; d = parseDependency(exprs, j)) {
      deps.push(d);
      j += 2;
    }
    const core = parseCore(exprs, j);
    if (!core) throw new NftRaiseError(j, `unexpected ${exprs[j]?.name ?? 'end of rule'}`);
    const st = withDependencies(core.st, deps, family);
    if (!st) throw new NftRaiseError(i, 'protocol dependencies do not match the statement');
    out.push(st);
    i = j + core.n;
  }
  return out;
}

/** The key text of set key bytes (marks are host order in sets, see keyBytes). */
export function keyText(type: DataType, b: Uint8Array): string {
  // Read in host order where it is, not reversed into a copy: endpoint maps are keyed by integers, one per endpoint.
  if (type === 'mark' || type === 'integer') return b.length === 4 ? u32ValueText(type, rawU32(b)!) : valueFromBytes(type, b);
  return valueFromBytes(type, b);
}

export { keyBytes };

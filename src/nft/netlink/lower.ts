// Lowering: rule Statements (nft-level) into kernel expressions with registers.
//
// Conventions raise.ts relies on (it inverts exactly these shapes):
// - A scalar load goes to NFT_REG_1; concatenated keys go to consecutive 32-bit
//   registers from NFT_REG32_00, each part padded to 4 bytes.
// - Protocol dependencies (`meta nfproto` for ip/ip6 fields in inet tables,
//   `meta l4proto` for tcp/udp/sctp ports and tcp reset) are emitted right before
//   the statement that needs them, for all its keys at once. The dependency of
//   key k loads into NFT_REG32_(15-k), a register nothing else starts at, so a
//   listed rule tells it apart from an explicit `meta l4proto tcp` (NFT_REG_1)
//   and says which key it belongs to: `tcp dport 80` and `meta l4proto tcp
//   th dport 80` mean the same to the kernel, and this keeps
//   raise(lower(x)) === x for both (and for `th dport . tcp dport` keys).
// - `dnat ... map` looks its key up into NFT_REG_1 (the data is laid out as a
//   concatenated key: address, then the port in the next 32-bit register).
// - Host-endian values (marks, integers) are compared after `byteorder hton`
//   when the comparison orders them; equality compares host bytes directly.

import type { Family, Selector, Statement } from '../objects.ts';
import {
  BYTEORDER_HTON,
  CMP_OP,
  CT_DIR,
  CT_KEY,
  DYNSET_OP,
  FIB_F,
  FIB_RESULT_ADDRTYPE,
  LOOKUP_F_INV,
  META_KEY,
  NAT_RANGE_PROTO_RANDOM_FULLY,
  NAT_TYPE,
  NFPROTO,
  NUMGEN_RANDOM,
  REG,
  REJECT_TYPE,
  VERDICT_CODE,
} from './kernel-constants.ts';
import { ExprSink, F, readExprs, type KernelExpr } from './kernel-exprs.ts';
import { selectorType } from '../rule-checks.ts';
import { prefixRange, writeValueBytes } from '../values.ts';
import type { DataType } from '../objects.ts';
import { ByteWriter } from './wire.ts';
import {
  hostValue,
  hostValue32,
  isHostOrder,
  keyBytes,
  networkBytes,
  NftLowerError,
  operandBytes,
  PAYLOAD_FIELDS,
  selectorWidth,
  writeHost32,
} from './operands.ts';
import { assertNever } from '../../assert-never.ts';
import { writeDependencies } from './lower-dependencies.ts';

// raise.ts and the encoder read these from here too.
export { isHostOrder, keyBytes, networkBytes, NftLowerError, PAYLOAD_FIELDS, selectorWidth };
export { writeKeyBytes } from './operands.ts';
export { DEPENDENCY_REG, MAX_DEPENDENCY_INDEX, statementDependencies, type Dependency } from './lower-dependencies.ts';

function writeLoad(out: ExprSink, s: Selector, dreg: number): void {
  switch (s.kind) {
    case 'payload': {
      const spec = PAYLOAD_FIELDS[s.field];
      if (!spec) throw new NftLowerError(`unknown payload field ${JSON.stringify(s.field)}`);
      const f = F.payload;
      out.begin('payload').u32(f.dreg, dreg).u32(f.base, spec.base).u32(f.offset, spec.offset).u32(f.len, spec.len).end();
      return;
    }
    case 'meta':
      out.begin('meta').u32(F.meta.key, META_KEY[s.key]).u32(F.meta.dreg, dreg).end();
      return;
    case 'ct':
      out.begin('ct').u32(F.ct.dreg, dreg).u32(F.ct.key, CT_KEY[s.key]).end();
      return;
    case 'ct-addr': {
      const v6 = s.field.startsWith('ip6');
      const dst = s.field.endsWith('daddr');
      const key = v6 ? (dst ? CT_KEY.dst_ip6 : CT_KEY.src_ip6) : dst ? CT_KEY.dst_ip : CT_KEY.src_ip;
      out.begin('ct').u32(F.ct.dreg, dreg).u32(F.ct.key, key).u8(F.ct.dir, CT_DIR[s.dir]).end();
      return;
    }
    case 'fib-type':
      out
        .begin('fib')
        .u32(F.fib.dreg, dreg)
        .u32(F.fib.result, FIB_RESULT_ADDRTYPE)
        .u32(F.fib.flags, s.addr === 'daddr' ? FIB_F.daddr : FIB_F.saddr)
        .end();
      return;
    case 'numgen': {
      const f = F.numgen;
      out
        .begin('numgen')
        .u32(f.dreg, dreg)
        .u32(f.modulus, s.mod)
        .u32(f.type, NUMGEN_RANDOM)
        .u32(f.offset, s.offset ?? 0)
        .end();
      return;
    }
    default:
      assertNever(s);
  }
}

function padTo4(n: number): number {
  return (n + 3) & ~3;
}

/** Loads for the keys of a lookup, vmap or set update; returns the source register. */
function writeKeyLoads(out: ExprSink, keys: readonly Selector[]): number {
  if (keys.length === 1) {
    writeLoad(out, keys[0]!, REG.R1);
    return REG.R1;
  }
  let reg: number = REG.R32_00;
  for (const k of keys) {
    writeLoad(out, k, reg);
    reg += padTo4(selectorWidth(k)) / 4;
  }
  if (reg - REG.R32_00 > 16) throw new NftLowerError('a concatenated key is longer than 64 bytes');
  return REG.R32_00;
}

/** Where `dnat ... map` finds the port: after the address, in NFT_REG32 numbering. */
export function natMapPortRegister(family: 'ip' | 'ip6'): number {
  return REG.R32_00 + (family === 'ip6' ? 4 : 1);
}

function writeCmp(out: ExprSink, op: number, data: Uint8Array): void {
  out.begin('cmp').u32(F.cmp.sreg, REG.R1).u32(F.cmp.op, op).bytes(F.cmp.data, data).end();
}

function writeBitwise(out: ExprSink, len: number, mask: Uint8Array, xor: Uint8Array): void {
  const f = F.bitwise;
  out.begin('bitwise').u32(f.sreg, REG.R1).u32(f.dreg, REG.R1).u32(f.len, len).bytes(f.mask, mask).bytes(f.xor, xor).end();
}

const ZEROS_4 = new Uint8Array(4);
const ONES_4 = new Uint8Array([255, 255, 255, 255]);

function writeMatch(out: ExprSink, st: Extract<Statement, { kind: 'match' }>): void {
  const s = st.left;
  const t = selectorType(s);
  const width = selectorWidth(s);
  const op = CMP_OP[st.op];
  if (op === undefined) throw new NftLowerError(`unknown operator ${JSON.stringify(st.op)}`);
  writeLoad(out, s, REG.R1);
  if (t === 'ct_state' || t === 'ct_status') {
    if (st.op !== '==' && st.op !== '!=') throw new NftLowerError(`${t} only compares with == or !=`);
    writeBitwise(out, 4, operandBytes(s, st.right), ZEROS_4);
    writeCmp(out, st.op === '==' ? CMP_OP['!='] : CMP_OP['=='], ZEROS_4);
    return;
  }
  if ((t === 'ipv4_addr' || t === 'ipv6_addr') && st.right.includes('/')) {
    if (st.op !== '==' && st.op !== '!=') throw new NftLowerError('a prefix only compares with == or !=');
    const { start } = prefixRange(t, st.right);
    const len = Number(st.right.slice(st.right.indexOf('/') + 1));
    const mask = new Uint8Array(width);
    for (let i = 0; i < len; i++) mask[i >> 3]! |= 0x80 >> (i & 7);
    writeBitwise(out, width, mask, new Uint8Array(width));
    writeCmp(out, op, start);
    return;
  }
  if (st.mask !== undefined) writeBitwise(out, width, operandBytes(s, st.mask), new Uint8Array(width));
  const ordered = st.op !== '==' && st.op !== '!=';
  if (ordered && isHostOrder(s)) {
    const f = F.byteorder;
    out.begin('byteorder').u32(f.dreg, REG.R1).u32(f.sreg, REG.R1).u32(f.op, BYTEORDER_HTON).u32(f.len, width).u32(f.size, width).end();
    writeCmp(out, op, networkBytes(hostValue(s, st.right), width));
    return;
  }
  if (isHostOrder(s) && width === 4) {
    const at = out.begin('cmp').u32(F.cmp.sreg, REG.R1).u32(F.cmp.op, op).zeros(F.cmp.data, 4);
    writeHost32(out.w.raw, at, hostValue32(s, st.right));
    out.end();
    return;
  }
  // An interface name with nft's wildcard (`"veth*"`) compares only its prefix's bytes.
  if (t === 'nf_proto' || isHostOrder(s) || (t === 'ifname' && st.right.endsWith('*'))) {
    writeCmp(out, op, operandBytes(s, st.right));
    return;
  }
  // Network-order operands (addresses, ports, protocols...) go straight from text to the buffer.
  const at = out.begin('cmp').u32(F.cmp.sreg, REG.R1).u32(F.cmp.op, op).zeros(F.cmp.data, width);
  writeValueBytes(out.w.raw, at, t as DataType, st.right);
  out.end();
}

function writeVerdict(out: ExprSink, v: { verdict: string; chain?: string }): void {
  const code = VERDICT_CODE[v.verdict as keyof typeof VERDICT_CODE];
  if (code === undefined) throw new NftLowerError(`unknown verdict ${JSON.stringify(v.verdict)}`);
  out.begin('immediate').u32(F.immediate.dreg, REG.VERDICT).u32(F.immediate.verdict, code);
  if (v.verdict === 'jump' || v.verdict === 'goto') out.str(F.immediate.chain, v.chain!);
  out.end();
}

function writeImmediateData(out: ExprSink, dreg: number, type: DataType, text: string, width: number): void {
  const at = out.begin('immediate').u32(F.immediate.dreg, dreg).zeros(F.immediate.data, width);
  writeValueBytes(out.w.raw, at, type, text);
  out.end();
}

/** dnat/snat: the address (and port) into registers, then the nat expression. */
function writeNat(out: ExprSink, st: Extract<Statement, { kind: 'dnat' | 'snat' }>): void {
  const v6 = st.addr.includes(':');
  writeImmediateData(out, REG.R1, v6 ? 'ipv6_addr' : 'ipv4_addr', st.addr, v6 ? 16 : 4);
  if (st.port !== undefined) {
    const at = out.begin('immediate').u32(F.immediate.dreg, REG.R2).zeros(F.immediate.data, 2);
    out.w.raw[at] = st.port >> 8;
    out.w.raw[at + 1] = st.port & 0xff;
    out.end();
  }
  const f = F.nat;
  out
    .begin('nat')
    .u32(f.type, NAT_TYPE[st.kind])
    .u32(f.family, v6 ? NFPROTO.ipv6 : NFPROTO.ipv4)
    .u32(f.reg_addr_min, REG.R1);
  if (st.port !== undefined) out.u32(f.reg_proto_min, REG.R2);
  out.end();
}

/** dnat through a map: the lookup fills the registers that nat reads. */
function writeDnatMap(out: ExprSink, st: Extract<Statement, { kind: 'dnat-map' }>): void {
  // The map's data lands in registers as a concatenated key would: the
  // address from NFT_REG_1 on, the port in the next 32-bit register.
  const sreg = writeKeyLoads(out, st.keys);
  out.begin('lookup').u32(F.lookup.sreg, sreg).u32(F.lookup.dreg, REG.R1).str(F.lookup.set, st.map).end();
  const f = F.nat;
  const v6 = st.family === 'ip6';
  out
    .begin('nat')
    .u32(f.type, NAT_TYPE.dnat)
    .u32(f.family, v6 ? NFPROTO.ipv6 : NFPROTO.ipv4)
    .u32(f.reg_addr_min, REG.R1)
    .u32(f.reg_proto_min, natMapPortRegister(st.family))
    .end();
}

/** meta mark set (or `mark | value`): read-modify-write through a register. */
function writeMarkSet(out: ExprSink, st: Extract<Statement, { kind: 'mark-set' }>): void {
  const v = keyBytes('mark', st.value);
  if (!st.or) {
    out.begin('immediate').u32(F.immediate.dreg, REG.R1).bytes(F.immediate.data, v).end();
    out.begin('meta').u32(F.meta.key, META_KEY.mark).u32(F.meta.sreg, REG.R1).end();
    return;
  }
  out.begin('meta').u32(F.meta.key, META_KEY.mark).u32(F.meta.dreg, REG.R1).end();
  writeBitwise(
    out,
    4,
    v.map((b) => ~b & 0xff),
    v,
  );
  out.begin('meta').u32(F.meta.key, META_KEY.mark).u32(F.meta.sreg, REG.R1).end();
}

function writeCore(out: ExprSink, st: Statement): void {
  switch (st.kind) {
    case 'match':
      writeMatch(out, st);
      return;
    case 'lookup': {
      const sreg = writeKeyLoads(out, st.keys);
      out.begin('lookup').u32(F.lookup.sreg, sreg).str(F.lookup.set, st.set);
      if (st.negate) out.u32(F.lookup.flags, LOOKUP_F_INV);
      out.end();
      return;
    }
    case 'vmap': {
      const sreg = writeKeyLoads(out, st.keys);
      out.begin('lookup').u32(F.lookup.sreg, sreg).u32(F.lookup.dreg, REG.VERDICT).str(F.lookup.set, st.map).end();
      return;
    }
    case 'set-update': {
      const sreg = writeKeyLoads(out, st.keys);
      const f = F.dynset;
      out.begin('dynset').u32(f.sreg_key, sreg).u32(f.op, DYNSET_OP[st.op]);
      if (st.timeout !== undefined) out.u64(f.timeout, BigInt(st.timeout) * 1000n);
      out.str(f.set, st.set).end();
      return;
    }
    case 'counter':
      out.begin('counter').end();
      return;
    case 'verdict':
      writeVerdict(out, st);
      return;
    case 'dnat':
    case 'snat':
      writeNat(out, st);
      return;
    case 'dnat-map':
      writeDnatMap(out, st);
      return;
    case 'masquerade':
      out.begin('masq');
      if (st.fullyRandom) out.u32(F.masq.flags, NAT_RANGE_PROTO_RANDOM_FULLY);
      out.end();
      return;
    case 'reject':
      switch (st.with) {
        case 'tcp reset':
          out.begin('reject').u32(F.reject.type, REJECT_TYPE.tcpRst).end();
          return;
        case 'icmp port-unreachable':
          out.begin('reject').u32(F.reject.type, REJECT_TYPE.icmp).u8(F.reject.code, 3).end();
          return;
        case 'icmpv6 port-unreachable':
          out.begin('reject').u32(F.reject.type, REJECT_TYPE.icmp).u8(F.reject.code, 4).end();
          return;
        case 'icmpx port-unreachable':
          out.begin('reject').u32(F.reject.type, REJECT_TYPE.icmpx).u8(F.reject.code, 1).end();
          return;
        default:
          assertNever(st.with);
      }
      throw new NftLowerError(`unknown reject type ${JSON.stringify((st as { with: unknown }).with)}`);
    case 'mark-set':
      writeMarkSet(out, st);
      return;
    case 'mark-xor':
      out.begin('meta').u32(F.meta.key, META_KEY.mark).u32(F.meta.dreg, REG.R1).end();
      writeBitwise(out, 4, ONES_4, keyBytes('mark', st.value));
      out.begin('meta').u32(F.meta.key, META_KEY.mark).u32(F.meta.sreg, REG.R1).end();
      return;
    case 'flow-offload':
      out.begin('flow_offload').str(F.flow_offload.table, st.flowtable).end();
      return;
    case 'notrack':
      out.begin('notrack').end();
      return;
    default:
      assertNever(st);
  }
  throw new NftLowerError(`unknown statement kind ${JSON.stringify((st as { kind: unknown }).kind)}`);
}

/** Writes one statement's kernel expressions, its protocol dependencies first. */
function lowerStatementInto(out: ExprSink, st: Statement, family: Family): void {
  writeDependencies(out, st, family);
  writeCore(out, st);
}

/** Writes a rule's kernel expressions into the batch encoding (the encoder's path). */
export function lowerInto(out: ExprSink, statements: readonly Statement[], family: Family): void {
  for (let i = 0; i < statements.length; i++) lowerStatementInto(out, statements[i]!, family);
}

/** A rule's kernel expressions as objects: lowerInto's bytes read back, so both can never differ. */
export function lower(statements: readonly Statement[], family: Family): KernelExpr[] {
  const out = new ExprSink(new ByteWriter(256));
  lowerInto(out, statements, family);
  return readExprs(out.w.finish(), out.count);
}

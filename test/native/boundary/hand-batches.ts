// Batches written by hand, byte for byte, for what the encoder never writes:
// attributes of the wrong type or length, unknown ids, repeated or clashing
// attributes, expressions libnftnl has no setter for.

import { KIND, MSG, NLM_F } from '../../../src/nft/netlink/kernel-constants.ts';
import { ByteWriter, type Attr } from '../../../src/nft/netlink/wire.ts';

export interface HandExpr {
  name: string;
  attrs: Attr[];
}

export interface HandRecord {
  kind: number;
  msg: number;
  index: number;
  attrs: Attr[];
  /** nlmsg flags; NLM_F_CREATE when absent. */
  flags?: number;
  /** Rule records. */
  exprs?: HandExpr[];
  /** Elements records: each element's op index and attributes. */
  elements?: Array<{ index: number; attrs: Attr[] }>;
}

const FAMILY_IP = 2;

export function handBatch(records: readonly HandRecord[]): Uint8Array {
  const w = new ByteWriter(256);
  w.u32(0x42504e4b);
  w.u32(1);
  w.u32(records.length);
  for (const r of records) {
    w.u8(r.kind);
    w.u8(r.msg);
    w.u16(r.flags ?? NLM_F.CREATE);
    w.u8(FAMILY_IP);
    w.u32(r.index);
    w.attrs(r.attrs);
    if (r.kind === KIND.rule) {
      w.u16(r.exprs?.length ?? 0);
      for (const e of r.exprs ?? []) {
        w.u8(e.name.length);
        w.bytes(Buffer.from(e.name, 'latin1'));
        w.attrs(e.attrs);
      }
    }
    if (r.kind === KIND.elements) {
      w.u32(r.elements?.length ?? 0);
      for (const e of r.elements ?? []) {
        w.u32(e.index);
        w.attrs(e.attrs);
      }
    }
  }
  return w.finish().slice();
}

const str = (id: number, value: string): Attr => ({ id, type: 'str', value });

/** A rule record in table t, chain c, with these expressions. */
export function ruleRecord(index: number, exprs: HandExpr[]): HandRecord {
  return { kind: KIND.rule, msg: MSG.NEWRULE, index, attrs: [str(1, 't'), str(2, 'c')], exprs };
}

/** An elements record for set s of table t. */
export function elementsRecord(index: number, elements: Array<{ index: number; attrs: Attr[] }>): HandRecord {
  return { kind: KIND.elements, msg: MSG.NEWSETELEM, index, attrs: [str(0, 't'), str(1, 's')], elements };
}

// The native boundary against bytes the encoder never writes. Each case once
// ended the process inside libnftnl 1.2.4 (an assert: exit 134; a null or
// forged pointer: SIGSEGV) or read past the batch: now each is a thrown
// error naming the operation, in a child process that must survive. Builder
// refusals come back as per-operation failures, all of them at once.

import { describe, expect, it } from 'vitest';
import { CHAIN_ATTR, ELEM_ATTR, KIND, MSG, SET_ATTR, TABLE_ATTR } from '../../../src/nft/netlink/kernel-constants.ts';
import { encodeOperations } from '../../../src/nft/netlink/encode.ts';
import { EXPR_SCHEMA } from '../../../src/nft/netlink/kernel-exprs.ts';
import type { Attr } from '../../../src/nft/netlink/wire.ts';
import type { Operation, Statement } from '../../../src/nft/objects.ts';
import { kernel, nftList } from '../kernel-helpers.ts';
import { elementsRecord, handBatch, ruleRecord, type HandRecord } from './hand-batches.ts';
import { deathOf, runBatches, type Outcome } from './run-batches.ts';

const str = (id: number, value: string) => ({ id, type: 'str', value }) as const;
const u32 = (id: number, value: number) => ({ id, type: 'u32', value }) as const;
const bytes = (id: number, value: number[]) => ({ id, type: 'bytes', value: Uint8Array.from(value) }) as const;
const JUMP = -3 >>> 0;

/** One batch through a child that checks and commits it into a fresh namespace; its outcome. */
function outcome(batch: Uint8Array): Outcome & { commit?: Outcome } {
  const { ns } = kernel();
  const run = runBatches([batch], ns.path, 1, 60_000);
  const death = deathOf(run, 1);
  if (death) throw new Error(death);
  return { ...run.lines[0]!.check, ...(run.lines[0]!.commit ? { commit: run.lines[0]!.commit } : {}) };
}

function refused(batch: Uint8Array, index: number, message: RegExp): void {
  const o = outcome(batch);
  expect(o).toMatchObject({ ok: false, code: 'ERR_NFT_BATCH_INVALID', index });
  if (!o.ok) expect(o.message).toMatch(message);
}

const table: HandRecord = { kind: KIND.table, msg: MSG.NEWTABLE, index: 0, attrs: [str(TABLE_ATTR.NAME, 't')] };

describe('attributes libnftnl would assert on (exit 134)', () => {
  it('a table FLAGS attribute of 1 byte', () => {
    refused(
      handBatch([{ ...table, index: 7, attrs: [str(TABLE_ATTR.NAME, 't'), { id: TABLE_ATTR.FLAGS, type: 'u8', value: 1 }] }]),
      7,
      /operation 7: attribute 2 of a table is u8 where libnftnl takes u32/,
    );
  });

  it('a chain HOOKNUM of 2 bytes', () => {
    const chain: HandRecord = {
      kind: KIND.chain,
      msg: MSG.NEWCHAIN,
      index: 3,
      attrs: [str(CHAIN_ATTR.TABLE, 't'), str(CHAIN_ATTR.NAME, 'c'), { id: CHAIN_ATTR.HOOKNUM, type: 'u16', value: 1 }],
    };
    refused(handBatch([table, chain]), 3, /operation 3: attribute 3 of a chain is u16 where libnftnl takes u32/);
  });

  it('a 0-byte element FLAGS, named by the element', () => {
    const batch = handBatch([
      table,
      elementsRecord(1, [
        { index: 5, attrs: [bytes(ELEM_ATTR.KEY, [10, 0, 0, 1])] },
        { index: 9, attrs: [bytes(ELEM_ATTR.FLAGS, [])] },
      ]),
    ]);
    refused(batch, 9, /operation 9: attribute 0 of an element is bytes where libnftnl takes u32/);
  });

  it('an attribute id past what libnftnl knows, and one that carries a pointer', () => {
    refused(
      handBatch([{ ...table, attrs: [str(TABLE_ATTR.NAME, 't'), u32(200, 1)] }]),
      0,
      /attribute 200 is not one libnftnl takes for a table/,
    );
    refused(
      handBatch([ruleRecord(4, [{ name: 'dynset', attrs: [u32(7, 1)] }])]),
      4,
      /attribute 7 is not one libnftnl takes for expression dynset/,
    );
  });
});

describe('attributes libnftnl would follow into the weeds (SIGSEGV, reads past the batch)', () => {
  it('notrack with any attribute (libnftnl has no setter and calls a null one)', () => {
    refused(
      handBatch([ruleRecord(2, [{ name: 'notrack', attrs: [u32(1, 1)] }])]),
      2,
      /attribute 1 is not one libnftnl takes for expression notrack/,
    );
  });

  it('immediate data next to a jump verdict (libnftnl frees a chain pointer the data forged)', () => {
    const forged = [0xfd, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0, 0];
    const batch = handBatch([ruleRecord(2, [{ name: 'immediate', attrs: [u32(3, JUMP), str(4, 'x'), bytes(2, forged)] }])]);
    refused(batch, 2, /attribute 2 of expression immediate cannot appear together/);
  });

  it('element data next to a chain name (the same union)', () => {
    const batch = handBatch([
      elementsRecord(1, [
        {
          index: 6,
          attrs: [
            bytes(ELEM_ATTR.KEY, [10, 0, 0, 1]),
            u32(ELEM_ATTR.VERDICT, JUMP),
            str(ELEM_ATTR.CHAIN, 'c'),
            bytes(ELEM_ATTR.DATA, new Array(16).fill(0x41)),
          ],
        },
      ]),
    ]);
    refused(batch, 6, /cannot appear together/);
  });

  it('a u32 field given as 1 byte at the very end of the batch (libnftnl copies 4)', () => {
    refused(
      handBatch([ruleRecord(2, [{ name: 'payload', attrs: [bytes(1, [1])] }])]),
      2,
      /attribute 1 of expression payload is bytes where libnftnl takes u32/,
    );
  });

  it('a set key description of 16 fields (libnftnl scans one past its array) and a 65-byte key', () => {
    const set: HandRecord = {
      kind: KIND.set,
      msg: MSG.NEWSET,
      index: 1,
      attrs: [str(SET_ATTR.TABLE, 't'), str(SET_ATTR.NAME, 's'), bytes(SET_ATTR.DESC_CONCAT, new Array(16).fill(4))],
    };
    refused(handBatch([table, set]), 1, /attribute 16 of a set of 16 bytes is too large \(at most 15\)/);
    refused(handBatch([elementsRecord(1, [{ index: 3, attrs: [bytes(ELEM_ATTR.KEY, new Array(65).fill(1))] }])]), 3, /at most 64/);
  });

  it('an attribute given twice (libnftnl leaks or overwrites the first)', () => {
    refused(
      handBatch([ruleRecord(2, [{ name: 'lookup', attrs: [str(3, 'a'), str(3, 'b')] }])]),
      2,
      /attribute 3 of expression lookup is repeated/,
    );
  });

  it('message flags that would change the answers (NLM_F_ACK, NLM_F_ECHO: one more per message)', () => {
    refused(handBatch([{ ...table, index: 5, flags: 0x400 | 0x4 }]), 5, /operation 5: message flags 1028 outside 3840/);
    refused(handBatch([{ ...table, flags: 0x8 }]), 0, /message flags 8 outside/);
  });

  it('an expression the encoder never emits', () => {
    refused(handBatch([ruleRecord(2, [{ name: 'log', attrs: [] }])]), 2, /unknown expression 'log'/);
  });
});

describe('what passes', () => {
  it('every field of every expression the encoder can write, alone, with a value of its schema type', () => {
    const value = (type: Attr['type']): Attr['value'] =>
      type === 'u64' ? 1n : type === 'str' ? 'x' : type === 'bytes' ? Uint8Array.of(10, 0, 0, 1) : type === 'strArray' ? ['x'] : 1;
    const cases = Object.entries(EXPR_SCHEMA).flatMap(([name, fields]) =>
      Object.entries(fields).map(([field, [id, type]]) => ({
        what: `${name}.${field}`,
        batch: handBatch([ruleRecord(1, [{ name, attrs: [{ id, type, value: value(type) }] }])]),
      })),
    );
    const { ns } = kernel();
    const run = runBatches(
      cases.map((c) => c.batch),
      ns.path,
      0,
    );
    expect(deathOf(run, cases.length)).toBeUndefined();
    const refusedFields = cases.flatMap((c, i) => (run.lines[i]!.check.ok ? [] : [`${c.what}: ${JSON.stringify(run.lines[i]!.check)}`]));
    expect(refusedFields).toEqual([]);
    expect(cases.length).toBeGreaterThan(50);
  });

  it('a batch from the encoder is checked, built and committed', () => {
    const ops: Operation[] = [
      { verb: 'add', object: { kind: 'table', family: 'ip', name: 't' } },
      { verb: 'add', object: { kind: 'chain', family: 'ip', table: 't', name: 'c' } },
      {
        verb: 'add',
        object: {
          kind: 'rule',
          family: 'ip',
          table: 't',
          chain: 'c',
          exprs: [{ kind: 'notrack' }, { kind: 'counter' }, { kind: 'verdict', verdict: 'accept' }],
        },
      },
    ];
    const o = outcome(encodeOperations(ops).bytes);
    expect(o).toEqual({ ok: true, failures: [], commit: { ok: true, failures: [] } });
  });
});

describe('builder refusals', () => {
  it('are per-operation failures with the index, every one of them, and nothing is sent', async () => {
    const { ns, dp } = kernel();
    const counters: Statement[] = Array.from({ length: 4000 }, () => ({ kind: 'counter' }));
    const rule = { kind: 'rule', family: 'ip', table: 't', chain: 'c', exprs: counters } as const;
    const ops: Operation[] = [
      { verb: 'add', object: { kind: 'table', family: 'ip', name: 't' } },
      { verb: 'add', object: { kind: 'chain', family: 'ip', table: 't', name: 'c' } },
      { verb: 'add', object: rule },
      { verb: 'add', object: { ...rule, exprs: [{ kind: 'counter' }] } },
      { verb: 'add', object: rule },
    ];
    const err = await dp.commit(dp.begin().queueAll(ops)).then(
      () => undefined,
      (e: unknown) => e as { failures: Array<{ index: number; errno: number; code: string; message: string }> },
    );
    expect(err?.failures).toEqual([
      { index: 2, errno: 90, code: 'EMSGSIZE', message: "operation 2: the rule's expressions exceed 64 KiB" },
      { index: 4, errno: 90, code: 'EMSGSIZE', message: "operation 4: the rule's expressions exceed 64 KiB" },
    ]);
    expect(nftList(ns, 'table')).toEqual([]);
    // The same socket serves the next commit: nothing of the refused batch is left on it.
    await dp.commit(dp.begin().queueAll(ops.filter((_, i) => i !== 2 && i !== 4)));
    expect(nftList(ns, 'rule')).toHaveLength(1);
  });
});

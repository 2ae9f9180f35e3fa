// The fake kernel is only worth its tests if it behaves like the kernel: replay
// every scenario against the real kernel (rendered to text, loaded with
// `nft -f` in a network namespace; the CLI is a test oracle only) and check
// the same outcome, the same blamed operation and the same resulting state.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NftCommitError } from '../../src/nft/dataplane.ts';
import { FakeKernel } from '../../src/nft/fake/fake-kernel.ts';
import type { NftMap, NftSet, Operation } from '../../src/nft/objects.ts';
import { renderOperations } from '../../src/nft/render-text.ts';
import { NftInvalidError } from '../../src/nft/transaction.ts';
import { createNetns, type NetNs } from '../helpers/netns.ts';
import { F, T } from './fixtures.ts';
import { scenarios, type HandleOf, type Scenario } from './fake-kernel-scenarios.ts';
import { asNftLists, listingFromNftJson, withoutHandles } from './nft-json.ts';

const CODES: Array<[RegExp, string]> = [
  [/No such file or directory/, 'ENOENT'],
  [/File exists/, 'EEXIST'],
  [/Device or resource busy/, 'EBUSY'],
  [/Operation not supported/, 'EOPNOTSUPP'],
  [/Too many links/, 'EMLINK'],
  [/Invalid argument/, 'EINVAL'],
  // nft checks interval overlaps itself before the kernel sees them.
  [/interval overlaps with an existing one/, 'EEXIST'],
];

interface Outcome {
  code: string;
  index?: number;
}

let ns: NetNs;
beforeAll(() => {
  ns = createNetns('knp-fake');
});
afterAll(() => ns?.destroy());

function containersOf(ops: readonly Operation[]): Array<NftSet | NftMap> {
  return ops.map((o) => o.object).filter((o): o is NftSet | NftMap => o.kind === 'set' || o.kind === 'map');
}

/** One operation per line, so the line nft blames is the operation's index + 1. */
function kernelCommit(ops: readonly Operation[], known: Array<NftSet | NftMap>): Outcome {
  const script = ops.map((op) => renderOperations([op], known)).join('');
  const r = ns.tryExec('nft', ['-f', '-'], { input: script });
  if (r.status === 0) return { code: 'ok' };
  const m = /:(\d+):[\d-]+: Error: (.*)/.exec(r.stderr);
  const code = CODES.find(([re]) => re.test(r.stderr))?.[1] ?? `unknown: ${r.stderr}`;
  return m ? { code, index: Number(m[1]) - 1 } : { code };
}

function fakeCommit(fake: FakeKernel, ops: readonly Operation[]): Outcome {
  try {
    fake.commitSync(ops);
    return { code: 'ok' };
  } catch (e) {
    if (e instanceof NftInvalidError) return { code: 'invalid', index: e.index };
    if (!(e instanceof NftCommitError)) throw e;
    return { code: e.failures[0]!.code, index: e.failures[0]!.index };
  }
}

const kernelListing = () => {
  const l = listingFromNftJson(ns.nftJson(), F, T);
  return l && withoutHandles(l);
};

describe('FakeKernel against the kernel (oracle)', () => {
  const cases = scenarios.filter((s) => s.oracle !== false);
  it('covers the scenarios nft can express', () => {
    expect(cases.length).toBeGreaterThan(50);
  });

  it.each(cases.map((s) => [s.name, s] as const))('%s', (_n, s: Scenario) => {
    ns.exec('nft', ['flush', 'ruleset']);
    const fake = new FakeKernel({ flowtables: s.flowtables ?? false });
    const known = containersOf([...s.setup, ...s.tx(() => 1)]);
    expect(kernelCommit(s.setup, known)).toEqual({ code: 'ok' });
    fake.commitSync(s.setup);

    const kernelHandles = listingFromNftJson(ns.nftJson(), F, T);
    const hk: HandleOf = (c, i) => kernelHandles!.rules.filter((r) => r.chain === c)[i]!.handle!;
    const hf: HandleOf = (c, i) => fake.listSync(F, T)!.rules.filter((r) => r.chain === c)[i]!.handle!;

    const kernel = kernelCommit(s.tx(hk), known);
    const model = fakeCommit(fake, s.tx(hf));
    // An invalid transaction is refused before sending; nft sends it and the kernel refuses it.
    expect(kernel.code).toBe(s.kernelCode ?? s.expect);
    expect(model.code).toBe(s.expect);
    if (s.index !== undefined) {
      expect(kernel.index).toBe(s.index);
      expect(model.index).toBe(s.index);
    }
    const f = fake.listSync(F, T);
    expect(kernelListing()).toEqual(f && asNftLists(f));
  });
});

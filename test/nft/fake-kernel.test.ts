import { describe, expect, it } from 'vitest';
import { NftCommitError } from '../../src/nft/dataplane.ts';
import { FakeKernel } from '../../src/nft/fake/fake-kernel.ts';
import { NftInvalidError } from '../../src/nft/transaction.ts';
import type { Operation } from '../../src/nft/objects.ts';
import { chain, el, F, flowtable, representativeObjects, rule, T, table } from './fixtures.ts';
import { add, del, flush, ips, scenarios, vm, world, type HandleOf, type Scenario } from './fake-kernel-scenarios.ts';

function run(s: Scenario): { fake: FakeKernel; error?: NftCommitError | NftInvalidError } {
  const fake = new FakeKernel({ flowtables: s.flowtables ?? true });
  fake.commitSync(s.setup);
  const h: HandleOf = (c, i) => fake.listSync(F, T)!.rules.filter((r) => r.chain === c)[i]!.handle!;
  try {
    fake.commitSync(s.tx(h));
    return { fake };
  } catch (e) {
    if (!(e instanceof NftCommitError) && !(e instanceof NftInvalidError)) throw e;
    return { fake, error: e };
  }
}

describe('FakeKernel: scenarios', () => {
  it.each(scenarios.map((s) => [s.name, s] as const))('%s', (_n, s) => {
    const before = (() => {
      const f = new FakeKernel();
      f.commitSync(s.setup);
      return f.listSync(F, T);
    })();
    const { fake, error } = run(s);
    if (s.expect === 'ok') {
      expect(error).toBeUndefined();
      expect(fake.commits).toBe(2);
    } else if (s.expect === 'invalid') {
      expect(error).toBeInstanceOf(NftInvalidError);
      if (s.index !== undefined) expect((error as NftInvalidError).index).toBe(s.index);
    } else {
      expect(error).toBeInstanceOf(NftCommitError);
      expect((error as NftCommitError).failures[0]?.code).toBe(s.expect);
      if (s.index !== undefined) expect((error as NftCommitError).failures[0]?.index).toBe(s.index);
      // All or nothing.
      expect(fake.listSync(F, T)).toEqual(before);
      expect(fake.commits).toBe(1);
    }
  });
});

const byName = (s: Scenario['name']) => scenarios.find((x) => x.name === s)!;

describe('FakeKernel: resulting state', () => {
  it('flush table removes rules only', () => {
    const l = run(byName('flush table removes rules, keeps chains, sets and elements')).fake.listSync(F, T)!;
    expect(l.rules).toEqual([]);
    expect(l.chains.length).toBe(6);
    expect(l.elements.length).toBe(5);
  });

  it('insert prepends, add appends, replace keeps the handle and position', () => {
    const fake = run(byName('insert prepends, add appends, replace keeps the handle')).fake;
    const c = fake.listSync(F, T)!.rules.filter((r) => r.chain === 'c');
    expect(c.map((r) => (r.exprs[0]!.kind === 'verdict' ? (r.exprs[0] as { verdict: string }).verdict : r.exprs[0]!.kind))).toEqual([
      'notrack',
      'counter',
      'return',
      'drop',
    ]);
    const handles = c.map((r) => r.handle!);
    // Handles only grow; the replaced rule kept its own.
    expect(handles[2]).toBeLessThan(handles[0]!);
    expect(handles[3]).toBeGreaterThan(handles[0]!);
  });

  it('a policy change on add is applied', () => {
    const l = run(byName('add a base chain again with another policy updates it')).fake.listSync(F, T)!;
    expect(l.chains.find((c) => c.name === 'input')!.base).toEqual({ type: 'filter', hook: 'input', priority: 0, policy: 'drop' });
  });

  it('deleting a chain takes its rules and their references with it', () => {
    const fake = new FakeKernel();
    fake.commitSync([
      ...world,
      add(chain('lonely')),
      add(rule('lonely', [{ kind: 'lookup', keys: [{ kind: 'payload', field: 'ip daddr' }], set: 'ranges' }])),
    ]);
    expect(() =>
      fake.commitSync([del({ kind: 'set', family: F, table: T, name: 'ranges', keyType: ['ipv4_addr'], flags: ['interval'] })]),
    ).toThrow(/EBUSY/);
    fake.commitSync([
      del(chain('lonely')),
      del({ kind: 'set', family: F, table: T, name: 'ranges', keyType: ['ipv4_addr'], flags: ['interval'] }),
    ]);
    const l = fake.listSync(F, T)!;
    expect(l.chains.map((c) => c.name)).not.toContain('lonely');
    expect(l.rules.some((r) => r.chain === 'lonely')).toBe(false);
  });

  it('a table that is deleted lists as undefined', async () => {
    const { fake } = run(byName('delete a table with everything in it'));
    expect(await fake.list(F, T)).toBeUndefined();
    expect(fake.tableNames()).toEqual([]);
  });
});

describe('FakeKernel: flowtables', () => {
  const ft = (devices: string[]) => ({ ...flowtable, devices });
  it('adding to an existing flowtable adds devices', () => {
    const fake = new FakeKernel();
    fake.commitSync([add(table), add(ft(['eth1'])), add(ft(['eth0']))]);
    expect(fake.listSync(F, T)!.flowtables[0]!.devices).toEqual(['eth0', 'eth1']);
  });
  it('a flowtable a rule offloads to cannot be deleted', () => {
    const fake = new FakeKernel();
    const fwd = chain('fwd', { type: 'filter', hook: 'forward', priority: 0 });
    fake.commitSync([add(table), add(ft(['eth0'])), add(fwd), add(rule('fwd', [{ kind: 'flow-offload', flowtable: flowtable.name }]))]);
    expect(() => fake.commitSync([del(ft([]))])).toThrow(
      expect.objectContaining({ failures: [expect.objectContaining({ code: 'EBUSY', errno: 16 })] }),
    );
    fake.commitSync([flush(fwd), del(ft([]))]);
    expect(fake.listSync(F, T)!.flowtables).toEqual([]);
  });
  it('a delete that names devices takes only those out, in place, while a rule offloads to it', () => {
    const fake = new FakeKernel({ devices: ['eth0', 'eth1', 'eth2'] });
    const fwd = chain('fwd', { type: 'filter', hook: 'forward', priority: 0 });
    fake.commitSync([
      add(table),
      add(ft(['eth0', 'eth1', 'eth2'])),
      add(fwd),
      add(rule('fwd', [{ kind: 'flow-offload', flowtable: flowtable.name }])),
    ]);
    fake.commitSync([del(ft(['eth0', 'eth2']))]);
    expect(fake.listSync(F, T)!.flowtables[0]!.devices).toEqual(['eth1']);
    expect(fake.listSync(F, T)!.rules).toHaveLength(1);
  });
  it('a delete naming a device the flowtable lacks, or a vanished one, fails ENOENT and changes nothing', () => {
    const fake = new FakeKernel({ devices: ['eth0', 'eth1'] });
    fake.commitSync([add(table), add(ft(['eth0']))]);
    expect(() => fake.commitSync([del(ft(['eth1']))])).toThrow(/ENOENT.*eth1 is not in flowtable/);
    expect(() => fake.commitSync([del(ft(['eth9']))])).toThrow(/ENOENT.*eth9 does not exist/);
    expect(fake.listSync(F, T)!.flowtables[0]!.devices).toEqual(['eth0']);
  });
  it('offload outside the forward hook is refused', () => {
    const fake = new FakeKernel();
    const inp = chain('inp', { type: 'filter', hook: 'input', priority: 0 });
    expect(() =>
      fake.commitSync([add(table), add(ft([])), add(inp), add(rule('inp', [{ kind: 'flow-offload', flowtable: flowtable.name }]))]),
    ).toThrow(/EOPNOTSUPP/);
  });
  it('unknown devices fail ENOENT when the fake knows the links', () => {
    const fake = new FakeKernel({ devices: ['eth0'] });
    fake.commitSync([add(table), add(ft(['eth0']))]);
    expect(() => fake.commitSync([add(ft(['eth9']))])).toThrow(/ENOENT/);
  });
  it('a missing flowtable cannot be offloaded to', () => {
    const fake = new FakeKernel();
    const fwd = chain('fwd', { type: 'filter', hook: 'forward', priority: 0 });
    expect(() => fake.commitSync([add(table), add(fwd), add(rule('fwd', [{ kind: 'flow-offload', flowtable: 'nope' }]))])).toThrow(
      /ENOENT/,
    );
  });
});

describe('FakeKernel: invalid operations, faults, counters, listing', () => {
  it('an invalid operation throws NftInvalidError at its index before anything applies', () => {
    const fake = new FakeKernel();
    fake.commitSync(world);
    try {
      fake.commitSync([add(el('ips', ['192.0.2.5'])), add(el('ips', ['010.0.0.1']))]);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(NftInvalidError);
      expect((e as NftInvalidError).index).toBe(1);
      expect((e as NftInvalidError).reason).toContain('leading zero');
    }
    expect(
      fake
        .listSync(F, T)!
        .elements.filter((e) => e.set === 'ips')
        .map((e) => e.key[0]),
    ).toEqual(['192.0.2.1']);
  });

  it('an injected fault fails the next commit only, leaving the state alone', async () => {
    const fake = new FakeKernel();
    await fake.commit(fake.begin().queueAll(world));
    fake.faults.push({ code: 'ENOBUFS', index: 1 });
    const tx: Operation[] = [add(chain('a')), add(chain('b'))];
    await expect(fake.commit(fake.begin().queueAll(tx))).rejects.toMatchObject({
      code: 'ERR_NFT_COMMIT',
      failures: [{ index: 1, errno: 105, code: 'ENOBUFS', message: 'injected ENOBUFS' }],
    });
    expect(fake.listSync(F, T)!.chains.map((c) => c.name)).not.toContain('a');
    await fake.commit(fake.begin().queueAll(tx));
    expect(fake.listSync(F, T)!.chains.map((c) => c.name)).toContain('a');
    expect([fake.commits, fake.attempts]).toEqual([2, 3]);
  });

  it('lists deterministically: by name, elements by key, rules in chain order, copies not state', () => {
    const objs = representativeObjects({ flowtable: true });
    const a = new FakeKernel();
    a.commitSync(objs.map((object) => ({ verb: 'add', object })));
    const b = new FakeKernel();
    // Same content, other order of independent operations.
    const defs = objs.filter((o) => o.kind !== 'element' && o.kind !== 'rule');
    const rest = objs.filter((o) => o.kind === 'element' || o.kind === 'rule');
    b.commitSync(
      [
        ...defs.filter((o) => o.kind === 'table'),
        ...defs.filter((o) => o.kind !== 'table').reverse(),
        ...rest.filter((o) => o.kind === 'element').reverse(),
        ...rest.filter((o) => o.kind === 'rule'),
      ].map((object) => ({ verb: 'add', object })),
    );
    const la = a.listSync(F, T)!;
    expect(b.listSync(F, T)).toEqual(la);
    expect(la.chains.map((c) => c.name)).toEqual([...la.chains.map((c) => c.name)].sort());
    expect(la.sets.map((c) => c.name)).toEqual([...la.sets.map((c) => c.name)].sort());
    la.chains[0]!.name = 'mutated';
    const vmapRule = la.rules.find((r) => r.exprs[0]!.kind === 'vmap')!;
    (vmapRule.exprs[0] as { keys: Array<{ kind: string }> }).keys[0]!.kind = 'mutated';
    la.elements[0]!.key[0] = 'mutated';
    expect(a.listSync(F, T)!.chains[0]!.name).not.toBe('mutated');
    expect(a.listSync(F, T)!.elements[0]!.key[0]).not.toBe('mutated');
    expect(JSON.stringify(a.listSync(F, T)!.rules)).not.toContain('mutated');
    expect(a.listSync('ip', T)).toBeUndefined();
  });

  it('lists rules a chain at a time when asked (rulesOnDemand), as the table held them when listed', () => {
    const objs = representativeObjects({ flowtable: true });
    const k = new FakeKernel();
    k.commitSync(objs.map((object) => ({ verb: 'add', object })));
    const whole = k.listSync(F, T)!;
    const onDemand = k.listSync(F, T, { rulesOnDemand: true })!;
    expect(onDemand.rules).toEqual([]);
    const chainsWithRules = [...new Set(whole.rules.map((r) => r.chain))];
    expect(chainsWithRules.length).toBeGreaterThan(1);
    for (const c of whole.chains) expect(onDemand.rulesOf!(c.name)).toEqual(whole.rules.filter((r) => r.chain === c.name));
    expect(onDemand.rulesOf!('no-such-chain')).toEqual([]);
    // A later commit does not change what was listed, nor does a caller changing what it was given.
    k.commitSync([{ verb: 'flush', object: table }]);
    onDemand.rulesOf!(chainsWithRules[0]!)[0]!.chain = 'mutated';
    expect(onDemand.rulesOf!(chainsWithRules[0]!)).toEqual(whole.rules.filter((r) => r.chain === chainsWithRules[0]));
    expect(k.listSync(F, T)!.rules).toEqual([]);
  });

  it('100k elements commit quickly, and a small change after them too', () => {
    const fake = new FakeKernel();
    const ops: Operation[] = [add(table), add({ ...vm, keyType: ['ipv4_addr', 'inet_proto', 'inet_service'] }), add(chain('svc'))];
    for (let i = 0; i < 100_000; i++)
      ops.push(add(el('vm', [`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, 'tcp', '80'], { verdict: 'goto', chain: 'svc' })));
    let t0 = performance.now();
    fake.commitSync(ops);
    const full = performance.now() - t0;
    t0 = performance.now();
    fake.commitSync([del(el('vm', ['10.0.0.5', 'tcp', '80'])), add(ips)]);
    const small = performance.now() - t0;
    console.log(`fake-kernel: 100k elements in ${full.toFixed(0)} ms; a 2-op commit after them in ${small.toFixed(1)} ms`);
    expect(fake.listSync(F, T)!.elements.length).toBe(99_999);
    // A guard against quadratic behaviour, loose enough for a loaded 2-core box.
    expect(full).toBeLessThan(10_000);
  });
});

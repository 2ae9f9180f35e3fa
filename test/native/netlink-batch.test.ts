// Transactions through the addon: atomicity and error mapping, incremental
// element changes, 100k elements in one transaction, bad input from JS, the
// flowtable probe, and every statement kind committed, printed by nft and
// raised back equal.

import { describe, expect, it } from 'vitest';
import { loadAddon } from '../../src/native/addon.ts';
import { probeFlowtables } from '../../src/nft/capabilities.ts';
import { encodeOperations } from '../../src/nft/netlink/encode.ts';
import type { Chain, Element, Family, NftMap, NftSet, Operation, Rule, Statement, Table } from '../../src/nft/objects.ts';
import { commitError, kernel, nftList, nftText, verdictMapOps } from './kernel-helpers.ts';

const T = 'knp';
const add = (...objects: Operation['object'][]): Operation[] => objects.map((object) => ({ verb: 'add', object }));

describe('atomicity', () => {
  it('one bad operation in the middle applies nothing and is named with errno and message', async () => {
    const { ns, dp } = kernel();
    const table: Table = { kind: 'table', family: 'ip', name: T };
    await dp.commit(dp.begin().queueAll(add(table)));
    const before = nftText(ns);
    const ops: Operation[] = [
      ...add(
        { kind: 'chain', family: 'ip', table: T, name: 'a' },
        { kind: 'set', family: 'ip', table: T, name: 's', keyType: ['ipv4_addr'] },
      ),
      { verb: 'delete', object: { kind: 'chain', family: 'ip', table: T, name: 'missing' } },
      ...add({ kind: 'chain', family: 'ip', table: T, name: 'b' }),
    ];
    const err = await commitError(() => dp.commit(dp.begin().queueAll(ops)));
    expect(err.code).toBe('ERR_NFT_COMMIT');
    expect(err.failures).toEqual([{ index: 2, errno: 2, code: 'ENOENT', message: expect.any(String) }]);
    expect(err.failures[0]!.message.length).toBeGreaterThan(0);
    expect(err.message).toContain('operation 2 (delete chain) failed with ENOENT');
    expect(nftText(ns)).toBe(before);
  });

  it('a bad element deep in a split element list names that element', async () => {
    const { ns, dp } = kernel();
    const map: NftMap = { kind: 'map', family: 'ip', table: T, name: 'm', keyType: ['ipv4_addr'], dataType: 'verdict' };
    const ops: Operation[] = [...add({ kind: 'table', family: 'ip', name: T }, { kind: 'chain', family: 'ip', table: T, name: 'c' }, map)];
    for (let i = 0; i < 1200; i++) {
      const chain = i === 1100 ? 'no-such-chain' : 'c';
      ops.push({
        verb: 'add',
        object: {
          kind: 'element',
          family: 'ip',
          table: T,
          set: 'm',
          key: [`10.0.${i >> 8}.${i & 255}`],
          value: { verdict: 'goto', chain },
        },
      });
    }
    const err = await commitError(() => dp.commit(dp.begin().queueAll(ops)));
    expect(err.failures).toEqual([expect.objectContaining({ index: 3 + 1100, code: 'ENOENT' })]);
    expect(nftList(ns, 'table')).toEqual([]);
  });
});

describe('elements', () => {
  it('incremental add and delete touch only the named elements', async () => {
    const { ns, dp } = kernel();
    const set: NftSet = { kind: 'set', family: 'ip6', table: T, name: 'eps', keyType: ['ipv6_addr', 'inet_service'] };
    const el = (a: string, p: string): Element => ({ kind: 'element', family: 'ip6', table: T, set: 'eps', key: [a, p] });
    await dp.commit(
      dp.begin().queueAll([...add({ kind: 'table', family: 'ip6', name: T }, set), ...add(el('fd00::1', '80'), el('fd00::2', '80'))]),
    );
    await dp.commit(
      dp.begin().queueAll([
        { verb: 'delete', object: el('fd00::1', '80') },
        { verb: 'add', object: el('fd00::3', '8080') },
      ]),
    );
    expect((await dp.list('ip6', T))!.elements.map((e) => e.key.join(' ')).sort()).toEqual(['fd00::2 80', 'fd00::3 8080']);
    expect(JSON.stringify(nftList(ns, 'set')[0]!.elem)).toBe(JSON.stringify([{ concat: ['fd00::2', 80] }, { concat: ['fd00::3', 8080] }]));
  });

  it('100k elements land in one transaction, split across messages', async () => {
    const { ns, dp } = kernel();
    const ops = verdictMapOps(T, 100_000, '80', 'service-ips');
    const addon = loadAddon();
    const t0 = performance.now();
    const { bytes } = encodeOperations(ops);
    const encoded = performance.now();
    const pending = addon.commit(bytes, { netns: ns.path });
    const crossed = performance.now();
    const result = await pending;
    const done = performance.now();
    console.log(
      `100k elements: encode ${(encoded - t0).toFixed(1)} ms + addon call ${(crossed - encoded).toFixed(1)} ms = ` +
        `${(crossed - t0).toFixed(1)} ms to cross; kernel commit ${(done - crossed).toFixed(0)} ms; ` +
        `${result.messages} messages, ${(result.bytes / 1e6).toFixed(1)} MB`,
    );
    expect(result.failures).toEqual([]);
    expect(result.messages).toBeGreaterThanOrEqual(2 + 100_000 / addon.elementsPerMessage);
    const count = ns.exec('sh', ['-c', "nft list map ip knp service-ips | grep -o 'goto c' | wc -l"]);
    expect(Number(count.trim())).toBe(100_000);
    const l = (await dp.list('ip', T))!;
    expect(l.elements).toHaveLength(100_000);
  }, 120_000);
});

describe('elements of several sets, interleaved', () => {
  it('are sent as one message per set, all land, and a bad one is still named by its own index', async () => {
    const { ns, dp } = kernel();
    const sets = ['a', 'b', 'c'].map(
      (name): NftMap => ({ kind: 'map', family: 'ip', table: T, name, keyType: ['ipv4_addr'], dataType: 'verdict' }),
    );
    const head = add({ kind: 'table', family: 'ip', name: T }, { kind: 'chain', family: 'ip', table: T, name: 'c' }, ...sets);
    const el = (i: number, chain = 'c'): Operation => ({
      verb: 'add',
      object: {
        kind: 'element',
        family: 'ip',
        table: T,
        set: sets[i % 3]!.name,
        key: [`10.0.${i >> 8}.${i & 255}`],
        value: { verdict: 'goto', chain },
      },
    });
    const elements = Array.from({ length: 300 }, (_, i) => el(i));
    await dp.commit(dp.begin().queueAll([...head, ...elements]));
    // Table, chain, three maps, then one element message per map (not 300).
    expect(dp.lastCommit!.messages).toBe(5 + 3);
    for (const s of sets) expect((await dp.list('ip', T))!.elements.filter((e) => e.set === s.name)).toHaveLength(100);

    const { ns: ns2, dp: dp2 } = kernel();
    const bad = [...head, ...elements.slice(0, 200), el(200, 'missing'), ...elements.slice(201)];
    const err = await commitError(() => dp2.commit(dp2.begin().queueAll(bad)));
    expect(err.failures).toEqual([expect.objectContaining({ index: head.length + 200, code: 'ENOENT' })]);
    expect(nftList(ns2, 'table')).toEqual([]);
    expect(nftList(ns, 'map')).toHaveLength(3);
  });
});

describe('kernel time', () => {
  it('adds up the send and answer time of every commit that reached the kernel, a refused one too', async () => {
    const { dp } = kernel();
    expect(dp.kernelMs).toBe(0);
    await dp.commit(
      dp.begin().queueAll(add({ kind: 'table', family: 'ip', name: T }, { kind: 'chain', family: 'ip', table: T, name: 'c' })),
    );
    const first = dp.lastCommit!;
    expect(first.sendMs).toBeGreaterThan(0);
    expect(dp.kernelMs).toBe(first.sendMs + first.receiveMs);
    await commitError(() =>
      dp.commit(dp.begin().queueAll([{ verb: 'delete', object: { kind: 'chain', family: 'ip', table: T, name: 'missing' } }])),
    );
    const second = dp.lastCommit!;
    // Summed as the dataplane sums them, each commit's to the total: in another order the floats may round apart.
    expect(dp.kernelMs).toBe(first.sendMs + first.receiveMs + (second.sendMs + second.receiveMs));
    // A batch refused before it was sent (invalid) costs the kernel nothing.
    const before = dp.kernelMs;
    await expect(dp.commit(dp.begin().queueAll(add({ kind: 'chain', family: 'ip', table: T, name: '' })))).rejects.toMatchObject({
      code: 'ERR_NFT_INVALID',
    });
    expect(dp.kernelMs).toBe(before);
  });
});

describe('message splitting', () => {
  it('an element list too large for one 64 KiB nest is split by size inside the transaction', async () => {
    const { ns } = kernel();
    const addon = loadAddon();
    const set: NftSet = { kind: 'set', family: 'ip', table: T, name: 's', keyType: ['ipv4_addr'] };
    const ops: Operation[] = add({ kind: 'table', family: 'ip', name: T }, set);
    // 500 elements with 100-byte comments take ~60 KiB: more than one nest may hold.
    for (let i = 0; i < 1000; i++) {
      ops.push({
        verb: 'add',
        object: {
          kind: 'element',
          family: 'ip',
          table: T,
          set: 's',
          key: [`10.1.${i >> 8}.${i & 255}`],
          comment: `c${i}`.padEnd(100, 'x'),
        },
      });
    }
    const result = await addon.commit(encodeOperations(ops).bytes, { netns: ns.path });
    expect(result.failures).toEqual([]);
    // One message each for the table and the set; by count alone the elements would take two.
    expect(result.messages).toBeGreaterThan(2 + 1000 / addon.elementsPerMessage);
    const count = ns.exec('sh', ['-c', "nft list set ip knp s | grep -o 'comment' | wc -l"]);
    expect(Number(count.trim())).toBe(1000);
  });

  it('a rule whose expressions exceed 64 KiB is refused as its own failure, not truncated', async () => {
    const { ns } = kernel();
    const addon = loadAddon();
    const counters: Statement[] = Array.from({ length: 4000 }, () => ({ kind: 'counter' }));
    const ops: Operation[] = add(
      { kind: 'table', family: 'ip', name: T },
      { kind: 'chain', family: 'ip', table: T, name: 'c' },
      { kind: 'rule', family: 'ip', table: T, chain: 'c', exprs: counters },
    );
    const result = await addon.commit(encodeOperations(ops).bytes, { netns: ns.path });
    expect(result.failures).toEqual([
      { index: 2, errno: 90, origin: 'builder', message: "operation 2: the rule's expressions exceed 64 KiB" },
    ]);
    expect(nftList(ns, 'table')).toEqual([]);
  });

  it(
    "through the dataplane, the batch builder's refusal names its operation like a kernel refusal (so it can be traced " + 'to its owner)',
    async () => {
      const { ns, dp } = kernel();
      const counters: Statement[] = Array.from({ length: 4000 }, () => ({ kind: 'counter' }));
      const ops: Operation[] = add(
        { kind: 'table', family: 'ip', name: T },
        { kind: 'chain', family: 'ip', table: T, name: 'c' },
        { kind: 'rule', family: 'ip', table: T, chain: 'c', exprs: counters },
      );
      const err = await commitError(() => dp.commit(dp.begin().queueAll(ops)));
      expect(err.failures).toEqual([
        { index: 2, errno: 90, code: 'EMSGSIZE', message: "operation 2: the rule's expressions exceed 64 KiB" },
      ]);
      expect(nftList(ns, 'table')).toEqual([]);
    },
  );

  it('an operation the encoder cannot encode (an element of a set it does not know) is named the same way', async () => {
    const { ns, dp } = kernel();
    const ops: Operation[] = add(
      { kind: 'table', family: 'ip', name: T },
      { kind: 'element', family: 'ip', table: T, set: 'nowhere', key: ['10.0.0.1'] },
    );
    const err = await commitError(() => dp.commit(dp.begin().queueAll(ops)));
    expect(err.failures).toEqual([{ index: 1, errno: 22, code: 'EINVAL', message: expect.stringContaining('nowhere') }]);
    expect(nftList(ns, 'table')).toEqual([]);
  });
});

describe('bad input from JS', () => {
  const addon = loadAddon();
  it('wrong types are TypeErrors with a code', () => {
    expect(() => addon.commit('x' as never)).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }));
    expect(() => addon.commit(new Uint16Array(4) as never)).toThrow(TypeError);
    expect(() => addon.commit(new Uint8Array(12), { netns: 5 } as never)).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }),
    );
    expect(() => addon.list('ip' as never, T)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
    expect(() => addon.list(2, 7 as never)).toThrow(TypeError);
  });

  it('malformed buffers, long names and unknown families reject with RangeErrors, never a crash', async () => {
    await expect(addon.commit(new Uint8Array(3))).rejects.toThrow(
      expect.objectContaining({ name: 'RangeError', code: 'ERR_NFT_BATCH_TRUNCATED' }),
    );
    await expect(addon.commit(new Uint8Array(12))).rejects.toThrow(expect.objectContaining({ code: 'ERR_NFT_BATCH_INVALID' }));
    const good = encodeOperations(add({ kind: 'table', family: 'ip', name: 'x'.repeat(300) })).bytes;
    await expect(addon.commit(good)).rejects.toThrow(expect.objectContaining({ name: 'RangeError', code: 'ERR_NFT_NAME_TOO_LONG' }));
    const badFamily = encodeOperations(add({ kind: 'table', family: 'ip', name: 't' })).bytes.slice();
    badFamily[12 + 4] = 99; // the record's family byte
    await expect(addon.commit(badFamily)).rejects.toThrow(expect.objectContaining({ code: 'ERR_NFT_FAMILY' }));
    for (let cut = 13; cut < good.length; cut += 7) await expect(addon.commit(good.subarray(0, cut))).rejects.toThrow(RangeError);
    // Attribute ids libnftnl does not know (it would exit the process), values past its fixed fields.
    const badId = encodeOperations(add({ kind: 'table', family: 'ip', name: 't' })).bytes.slice();
    badId[12 + 9 + 2] = 200; // the first attribute's id
    await expect(addon.commit(badId)).rejects.toThrow(
      expect.objectContaining({ code: 'ERR_NFT_BATCH_INVALID', index: 0, message: expect.stringMatching(/operation 0: attribute 200/) }),
    );
    const longUserdata = encodeOperations(add({ kind: 'table', family: 'ip', name: 't', comment: 'x'.repeat(300) })).bytes;
    await expect(addon.commit(longUserdata)).rejects.toThrow(/too large/);
    expect(() => addon.list(99, T)).toThrow(expect.objectContaining({ name: 'RangeError', code: 'ERR_NFT_FAMILY' }));
    expect(() => addon.list(2, 'y'.repeat(256))).toThrow(expect.objectContaining({ code: 'ERR_NFT_NAME_TOO_LONG' }));
    expect(() => addon.list(2, T, {}, 'cidrs' as unknown as string[])).toThrow(TypeError);
    expect(() => addon.list(2, T, {}, [7] as unknown as string[])).toThrow(TypeError);
  });

  it('a namespace that does not exist rejects with the path in the message', async () => {
    const bytes = encodeOperations(add({ kind: 'table', family: 'ip', name: 't' })).bytes;
    await expect(addon.commit(bytes, { netns: '/var/run/netns/knp-does-not-exist' })).rejects.toThrow(/knp-does-not-exist/);
  });
});

describe('flowtable probe', () => {
  it('answers unsupported on this kernel and leaves nothing behind', async () => {
    const { ns, dp } = kernel();
    const answer = await probeFlowtables(dp);
    expect(answer.status).toBe('unsupported');
    expect(answer.reason).toMatch(/no flowtable support.*ENOENT/);
    expect(nftList(ns, 'table')).toEqual([]);
  });
});

// One rule per statement kind; `nft` (the oracle) prints each, our list() raises each back.
function statementCases(family: Family): Array<{ exprs: Statement[]; text: string }> {
  const v6 = family === 'ip6';
  const daddr = { kind: 'payload', field: v6 ? 'ip6 daddr' : 'ip daddr' } as const;
  const addr = v6 ? 'fd00::5' : '10.1.0.5';
  const net = v6 ? 'fd00:10::/64' : '10.0.0.0/8';
  const l4 = { kind: 'match', left: { kind: 'meta', key: 'l4proto' }, op: '==', right: 'tcp' } as const;
  const inetPrefix = family === 'inet' ? (v6 ? 'ip6 ' : 'ip ') : '';
  // In inet tables nft prints the protocol dependency of these two explicitly.
  const inetDep = (dep: string) => (family === 'inet' ? `${dep} ` : '');
  return [
    { exprs: [{ kind: 'match', left: daddr, op: '==', right: net }], text: `${daddr.field} ${net}` },
    { exprs: [{ kind: 'match', left: daddr, op: '!=', right: addr }], text: `${daddr.field} != ${addr}` },
    { exprs: [{ kind: 'match', left: { kind: 'payload', field: 'tcp dport' }, op: '==', right: '80' }], text: 'tcp dport 80' },
    { exprs: [{ kind: 'match', left: { kind: 'payload', field: 'th dport' }, op: '>=', right: '30000' }], text: 'th dport >= 30000' },
    {
      exprs: [{ kind: 'match', left: { kind: 'meta', key: 'mark' }, op: '==', right: '0x4000', mask: '0x4000' }],
      text: 'meta mark & 0x00004000 == 0x00004000',
    },
    { exprs: [{ kind: 'match', left: { kind: 'meta', key: 'iifname' }, op: '!=', right: 'eth0' }], text: 'iifname != "eth0"' },
    {
      exprs: [{ kind: 'match', left: { kind: 'ct', key: 'state' }, op: '==', right: 'established,related' }],
      text: 'ct state established,related',
    },
    { exprs: [{ kind: 'match', left: { kind: 'ct', key: 'packets' }, op: '>', right: '20' }], text: 'ct packets > 20' },
    {
      exprs: [{ kind: 'match', left: { kind: 'ct-addr', dir: 'original', field: v6 ? 'ip6 daddr' : 'ip daddr' }, op: '==', right: addr }],
      text: `${inetDep('meta nfproto ipv4')}ct original ${v6 ? 'ip6' : 'ip'} daddr ${addr}`,
    },
    { exprs: [{ kind: 'match', left: { kind: 'fib-type', addr: 'daddr' }, op: '==', right: 'local' }], text: 'fib daddr type local' },
    {
      exprs: [
        { kind: 'match', left: { kind: 'numgen', mod: 3 }, op: '==', right: '1' },
        { kind: 'verdict', verdict: 'goto', chain: 'target' },
      ],
      text: 'numgen random mod 3 1 goto target',
    },
    { exprs: [{ kind: 'lookup', keys: [daddr], set: 'addrs', negate: true }], text: `${daddr.field} != @addrs` },
    {
      exprs: [
        { kind: 'vmap', keys: [daddr, { kind: 'meta', key: 'l4proto' }, { kind: 'payload', field: 'th dport' }], map: 'service-ips' },
      ],
      text: `${daddr.field} . meta l4proto . th dport vmap @service-ips`,
    },
    { exprs: [{ kind: 'counter' }, { kind: 'verdict', verdict: 'jump', chain: 'target' }], text: 'counter packets 0 bytes 0 jump target' },
    { exprs: [{ kind: 'verdict', verdict: 'return' }], text: 'return' },
    { exprs: [l4, { kind: 'dnat', addr, port: 8080 }], text: `meta l4proto tcp dnat ${inetPrefix}to ${v6 ? `[${addr}]` : addr}:8080` },
    // nft 1.0.6 prints the map form without `addr . port` (it reads them from the map's type).
    {
      exprs: [l4, { kind: 'dnat-map', family: v6 ? 'ip6' : 'ip', keys: [{ kind: 'numgen', mod: 2 }], map: 'endpoints' }],
      text: `meta l4proto tcp dnat ${v6 ? 'ip6' : 'ip'} to numgen random mod 2 map @endpoints`,
    },
    { exprs: [{ kind: 'snat', addr }], text: `snat ${inetPrefix}to ${addr}` },
    { exprs: [{ kind: 'masquerade', fullyRandom: true }], text: 'masquerade fully-random' },
    { exprs: [{ kind: 'reject', with: 'tcp reset' }], text: `${inetDep('meta l4proto tcp')}reject with tcp reset` },
    { exprs: [{ kind: 'mark-set', value: '0x4000', or: true }], text: 'meta mark set meta mark | 0x00004000' },
    { exprs: [{ kind: 'mark-xor', value: '0x4000' }], text: 'meta mark set meta mark ^ 0x00004000' },
    { exprs: [{ kind: 'mark-set', value: '0x1' }], text: 'meta mark set 0x00000001' },
    {
      exprs: [
        {
          kind: 'set-update',
          op: 'update',
          set: 'affinity',
          keys: [{ kind: 'payload', field: v6 ? 'ip6 saddr' : 'ip saddr' }],
          timeout: 10800,
        },
      ],
      text: `update @affinity { ${v6 ? 'ip6' : 'ip'} saddr timeout 3h }`,
    },
    { exprs: [{ kind: 'notrack' }], text: 'notrack' },
  ];
}

describe('statements', () => {
  for (const family of ['ip', 'ip6', 'inet'] as const) {
    it(`every statement kind in a ${family} table: nft prints it, list() raises it back`, async () => {
      const { ns, dp } = kernel();
      const v6 = family === 'ip6';
      const keyAddr = v6 ? 'ipv6_addr' : 'ipv4_addr';
      const chain = (name: string): Chain => ({ kind: 'chain', family, table: T, name });
      const cases = statementCases(family);
      const rules: Rule[] = cases.map((c) => ({ kind: 'rule', family, table: T, chain: 'stmts', exprs: c.exprs }));
      await dp.commit(
        dp
          .begin()
          .queueAll(
            add(
              { kind: 'table', family, name: T },
              chain('stmts'),
              chain('target'),
              { kind: 'set', family, table: T, name: 'addrs', keyType: [keyAddr] },
              { kind: 'set', family, table: T, name: 'affinity', keyType: [keyAddr], flags: ['timeout', 'dynamic'], timeout: 10800 },
              { kind: 'map', family, table: T, name: 'service-ips', keyType: [keyAddr, 'inet_proto', 'inet_service'], dataType: 'verdict' },
              { kind: 'map', family, table: T, name: 'endpoints', keyType: ['integer'], dataType: [keyAddr, 'inet_service'] },
              ...rules,
            ),
          ),
      );
      const printed = ns
        .exec('nft', ['list', 'chain', family, T, 'stmts'])
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l && !l.startsWith('chain') && l !== '}' && !l.startsWith('table'));
      expect(printed).toEqual(cases.map((c) => c.text));
      const listed = (await dp.list(family, T))!;
      expect(dp.lastUnreadable).toEqual([]);
      expect(listed.rules.filter((r) => r.chain === 'stmts').map((r) => r.exprs)).toEqual(cases.map((c) => c.exprs));
      // As the kernel holds them, each rule is recognised from its bytes (what adoption compares first), and no other rule is.
      const onDemand = (await dp.list(family, T, { rulesOnDemand: true }))!;
      expect(onDemand.holdsEncoded!('stmts', rules)).toBe(true);
      const swapped = rules.map((_, i) => rules.with(i, rules[(i + 1) % rules.length]!));
      expect(swapped.filter((other) => onDemand.holdsEncoded!('stmts', other))).toEqual([]);
    });
  }

  it('flow offload needs a flowtable, which this kernel cannot make', async () => {
    const { dp } = kernel();
    const err = await commitError(() =>
      dp.commit(
        dp
          .begin()
          .queueAll(
            add(
              { kind: 'table', family: 'inet', name: T },
              { kind: 'chain', family: 'inet', table: T, name: 'fwd' },
              { kind: 'rule', family: 'inet', table: T, chain: 'fwd', exprs: [{ kind: 'flow-offload', flowtable: 'ft' }] },
            ),
          ),
      ),
    );
    expect(err.failures[0]).toMatchObject({ index: 2, code: 'ENOENT' });
  });
});

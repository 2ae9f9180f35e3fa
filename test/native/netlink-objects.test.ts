// Every object kind x verb through the addon, checked against `nft -j list
// ruleset` in the namespace and against our own list(). IPv4 and IPv6.

import { afterAll, describe, expect, it } from 'vitest';
import type { Chain, Element, Flowtable, NftMap, NftObjectKind, NftSet, Operation, Rule, Table, Verb } from '../../src/nft/objects.ts';
import { VERBS_BY_KIND } from '../../src/nft/transaction.ts';
import { commitError, kernel, nftList, nftText } from './kernel-helpers.ts';

const covered = new Set<string>();
const cover = (kind: NftObjectKind, verb: Verb) => covered.add(`${kind} ${verb}`);

const fam = 'ip' as const;
const T = 'knp';
const table: Table = { kind: 'table', family: fam, name: T, comment: 'test table' };
const regular: Chain = { kind: 'chain', family: fam, table: T, name: 'svc-a', comment: 'a service' };
const base: Chain = {
  kind: 'chain',
  family: fam,
  table: T,
  name: 'nat-pre',
  base: { type: 'nat', hook: 'prerouting', priority: -100, policy: 'accept' },
};
const rule = (exprs: Rule['exprs'], chain = regular.name, handle?: number): Rule => ({
  kind: 'rule',
  family: fam,
  table: T,
  chain,
  exprs,
  ...(handle ? { handle } : {}),
});
const accept = rule([{ kind: 'counter' }, { kind: 'verdict', verdict: 'accept' }]);
const drop = rule([{ kind: 'verdict', verdict: 'drop' }]);
const vmap: NftMap = {
  kind: 'map',
  family: fam,
  table: T,
  name: 'service-ips',
  keyType: ['ipv4_addr', 'inet_proto', 'inet_service'],
  dataType: 'verdict',
  comment: 'vips',
};
const dataMap: NftMap = { kind: 'map', family: fam, table: T, name: 'marks', keyType: ['ifname'], dataType: 'mark' };
const intervalSet: NftSet = { kind: 'set', family: fam, table: T, name: 'cidrs', keyType: ['ipv4_addr'], flags: ['interval'] };
const concatInterval: NftSet = {
  kind: 'set',
  family: fam,
  table: T,
  name: 'ranges',
  keyType: ['ipv4_addr', 'inet_service'],
  flags: ['interval'],
};
const rangeVerdicts: NftMap = {
  kind: 'map',
  family: fam,
  table: T,
  name: 'range-verdicts',
  keyType: ['ipv4_addr'],
  dataType: 'verdict',
  flags: ['interval'],
};
const affinity: NftSet = {
  kind: 'set',
  family: fam,
  table: T,
  name: 'affinity',
  keyType: ['ipv4_addr'],
  flags: ['timeout', 'dynamic'],
  timeout: 10800,
};
const el = (set: string, key: string[], value?: Element['value'], extra: Partial<Element> = {}): Element => ({
  kind: 'element',
  family: fam,
  table: T,
  set,
  key,
  ...(value !== undefined ? { value } : {}),
  ...extra,
});
const add = (...objects: Operation['object'][]): Operation[] => objects.map((object) => ({ verb: 'add', object }));
const op = (verb: Verb, object: Operation['object']): Operation => ({ verb, object });

describe('tables', () => {
  it('add is idempotent, create refuses an existing table, both list back', async () => {
    const { ns, dp } = kernel();
    await dp.commit(dp.begin().queueAll([op('add', table)]));
    await dp.commit(dp.begin().queueAll([op('add', table)]));
    cover('table', 'add');
    expect(nftList(ns, 'table')).toMatchObject([{ family: 'ip', name: T }]);
    expect(nftText(ns)).toContain('comment "test table"');
    const err = await commitError(() => dp.commit(dp.begin().queueAll([op('create', table)])));
    expect(err.failures[0]).toMatchObject({ index: 0, code: 'EEXIST' });
    const t6: Table = { kind: 'table', family: 'ip6', name: 'knp6' };
    await dp.commit(dp.begin().queueAll([op('create', t6)]));
    cover('table', 'create');
    expect((await dp.list('ip', T))!.table).toEqual(table);
    expect((await dp.list('ip6', 'knp6'))!.table).toEqual(t6);
  });

  it('delete removes, refuses a missing table; destroy does not', async () => {
    const { ns, dp } = kernel();
    await dp.commit(dp.begin().queueAll(add(table, regular, accept)));
    await dp.commit(dp.begin().queueAll([op('delete', table)]));
    cover('table', 'delete');
    expect(nftList(ns, 'table')).toEqual([]);
    expect(await dp.list('ip', T)).toBeUndefined();
    expect((await commitError(() => dp.commit(dp.begin().queueAll([op('delete', table)])))).failures[0]).toMatchObject({
      index: 0,
      code: 'ENOENT',
    });
    await dp.commit(dp.begin().queueAll([op('destroy', table)]));
    await dp.commit(dp.begin().queueAll([...add(table), op('destroy', table)]));
    cover('table', 'destroy');
    expect(nftList(ns, 'table')).toEqual([]);
  });

  it('flush removes every rule and keeps chains and sets', async () => {
    const { ns, dp } = kernel();
    await dp.commit(
      dp
        .begin()
        .queueAll(
          add(
            table,
            regular,
            base,
            accept,
            drop,
            rule([{ kind: 'verdict', verdict: 'accept' }], base.name),
            intervalSet,
            el('cidrs', ['10.0.0.0/8']),
          ),
        ),
    );
    await dp.commit(dp.begin().queueAll([op('flush', table)]));
    cover('table', 'flush');
    expect(nftList(ns, 'rule')).toEqual([]);
    expect(
      nftList(ns, 'chain')
        .map((c) => c.name)
        .sort(),
    ).toEqual(['nat-pre', 'svc-a']);
    const l = (await dp.list('ip', T))!;
    expect(l.rules).toEqual([]);
    expect(l.elements.map((e) => e.key)).toEqual([['10.0.0.0/8']]);
    // Elements of named sets left out: the set is listed, its elements are not, and the listing says so.
    const skipped = (await dp.list('ip', T, { skipElementsOf: ['cidrs', 'no-such-set'] }))!;
    expect(skipped.sets.map((x) => x.name)).toContain('cidrs');
    expect(skipped.elements).toEqual([]);
    expect(skipped.elementsNotRead).toEqual(['cidrs']);
    expect((await dp.list('ip', T, { skipElementsOf: [] }))!.elementsNotRead).toBeUndefined();
  });
});

describe('chains', () => {
  it('add and create, base and regular, list back as written', async () => {
    const { ns, dp } = kernel();
    await dp.commit(dp.begin().queueAll(add(table, regular, base)));
    await dp.commit(dp.begin().queueAll(add(regular)));
    cover('chain', 'add');
    const out: Chain = {
      kind: 'chain',
      family: fam,
      table: T,
      name: 'out',
      base: { type: 'filter', hook: 'output', priority: 0, policy: 'drop' },
    };
    await dp.commit(dp.begin().queueAll([op('create', out)]));
    cover('chain', 'create');
    expect((await commitError(() => dp.commit(dp.begin().queueAll([op('create', regular)])))).failures[0]).toMatchObject({
      index: 0,
      code: 'EEXIST',
    });
    const chains = nftList(ns, 'chain');
    expect(chains.find((c) => c.name === 'nat-pre')).toMatchObject({ type: 'nat', hook: 'prerouting', prio: -100, policy: 'accept' });
    expect(chains.find((c) => c.name === 'out')).toMatchObject({ type: 'filter', hook: 'output', prio: 0, policy: 'drop' });
    expect((await dp.list('ip', T))!.chains).toEqual([base, out, regular]);
  });

  it('delete, destroy and flush', async () => {
    const { ns, dp } = kernel();
    await dp.commit(dp.begin().queueAll(add(table, regular, base, accept, drop)));
    await dp.commit(dp.begin().queueAll([op('flush', regular)]));
    cover('chain', 'flush');
    expect(nftList(ns, 'rule')).toEqual([]);
    await dp.commit(dp.begin().queueAll([op('delete', regular)]));
    cover('chain', 'delete');
    expect((await commitError(() => dp.commit(dp.begin().queueAll([op('delete', regular)])))).failures[0]).toMatchObject({
      code: 'ENOENT',
    });
    await dp.commit(dp.begin().queueAll([op('destroy', regular), op('destroy', base)]));
    cover('chain', 'destroy');
    expect(nftList(ns, 'chain')).toEqual([]);
  });
});

describe('rules', () => {
  it('add appends, insert prepends, replace and delete go by handle, destroy tolerates a missing one', async () => {
    const { ns, dp } = kernel();
    const r1 = rule([
      { kind: 'match', left: { kind: 'payload', field: 'ip daddr' }, op: '==', right: '10.96.0.1' },
      { kind: 'verdict', verdict: 'accept' },
    ]);
    await dp.commit(dp.begin().queueAll([...add(table, regular), op('add', r1), op('add', drop)]));
    cover('rule', 'add');
    await dp.commit(dp.begin().queueAll([op('insert', accept)]));
    cover('rule', 'insert');
    let l = (await dp.list('ip', T))!;
    expect(l.rules.map((r) => r.exprs)).toEqual([accept.exprs, r1.exprs, drop.exprs]);
    const nftRules = nftList(ns, 'rule');
    expect(nftRules.map((r) => r.handle)).toEqual(l.rules.map((r) => r.handle));
    const h = l.rules[1]!.handle!;
    const replacement = rule([{ kind: 'verdict', verdict: 'return' }], regular.name, h);
    await dp.commit(dp.begin().queueAll([op('replace', replacement)]));
    cover('rule', 'replace');
    l = (await dp.list('ip', T))!;
    expect(l.rules.map((r) => r.exprs)).toEqual([accept.exprs, replacement.exprs, drop.exprs]);
    await dp.commit(dp.begin().queueAll([op('delete', rule([], regular.name, l.rules[0]!.handle))]));
    cover('rule', 'delete');
    expect(nftList(ns, 'rule')).toHaveLength(2);
    await dp.commit(
      dp.begin().queueAll([op('destroy', rule([], regular.name, 99999)), op('destroy', rule([], regular.name, l.rules[2]!.handle))]),
    );
    cover('rule', 'destroy');
    expect((await dp.list('ip', T))!.rules).toEqual([{ ...replacement, handle: h }]);
    expect(
      (await commitError(() => dp.commit(dp.begin().queueAll([op('delete', rule([], regular.name, 99999))])))).failures[0],
    ).toMatchObject({ code: 'ENOENT' });
  });
});

describe('sets and maps', () => {
  it('add and create every shape; nft and list() agree', async () => {
    const { ns, dp } = kernel();
    await dp.commit(dp.begin().queueAll(add(table, regular, vmap, intervalSet, affinity)));
    cover('set', 'add');
    cover('map', 'add');
    await dp.commit(dp.begin().queueAll([op('create', dataMap), op('create', concatInterval)]));
    cover('set', 'create');
    cover('map', 'create');
    expect((await commitError(() => dp.commit(dp.begin().queueAll([op('create', intervalSet)])))).failures[0]).toMatchObject({
      code: 'EEXIST',
    });
    const sets = nftList(ns, 'set');
    const maps = nftList(ns, 'map');
    expect(maps.find((m) => m.name === 'service-ips')).toMatchObject({
      type: ['ipv4_addr', 'inet_proto', 'inet_service'],
      map: 'verdict',
      comment: 'vips',
    });
    expect(maps.find((m) => m.name === 'marks')).toMatchObject({ type: 'ifname', map: 'mark' });
    expect(sets.find((s) => s.name === 'cidrs')).toMatchObject({ type: 'ipv4_addr', flags: ['interval'] });
    expect(sets.find((s) => s.name === 'ranges')).toMatchObject({ type: ['ipv4_addr', 'inet_service'], flags: ['interval'] });
    expect(sets.find((s) => s.name === 'affinity')).toMatchObject({ type: 'ipv4_addr', timeout: 10800 });
    expect((await dp.list('ip', T))!.sets).toEqual([affinity, intervalSet, dataMap, concatInterval, vmap]);
  });

  it('flush empties, delete and destroy remove', async () => {
    const { ns, dp } = kernel();
    await dp.commit(
      dp
        .begin()
        .queueAll([
          ...add(table, regular, vmap, intervalSet, dataMap),
          ...add(
            el('service-ips', ['10.96.0.1', 'tcp', '80'], { verdict: 'goto', chain: 'svc-a' }),
            el('cidrs', ['10.0.0.0/8']),
            el('marks', ['eth0'], '0x4000'),
          ),
        ]),
    );
    await dp.commit(dp.begin().queueAll([op('flush', vmap), op('flush', intervalSet)]));
    cover('map', 'flush');
    cover('set', 'flush');
    expect((await dp.list('ip', T))!.elements).toEqual([el('marks', ['eth0'], '0x4000')]);
    await dp.commit(dp.begin().queueAll([op('delete', intervalSet), op('delete', dataMap)]));
    cover('set', 'delete');
    cover('map', 'delete');
    expect((await commitError(() => dp.commit(dp.begin().queueAll([op('delete', intervalSet)])))).failures[0]).toMatchObject({
      code: 'ENOENT',
    });
    await dp.commit(dp.begin().queueAll([op('destroy', intervalSet), op('destroy', vmap)]));
    cover('set', 'destroy');
    cover('map', 'destroy');
    expect(nftList(ns, 'set')).toEqual([]);
    expect(nftList(ns, 'map')).toEqual([]);
  });
});

describe('elements', () => {
  it('add, create, delete and destroy elements of every shape, IPv4 and IPv6', async () => {
    const { ns, dp } = kernel();
    const elements = [
      el('service-ips', ['10.96.0.1', 'tcp', '443'], { verdict: 'goto', chain: 'svc-a' }),
      el('service-ips', ['10.96.0.2', 'udp', '53'], { verdict: 'drop' }, { comment: 'dns' }),
      el('cidrs', ['10.0.0.0/8']),
      el('cidrs', ['192.0.2.7']),
      el('ranges', ['198.51.100.0/24', '80']),
      el('ranges', ['192.0.2.0/28', '53'], undefined, { comment: 'dns' }),
      // An interval map's elements carry values and comments as an exact map's do.
      el('range-verdicts', ['10.0.0.0/8'], { verdict: 'goto', chain: 'svc-a' }, { comment: 'pods' }),
      el('range-verdicts', ['192.0.2.7'], { verdict: 'drop' }),
      el('marks', ['eth0'], '0x4000'),
      el('affinity', ['203.0.113.5'], undefined, { timeout: 60 }),
    ];
    await dp.commit(
      dp
        .begin()
        .queueAll([...add(table, regular, vmap, intervalSet, concatInterval, rangeVerdicts, dataMap, affinity), ...add(...elements)]),
    );
    cover('element', 'add');
    const l = (await dp.list('ip', T))!;
    const sortKey = (e: Element) => `${e.set} ${e.key.join(' ')}`;
    expect(l.elements.sort((a, b) => sortKey(a).localeCompare(sortKey(b)))).toEqual(
      [...elements].sort((a, b) => sortKey(a).localeCompare(sortKey(b))),
    );
    const nftSets = [...nftList(ns, 'set'), ...nftList(ns, 'map')];
    expect(JSON.stringify(nftSets.find((s) => s.name === 'cidrs')!.elem)).toBe(
      JSON.stringify([{ prefix: { addr: '10.0.0.0', len: 8 } }, '192.0.2.7']),
    );
    const vips = JSON.stringify(nftSets.find((s) => s.name === 'service-ips')!.elem);
    expect(vips).toContain('{"concat":["10.96.0.1","tcp",443]},{"goto":{"target":"svc-a"}}');
    expect(vips).toContain('"concat":["10.96.0.2","udp",53]');
    expect(vips).toContain('"comment":"dns"');
    expect(JSON.stringify(nftSets.find((s) => s.name === 'range-verdicts')!.elem)).toBe(
      JSON.stringify([
        [{ elem: { val: { prefix: { addr: '10.0.0.0', len: 8 } }, comment: 'pods' } }, { goto: { target: 'svc-a' } }],
        ['192.0.2.7', { drop: null }],
      ]),
    );

    const dup = el('cidrs', ['192.0.2.7']);
    const err = await commitError(() => dp.commit(dp.begin().queueAll([op('create', el('cidrs', ['192.0.2.9'])), op('create', dup)])));
    expect(err.failures[0]).toMatchObject({ index: 1, code: 'EEXIST' });
    await dp.commit(dp.begin().queueAll([op('create', el('service-ips', ['10.96.0.3', 'tcp', '8080'], { verdict: 'accept' }))]));
    cover('element', 'create');

    await dp.commit(
      dp.begin().queueAll([op('delete', el('cidrs', ['10.0.0.0/8'])), op('delete', el('service-ips', ['10.96.0.1', 'tcp', '443']))]),
    );
    cover('element', 'delete');
    await dp.commit(
      dp.begin().queueAll([op('destroy', el('cidrs', ['10.9.9.9'])), op('destroy', el('ranges', ['198.51.100.0/24', '80']))]),
    );
    cover('element', 'destroy');
    const after = (await dp.list('ip', T))!.elements.map(sortKey).sort();
    expect(after).toEqual([
      'affinity 203.0.113.5',
      'cidrs 192.0.2.7',
      'marks eth0',
      'range-verdicts 10.0.0.0/8',
      'range-verdicts 192.0.2.7',
      'ranges 192.0.2.0/28 53',
      'service-ips 10.96.0.2 udp 53',
      'service-ips 10.96.0.3 tcp 8080',
    ]);
  });

  it('IPv6 sets, maps and elements round-trip', async () => {
    const { ns, dp } = kernel();
    const t6: Table = { kind: 'table', family: 'ip6', name: 'knp6' };
    const m6: NftMap = {
      kind: 'map',
      family: 'ip6',
      table: 'knp6',
      name: 'service-ips',
      keyType: ['ipv6_addr', 'inet_proto', 'inet_service'],
      dataType: 'verdict',
    };
    const s6: NftSet = { kind: 'set', family: 'ip6', table: 'knp6', name: 'cidrs', keyType: ['ipv6_addr'], flags: ['interval'] };
    const c6: Chain = { kind: 'chain', family: 'ip6', table: 'knp6', name: 'svc-b' };
    const e1: Element = {
      kind: 'element',
      family: 'ip6',
      table: 'knp6',
      set: 'service-ips',
      key: ['fd00:10:96::1', 'tcp', '80'],
      value: { verdict: 'jump', chain: 'svc-b' },
    };
    const e2: Element = { kind: 'element', family: 'ip6', table: 'knp6', set: 'cidrs', key: ['2001:db8::/32'] };
    await dp.commit(dp.begin().queueAll(add(t6, c6, m6, s6, e1, e2)));
    const l = (await dp.list('ip6', 'knp6'))!;
    expect(l.sets).toEqual([s6, m6]);
    expect(l.elements).toEqual([e2, e1]);
    const nftMap = nftList(ns, 'map')[0]!;
    expect(nftMap.elem[0][0].concat).toEqual(['fd00:10:96::1', 'tcp', 80]);
  });
});

describe('maps with concatenated data (dnat ... map)', () => {
  const endpoints: NftMap = {
    kind: 'map',
    family: fam,
    table: T,
    name: 'endpoints',
    keyType: ['integer'],
    dataType: ['ipv4_addr', 'inet_service'],
  };
  const ep = (i: number, addr: string, port: string) => el('endpoints', [String(i)], [addr, port]);

  it('integer keys and address . port values round-trip; nft reads them as written', async () => {
    const { ns, dp } = kernel();
    const elements = [ep(0, '10.244.0.11', '8080'), ep(1, '10.244.0.12', '80'), ep(4294967295, '192.0.2.1', '65535')];
    await dp.commit(dp.begin().queueAll([...add(table, endpoints), ...add(...elements)]));
    const l = (await dp.list('ip', T))!;
    expect(l.sets).toEqual([endpoints]);
    const byKey = (a: Element, b: Element) => Number(a.key[0]) - Number(b.key[0]);
    expect(l.elements.sort(byKey)).toEqual(elements);
    const m = nftList(ns, 'map')[0]!;
    expect(m).toMatchObject({ name: 'endpoints', type: 'integer', map: 'ipv4_addr . inet_service' });
    expect(JSON.stringify(m.elem)).toBe(
      JSON.stringify([
        [0, { concat: ['10.244.0.11', 8080] }],
        [1, { concat: ['10.244.0.12', 80] }],
        [4294967295, { concat: ['192.0.2.1', 65535] }],
      ]),
    );
    // Replacing one element's value is delete + add in one transaction; the key stays.
    await dp.commit(dp.begin().queueAll([op('delete', ep(1, '10.244.0.12', '80')), op('add', ep(1, '10.244.0.13', '80'))]));
    expect((await dp.list('ip', T))!.elements.sort(byKey).map((e) => e.value)).toEqual([
      ['10.244.0.11', '8080'],
      ['10.244.0.13', '80'],
      ['192.0.2.1', '65535'],
    ]);
  });

  it('IPv6 data is 16 address bytes and a port in the next register', async () => {
    const { ns, dp } = kernel();
    const t6: Table = { kind: 'table', family: 'ip6', name: 'knp6' };
    const m6: NftMap = {
      kind: 'map',
      family: 'ip6',
      table: 'knp6',
      name: 'endpoints',
      keyType: ['integer'],
      dataType: ['ipv6_addr', 'inet_service'],
    };
    const e: Element = { kind: 'element', family: 'ip6', table: 'knp6', set: 'endpoints', key: ['0'], value: ['fd00:10:244::11', '8080'] };
    await dp.commit(dp.begin().queueAll(add(t6, m6, e)));
    const l = (await dp.list('ip6', 'knp6'))!;
    expect(l.sets).toEqual([m6]);
    expect(l.elements).toEqual([e]);
    expect(JSON.stringify(nftList(ns, 'map')[0]!.elem)).toBe(JSON.stringify([[0, { concat: ['fd00:10:244::11', 8080] }]]));
  });

  it('dnat reads only a map to address . port; the kernel refuses a verdict map as data', async () => {
    const { ns, dp } = kernel();
    await dp.commit(dp.begin().queueAll(add(table, regular, endpoints, vmap)));
    const l4: Rule['exprs'][number] = { kind: 'match', left: { kind: 'meta', key: 'l4proto' }, op: '==', right: 'tcp' };
    const bad = rule([l4, { kind: 'dnat-map', family: 'ip', keys: [{ kind: 'numgen', mod: 2 }], map: 'service-ips' }]);
    // The dataplane knows the table's maps and refuses before sending...
    await expect(dp.commit(dp.begin().queueAll([op('add', bad)]))).rejects.toMatchObject({
      code: 'ERR_NFT_INVALID',
      reason: expect.stringContaining('not a map to ipv4_addr . inet_service'),
    });
    // ... and the kernel would too (a lookup of a verdict map cannot fill a data register).
    const r = ns.tryExec('nft', [
      'add',
      'rule',
      'ip',
      T,
      'svc-a',
      'meta',
      'l4proto',
      'tcp',
      'dnat',
      'ip',
      'addr',
      '.',
      'port',
      'to',
      'numgen',
      'random',
      'mod',
      '2',
      'map',
      '@service-ips',
    ]);
    expect(r.status).not.toBe(0);
    await dp.commit(
      dp
        .begin()
        .queueAll([op('add', rule([l4, { kind: 'dnat-map', family: 'ip', keys: [{ kind: 'numgen', mod: 2 }], map: 'endpoints' }]))]),
    );
    expect((await dp.list('ip', T))!.rules.map((x) => x.exprs[1]!.kind)).toEqual(['dnat-map']);
  });
});

describe('flowtables', () => {
  const ft: Flowtable = { kind: 'flowtable', family: 'inet', table: 'knpf', name: 'ft', hook: 'ingress', priority: 0, devices: ['lo'] };
  const tf: Table = { kind: 'table', family: 'inet', name: 'knpf' };

  it('add and create fail with ENOENT on this kernel (no CONFIG_NF_FLOW_TABLE), and nothing is applied', async () => {
    const { ns, dp } = kernel();
    for (const verb of ['add', 'create'] as const) {
      const err = await commitError(() => dp.commit(dp.begin().queueAll([op('add', tf), op(verb, ft)])));
      expect(err.failures).toEqual([expect.objectContaining({ index: 1, errno: 2, code: 'ENOENT' })]);
      cover('flowtable', verb);
    }
    expect(nftList(ns, 'table')).toEqual([]);
  });

  it('delete answers ENOENT, for the whole flowtable and for devices of it; destroy of a missing flowtable succeeds', async () => {
    const { ns, dp } = kernel();
    const whole = { ...ft, devices: [] };
    await dp.commit(dp.begin().queueAll([op('add', tf)]));
    for (const named of [whole, ft]) {
      expect((await commitError(() => dp.commit(dp.begin().queueAll([op('delete', named)])))).failures[0]).toMatchObject({
        index: 0,
        code: 'ENOENT',
      });
    }
    cover('flowtable', 'delete');
    await dp.commit(dp.begin().queueAll([op('destroy', whole)]));
    cover('flowtable', 'destroy');
    expect((await dp.list('inet', 'knpf'))!.flowtables).toEqual([]);
    expect(nftList(ns, 'flowtable')).toEqual([]);
  });
});

afterAll(() => {
  // Runs after every test above: each kind x verb the model allows was exercised.
  const missing: string[] = [];
  for (const [kind, verbs] of Object.entries(VERBS_BY_KIND))
    for (const v of verbs) if (!covered.has(`${kind} ${v}`)) missing.push(`${kind} ${v}`);
  expect(missing).toEqual([]);
});

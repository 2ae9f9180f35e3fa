import { describe, expect, it } from 'vitest';
import type { NftMap, NftObject, NftObjectKind, NftSet, Operation, Selector, Statement, Verb } from '../../src/nft/objects.ts';
import { NftInvalidError, selectorType, Transaction, validateOperations, VERBS_BY_KIND } from '../../src/nft/transaction.ts';
import { chain, el, F, flowtable, representativeObjects, rule, rules, serviceIPs, serviceKeys, sets, T, table } from './fixtures.ts';

const ALL_VERBS: Verb[] = ['add', 'create', 'insert', 'replace', 'delete', 'destroy', 'flush'];

const sample: Record<NftObjectKind, NftObject> = {
  table,
  chain: chain('c'),
  set: sets.find((s) => s.kind === 'set')!,
  map: sets.find((s) => s.kind === 'map')!,
  flowtable,
  rule: rule('c', [{ kind: 'counter' }], { handle: 4 }),
  element: el('cluster-ips', ['10.0.0.1']),
};

function firstError(objs: NftObject[], verb: Verb = 'add', known: Array<NftSet | NftMap> = []): NftInvalidError | undefined {
  const tx = new Transaction();
  for (const k of known) tx.knownContainer(k);
  for (const o of objs) tx.queue(verb, o);
  return tx.error;
}

describe('transaction: kind × verb', () => {
  const cases: Array<[NftObjectKind, Verb, boolean]> = [];
  for (const kind of Object.keys(sample) as NftObjectKind[])
    for (const verb of ALL_VERBS) cases.push([kind, verb, VERBS_BY_KIND[kind].includes(verb)]);

  it('covers every kind and verb', () => {
    expect(cases.length).toBe(7 * 7);
    // What the brief fixes: flush for table/chain/set/map; rules take insert/replace.
    expect(VERBS_BY_KIND.rule).toEqual(['add', 'insert', 'replace', 'delete', 'destroy']);
    expect(VERBS_BY_KIND.element).toEqual(['add', 'create', 'delete', 'destroy']);
    expect(VERBS_BY_KIND.flowtable).not.toContain('flush');
  });

  it.each(cases)('%s %s → allowed=%s', (kind, verb, allowed) => {
    let obj = sample[kind];
    // add/insert take no handle; replace/delete/destroy need one.
    if (kind === 'rule' && (verb === 'add' || verb === 'insert')) obj = { ...(obj as never as object), handle: undefined } as NftObject;
    // Only delete takes devices out of a flowtable; destroy is of the whole.
    if (kind === 'flowtable' && verb === 'destroy') obj = { ...flowtable, devices: [] };
    const tx = new Transaction().queue(verb, obj);
    if (allowed) {
      expect(tx.error).toBeUndefined();
      expect(tx.ops()).toEqual([{ verb, object: obj }]);
    } else {
      expect(tx.error?.code).toBe('ERR_NFT_INVALID');
      expect(tx.error?.reason).toContain(`does not take the verb "${verb}"`);
      expect(() => tx.ops()).toThrow(NftInvalidError);
    }
  });
});

describe('transaction: flowtable devices', () => {
  it('delete may name devices to take out (or none: the whole flowtable); destroy names none', () => {
    for (const devices of [['lo'], []]) expect(new Transaction().queue('delete', { ...flowtable, devices }).error).toBeUndefined();
    expect(new Transaction().queue('delete', { ...flowtable, devices: ['lo', 'lo'] }).error?.reason).toContain('listed twice');
    expect(new Transaction().queue('destroy', flowtable).error?.reason).toContain('destroy takes the whole flowtable');
  });
});

describe('transaction: the representative ruleset is valid', () => {
  it('queues without error', () => {
    const tx = new Transaction();
    for (const o of representativeObjects({ flowtable: true })) tx.add(o);
    expect(tx.error).toBeUndefined();
    expect(tx.ops().length).toBe(representativeObjects({ flowtable: true }).length);
  });

  it('uses every statement and selector kind', () => {
    const st = new Set<string>();
    const sel = new Set<string>();
    const addSel = (s: Selector) =>
      sel.add(s.kind === 'payload' ? `payload ${s.field}` : s.kind === 'meta' || s.kind === 'ct' ? `${s.kind} ${s.key}` : s.kind);
    for (const r of rules)
      for (const s of r.exprs) {
        st.add(s.kind === 'verdict' ? `verdict ${s.verdict}` : s.kind === 'reject' ? `reject ${s.with}` : s.kind);
        if (s.kind === 'match') addSel(s.left);
        if (s.kind === 'lookup' || s.kind === 'vmap' || s.kind === 'set-update' || s.kind === 'dnat-map') s.keys.forEach(addSel);
      }
    const allStatements: Array<Statement['kind']> = [
      'match',
      'lookup',
      'vmap',
      'counter',
      'verdict',
      'dnat',
      'dnat-map',
      'snat',
      'masquerade',
      'reject',
      'mark-set',
      'mark-xor',
      'set-update',
      'flow-offload',
      'notrack',
    ];
    for (const k of allStatements)
      expect(
        [...st].some((s) => s.split(' ')[0] === k),
        k,
      ).toBe(true);
    for (const v of ['accept', 'drop', 'return', 'continue', 'jump', 'goto']) expect(st.has(`verdict ${v}`), v).toBe(true);
    for (const w of ['icmp port-unreachable', 'icmpv6 port-unreachable', 'icmpx port-unreachable', 'tcp reset'])
      expect(st.has(`reject ${w}`), w).toBe(true);
    const allSelectors = [
      ...[
        'ip saddr',
        'ip daddr',
        'ip protocol',
        'ip6 saddr',
        'ip6 daddr',
        'ip6 nexthdr',
        'th sport',
        'th dport',
        'tcp dport',
        'udp dport',
        'sctp dport',
      ].map((f) => `payload ${f}`),
      ...['l4proto', 'nfproto', 'mark', 'iifname', 'oifname', 'iif', 'oif'].map((k) => `meta ${k}`),
      ...['state', 'status', 'mark', 'packets', 'bytes'].map((k) => `ct ${k}`),
      'ct-addr',
      'fib-type',
      'numgen',
    ];
    for (const s of allSelectors) expect(sel.has(s), s).toBe(true);
  });
});

describe('transaction: every error is found, the first is thrown', () => {
  it('checks every operation, remembers each error with its index, refuses to hand out ops', () => {
    const tx = new Transaction()
      .add(table)
      .add(chain(''))
      .add(chain('ok'))
      .add({ ...table, family: 'bridge' as never });
    expect(tx.error?.index).toBe(1);
    expect(tx.error?.reason).toBe('chain name must be a non-empty string');
    expect(tx.errors.map((e) => e.index)).toEqual([1, 3]);
    expect(tx.errors[1]!.reason).toContain('unknown family "bridge"');
    expect(tx.length).toBe(2);
    expect(() => tx.ops()).toThrow(/operation 1 \(add chain\)/);
  });

  it('queueAll checks operations made elsewhere with the same index, and knows sets through a lookup', () => {
    const s: NftSet = { kind: 'set', family: F, table: T, name: 's', keyType: ['ipv4_addr'] };
    const known = new Transaction((family, t, name) => (family === F && t === T && name === 's' ? s : undefined));
    known.queueAll([
      { verb: 'add', object: el('s', ['10.0.0.1']) },
      { verb: 'add', object: el('s', ['010.0.0.1']) },
    ]);
    expect(known.errors.map((e) => [e.index, e.reason])).toEqual([[1, expect.stringContaining('leading zero')]]);
    expect(new Transaction().queueAll([{ verb: 'add', object: el('s', ['010.0.0.1']) }]).error).toBeUndefined();
  });

  it('queueAll into an empty transaction keeps a valid list as it is; what is queued after goes to a copy', () => {
    const ops: Operation[] = [
      { verb: 'add', object: table },
      { verb: 'add', object: chain('a') },
    ];
    const tx = new Transaction().queueAll(ops);
    expect(tx.ops()).toBe(ops);
    tx.add(chain('b'));
    expect(ops).toHaveLength(2);
    expect(tx.ops().map((o) => o.object)).toEqual([table, chain('a'), chain('b')]);
    const bad = new Transaction().queueAll([...ops, { verb: 'add', object: chain('') }, { verb: 'add', object: chain('c') }]);
    expect(bad.length).toBe(3);
    expect(bad.errors.map((e) => e.index)).toEqual([2]);
    const after = new Transaction().add(table).queueAll([{ verb: 'add', object: chain('a') }]);
    expect(after.length).toBe(2);
  });

  it('queueGenerated checks what its source makes as operations() makes it, once for both, and keeps none until ops()', () => {
    const ops = (): Operation[] => [
      { verb: 'add', object: table },
      { verb: 'add', object: chain('a') },
    ];
    let made = 0;
    const source = (): Operation[] => {
      made++;
      return ops();
    };
    const tx = new Transaction().queueGenerated(source, 2);
    expect(made).toBe(0);
    expect(tx.length).toBe(2);
    expect(() => tx.add(chain('b'))).toThrow(/generated operations takes no more/);
    expect(() => tx.queueAll(ops())).toThrow(/generated operations takes no more/);
    // The first pass checks and gives, in one making; the later ones only give.
    expect([...tx.operations()]).toEqual(ops());
    expect(made).toBe(1);
    expect(tx.errors).toEqual([]);
    expect(tx.counts()).toEqual([
      { verb: 'add', kind: 'table', count: 1 },
      { verb: 'add', kind: 'chain', count: 1 },
    ]);
    expect([...tx.operations()]).toEqual(ops());
    expect(tx.check()).toBe(tx);
    expect(made).toBe(2);
    const listed = tx.ops();
    expect(listed).toEqual(ops());
    expect(tx.ops()).toBe(listed);
    expect(tx.operations()).toBe(listed);
    expect(made).toBe(3);
    expect(tx.length).toBe(2);
    // Listed before any pass: checked as they are listed, made once.
    let listings = 0;
    const listedFirst = new Transaction().queueGenerated(() => {
      listings++;
      return ops();
    }, 2);
    expect(listedFirst.ops()).toEqual(ops());
    expect(listings).toBe(1);
    expect(listedFirst.counts()).toHaveLength(2);

    expect(() => [...new Transaction().queueGenerated(ops, 3).operations()]).toThrow(/generated operations are 2, not the 3 announced/);
    let n = 2;
    const shrinking = new Transaction().queueGenerated(() => ops().slice(0, n--), 2);
    expect([...shrinking.operations()]).toHaveLength(2);
    expect(() => shrinking.ops()).toThrow(/made again are 1, not the 2 that were checked/);
    expect(() => new Transaction().add(table).queueGenerated(source, 2)).toThrow(/empty transaction/);
  });

  it('queueGenerated names every invalid operation by its index, gives none after the first, checks elements against its sets', () => {
    const set = sets.find((s) => s.kind === 'set' && s.keyType.length === 1 && s.keyType[0] === 'ipv4_addr')!;
    const source = (): Operation[] => [
      { verb: 'add', object: table },
      { verb: 'add', object: chain('') },
      { verb: 'add', object: set },
      { verb: 'add', object: el(set.name, ['10.0.0.1']) },
      { verb: 'add', object: el(set.name, ['not an address']) },
    ];
    // As a dataplane's encoding takes them: what it was given before the error, then the error once all are checked.
    const encoding = new Transaction().queueGenerated(source, 5);
    const given: Operation[] = [];
    expect(() => {
      for (const op of encoding.operations()) given.push(op);
    }).toThrow(NftInvalidError);
    expect(given).toEqual(source().slice(0, 1));
    expect(encoding.errors.map((e) => e.index)).toEqual([1, 4]);
    expect(encoding.length).toBe(3);
    expect(() => encoding.operations()).toThrow(NftInvalidError);
    expect(() => encoding.ops()).toThrow(NftInvalidError);

    const checked = new Transaction().queueGenerated(source, 5);
    expect(checked.errors).toEqual([]);
    expect(checked.check().errors.map((e) => e.index)).toEqual([1, 4]);
    expect(() => new Transaction().queueGenerated(source, 5).ops()).toThrow(NftInvalidError);
  });

  it('queueGenerated starts a pass that was given up half way over, counting nothing twice', () => {
    const source = (): Operation[] => [
      { verb: 'add', object: table },
      { verb: 'add', object: chain('a') },
      { verb: 'add', object: chain('') },
    ];
    const tx = new Transaction().queueGenerated(source, 3);
    for (const _ of tx.operations()) break;
    expect(tx.check().errors.map((e) => e.index)).toEqual([2]);
    expect(tx.counts()).toEqual([
      { verb: 'add', kind: 'table', count: 1 },
      { verb: 'add', kind: 'chain', count: 1 },
    ]);
  });

  it('counts the valid operations by verb and kind as it checks them, however they were queued', () => {
    const set = sets.find((s) => s.kind === 'set' && s.keyType.length === 1 && s.keyType[0] === 'ipv4_addr')!;
    const ops = (): Operation[] => [
      { verb: 'add', object: table },
      { verb: 'add', object: chain('a') },
      { verb: 'add', object: chain('') },
      { verb: 'flush', object: chain('a') },
      { verb: 'add', object: set },
      { verb: 'add', object: el(set.name, ['10.0.0.1']) },
      { verb: 'add', object: el(set.name, ['10.0.0.2']) },
    ];
    const expected = [
      { verb: 'add', kind: 'table', count: 1 },
      { verb: 'add', kind: 'chain', count: 1 },
      { verb: 'add', kind: 'set', count: 1 },
      { verb: 'add', kind: 'element', count: 2 },
      { verb: 'flush', kind: 'chain', count: 1 },
    ];
    expect(new Transaction().queueAll(ops()).counts()).toEqual(expected);
    expect(new Transaction().queueGenerated(ops, ops().length).check().counts()).toEqual(expected);
    const one = new Transaction();
    for (const op of ops()) one.queue(op.verb, op.object);
    expect(one.counts()).toEqual(expected);
    expect(new Transaction().counts()).toEqual([]);
  });

  it('validateOperations throws for the first bad operation', () => {
    const ops: Operation[] = [
      { verb: 'add', object: table },
      { verb: 'add', object: chain('ok') },
      { verb: 'flush', object: el('s', ['1.2.3.4']) },
      { verb: 'add', object: chain('') },
    ];
    expect(() => validateOperations(ops)).toThrow(NftInvalidError);
    try {
      validateOperations(ops);
    } catch (e) {
      expect((e as NftInvalidError).index).toBe(2);
      expect((e as NftInvalidError).operation).toEqual(ops[2]);
    }
  });
});

const vmapC = serviceIPs;
const dataMap: NftMap = { kind: 'map', family: F, table: T, name: 'dm', keyType: ['ifname'], dataType: 'mark' };
const ivSet: NftSet = { kind: 'set', family: F, table: T, name: 'iv', keyType: ['ipv4_addr'], flags: ['interval'] };
const plainSet: NftSet = { kind: 'set', family: F, table: T, name: 'plain', keyType: ['ipv6_addr'] };
const timeoutSet: NftSet = { kind: 'set', family: F, table: T, name: 'aff', keyType: ['ipv4_addr'], flags: ['timeout'] };
const epMap: NftMap = { kind: 'map', family: F, table: T, name: 'eps', keyType: ['integer'], dataType: ['ipv4_addr', 'inet_service'] };
const known = [vmapC, dataMap, ivSet, plainSet, timeoutSet, epMap];
const ng = { kind: 'numgen', mod: 2 } as const;
const tcpIs = { kind: 'match', left: { kind: 'meta', key: 'l4proto' }, op: '==', right: 'tcp' } as const;

// [description, objects (last one is checked), verb, reason substring or null when valid]
const cases: Array<[string, NftObject[], Verb, string | null]> = [
  ['255-byte name', [chain('x'.repeat(255))], 'add', null],
  ['256-byte name', [chain('x'.repeat(256))], 'add', 'longer than 255 bytes'],
  ['multi-byte name over the limit', [chain('é'.repeat(128))], 'add', 'longer than 255 bytes'],
  ['NUL in a name', [chain('a\0b')], 'add', 'NUL'],
  ['128-byte comment', [chain('c', undefined, 'x'.repeat(128))], 'add', null],
  ['129-byte comment', [chain('c', undefined, 'x'.repeat(129))], 'add', 'comment is longer than 128 bytes'],
  ['unknown family', [{ ...table, family: 'arp' as never }], 'add', 'unknown family'],
  ['nat chain on forward', [chain('c', { type: 'nat', hook: 'forward', priority: 0 })], 'add', 'cannot hook forward'],
  ['route chain on output', [chain('c', { type: 'route', hook: 'output', priority: 0 })], 'add', null],
  ['route chain on input', [chain('c', { type: 'route', hook: 'input', priority: 0 })], 'add', 'cannot hook input'],
  ['ingress base chain', [chain('c', { type: 'filter', hook: 'ingress', priority: 0 })], 'add', 'need a device'],
  ['fractional priority', [chain('c', { type: 'filter', hook: 'input', priority: 0.5 })], 'add', 'priority'],
  ['bad policy', [chain('c', { type: 'filter', hook: 'input', priority: 0, policy: 'reject' as never })], 'add', 'unknown policy'],
  ['delete chain ignores base fields', [chain('c', { type: 'nat', hook: 'forward', priority: 0 })], 'delete', null],
  ['set without key type', [{ ...plainSet, keyType: [] }], 'add', 'needs a key type'],
  ['verdict as key type', [{ ...plainSet, keyType: ['verdict'] }], 'add', 'cannot be a key type'],
  ['unknown set flag', [{ ...plainSet, flags: ['fast' as never] }], 'add', 'unknown set flag'],
  ['default timeout without flag', [{ ...plainSet, timeout: 5 }], 'add', 'needs the timeout flag'],
  ['element of the known vmap', [el('service-ips', ['10.96.0.1', 'tcp', '80'], { verdict: 'goto', chain: 'svc' })], 'add', null],
  ['element with wrong arity', [el('service-ips', ['10.96.0.1', 'tcp'], { verdict: 'accept' })], 'add', 'key has 2 parts'],
  ['element with an invalid key part', [el('service-ips', ['10.96.0.1', 'tcp', '70000'], { verdict: 'accept' })], 'add', 'key part 2'],
  ['element with a non-canonical key part', [el('service-ips', ['10.96.0.1', '6', '80'], { verdict: 'accept' })], 'add', 'write "tcp"'],
  ['non-canonical IPv6 key', [el('plain', ['FD00::1'])], 'add', 'write "fd00::1"'],
  ['vmap element with a string value', [el('service-ips', ['10.96.0.1', 'tcp', '80'], '0x1')], 'add', 'needs a verdict value'],
  ['vmap element without a value', [el('service-ips', ['10.96.0.1', 'tcp', '80'])], 'add', 'needs a value'],
  ['delete vmap element without a value', [el('service-ips', ['10.96.0.1', 'tcp', '80'])], 'delete', null],
  ['jump without chain', [el('service-ips', ['10.96.0.1', 'tcp', '80'], { verdict: 'jump' } as never)], 'add', 'jump target chain name'],
  [
    'accept with chain',
    [el('service-ips', ['10.96.0.1', 'tcp', '80'], { verdict: 'accept', chain: 'x' } as never)],
    'add',
    'takes no chain',
  ],
  ['data map with a verdict', [el('dm', ['eth0'], { verdict: 'accept' })], 'add', 'not verdicts'],
  ['data map with a bad mark', [el('dm', ['eth0'], '0x1000000000')], 'add', 'over 32 bits'],
  ['data map with a good mark', [el('dm', ['eth0'], '0x10')], 'add', null],
  ['set element with a value', [el('plain', ['fd00::1'], '1')], 'add', 'holds no values'],
  ['prefix in a plain set', [el('plain', ['fd00::/64'])], 'add', 'need an interval'],
  ['prefix in an interval set', [el('iv', ['10.0.0.0/8'])], 'add', null],
  ['prefix with host bits', [el('iv', ['10.0.0.1/8'])], 'add', 'host bits'],
  ['element timeout without flag', [el('plain', ['fd00::1'], undefined, { timeout: 5 })], 'add', 'no timeout flag'],
  ['element timeout with flag', [el('aff', ['10.0.0.1'], undefined, { timeout: 5 })], 'add', null],
  ['unknown container: only shape is checked', [el('elsewhere', ['anything', 'at all'])], 'add', null],
  ['container defined in the transaction', [{ ...plainSet, name: 'new' }, el('new', ['10.0.0.1'])], 'add', 'key part 0'],
  ['rule without statements', [rule('c', [])], 'add', 'at least one statement'],
  ['rule add with handle', [rule('c', [{ kind: 'counter' }], { handle: 3 })], 'add', 'takes no handle'],
  ['rule replace without handle', [rule('c', [{ kind: 'counter' }])], 'replace', "needs the rule's handle"],
  ['rule delete by handle, no statements', [rule('c', [], { handle: 3 })], 'delete', null],
  ['numgen mod 0', [rule('c', [{ kind: 'match', left: { kind: 'numgen', mod: 0 }, op: '==', right: '0' }])], 'add', 'numgen mod'],
  [
    'numgen value out of range',
    [rule('c', [{ kind: 'match', left: { kind: 'numgen', mod: 2 }, op: '==', right: '2' }])],
    'add',
    'expected an integer 0-1',
  ],
  [
    'numgen offset shifts the range',
    [rule('c', [{ kind: 'match', left: { kind: 'numgen', mod: 2, offset: 10 }, op: '==', right: '11' }])],
    'add',
    null,
  ],
  [
    'numgen offset past 2^32',
    [rule('c', [{ kind: 'match', left: { kind: 'numgen', mod: 2, offset: 0xffffffff }, op: '==', right: '0' }])],
    'add',
    'numgen offset',
  ],
  [
    'numgen negative offset',
    [rule('c', [{ kind: 'match', left: { kind: 'numgen', mod: 2, offset: -1 }, op: '==', right: '0' }])],
    'add',
    'numgen offset',
  ],
  [
    'dnat port 65536',
    [
      rule('c', [
        { kind: 'match', left: { kind: 'meta', key: 'l4proto' }, op: '==', right: 'tcp' },
        { kind: 'dnat', addr: '10.0.0.1', port: 65536 },
      ]),
    ],
    'add',
    'port must be 0-65535',
  ],
  ['dnat to a bad address', [rule('c', [{ kind: 'dnat', addr: '10.0.0.256' }])], 'add', 'dnat address'],
  ['dnat to a prefix', [rule('c', [{ kind: 'dnat', addr: '10.0.0.0/8' }])], 'add', 'not a prefix'],
  [
    'IPv6 dnat in an ip table',
    [{ ...rule('c', [{ kind: 'dnat', addr: 'fd00::1' }]), family: 'ip' }],
    'add',
    'cannot be used in a ip table',
  ],
  [
    'ip6 match in an ip table',
    [{ ...rule('c', [{ kind: 'match', left: { kind: 'payload', field: 'ip6 saddr' }, op: '==', right: 'fd00::1' }]), family: 'ip' }],
    'add',
    'ip6 saddr cannot be used in a ip table',
  ],
  [
    'ip match in an ip6 table',
    [
      {
        ...rule('c', [{ kind: 'match', left: { kind: 'ct-addr', dir: 'original', field: 'ip daddr' }, op: '==', right: '10.0.0.1' }]),
        family: 'ip6',
      },
    ],
    'add',
    'cannot be used in a ip6 table',
  ],
  ['icmpx reject outside inet', [{ ...rule('c', [{ kind: 'reject', with: 'icmpx port-unreachable' }]), family: 'ip' }], 'add', 'icmpx'],
  [
    'match: ipv4 operand for an ipv6 selector',
    [rule('c', [{ kind: 'match', left: { kind: 'payload', field: 'ip6 daddr' }, op: '==', right: '10.0.0.1' }])],
    'add',
    'ip6 daddr',
  ],
  [
    'match: prefix operand',
    [rule('c', [{ kind: 'match', left: { kind: 'payload', field: 'ip daddr' }, op: '==', right: '10.0.0.0/8' }])],
    'add',
    null,
  ],
  [
    'match: < on an address',
    [rule('c', [{ kind: 'match', left: { kind: 'payload', field: 'ip daddr' }, op: '<', right: '10.0.0.1' }])],
    'add',
    'only compares with',
  ],
  [
    'match: unknown ct state',
    [rule('c', [{ kind: 'match', left: { kind: 'ct', key: 'state' }, op: '==', right: 'established,sleepy' }])],
    'add',
    '"sleepy" is not one of',
  ],
  [
    'match: fib type',
    [rule('c', [{ kind: 'match', left: { kind: 'fib-type', addr: 'daddr' }, op: '==', right: 'locale' }])],
    'add',
    'is not one of',
  ],
  [
    'match: port 70000',
    [rule('c', [{ kind: 'match', left: { kind: 'payload', field: 'th dport' }, op: '==', right: '70000' }])],
    'add',
    'out of range',
  ],
  [
    'match: mask on an address',
    [rule('c', [{ kind: 'match', left: { kind: 'payload', field: 'ip daddr' }, op: '==', right: '10.0.0.1', mask: '0xff' }])],
    'add',
    'cannot be masked',
  ],
  ['verdict not last', [rule('c', [{ kind: 'verdict', verdict: 'accept' }, { kind: 'counter' }])], 'add', 'more statements follow'],
  [
    'vmap on a known set',
    [rule('c', [{ kind: 'vmap', keys: [{ kind: 'payload', field: 'ip daddr' }], map: 'iv' }])],
    'add',
    'not a verdict map',
  ],
  ['vmap on a data map', [rule('c', [{ kind: 'vmap', keys: [{ kind: 'meta', key: 'iifname' }], map: 'dm' }])], 'add', 'not a verdict map'],
  [
    'vmap keys mismatch',
    [
      rule('c', [
        {
          kind: 'vmap',
          keys: [
            { kind: 'payload', field: 'ip daddr' },
            { kind: 'payload', field: 'th dport' },
          ],
          map: 'service-ips',
        },
      ]),
    ],
    'add',
    'do not match',
  ],
  [
    'vmap keys match',
    [
      rule('c', [
        {
          kind: 'vmap',
          keys: serviceKeys,
          map: 'service-ips',
        },
      ]),
    ],
    'add',
    null,
  ],
  ['lookup keyed by ct state', [rule('c', [{ kind: 'lookup', keys: [{ kind: 'ct', key: 'state' }], set: 'x' }])], 'add', 'cannot key'],
  ['lookup on a map', [rule('c', [{ kind: 'lookup', keys: [{ kind: 'meta', key: 'iifname' }], set: 'dm' }])], 'add', 'is a map'],
  [
    'set-update with timeout on a set without the flag',
    [rule('c', [{ kind: 'set-update', op: 'update', set: 'plain', keys: [{ kind: 'payload', field: 'ip6 saddr' }], timeout: 5 }])],
    'add',
    'no timeout flag',
  ],
  [
    'set-update on an interval set',
    [rule('c', [{ kind: 'set-update', op: 'add', set: 'iv', keys: [{ kind: 'payload', field: 'ip saddr' }] }])],
    'add',
    'interval set',
  ],
  [
    'set-update with timeout',
    [rule('c', [{ kind: 'set-update', op: 'update', set: 'aff', keys: [{ kind: 'payload', field: 'ip saddr' }], timeout: 5 }])],
    'add',
    null,
  ],
  ['mark-set with a bad mark', [rule('c', [{ kind: 'mark-set', value: 'x' }])], 'add', 'mark'],
  ['non-canonical mark', [rule('c', [{ kind: 'mark-xor', value: '16384' }])], 'add', 'write "0x4000"'],
  ['dnat-map to a map of address . port', [rule('c', [tcpIs, { kind: 'dnat-map', family: 'ip', keys: [ng], map: 'eps' }])], 'add', null],
  [
    'dnat-map without a transport match',
    [rule('c', [{ kind: 'dnat-map', family: 'ip', keys: [ng], map: 'eps' }])],
    'add',
    'port mapping needs',
  ],
  [
    'dnat-map to a verdict map',
    [
      rule('c', [
        tcpIs,
        {
          kind: 'dnat-map',
          family: 'ip',
          keys: serviceKeys,
          map: 'service-ips',
        },
      ]),
    ],
    'add',
    'not a map to ipv4_addr . inet_service',
  ],
  [
    'dnat-map of the other family',
    [rule('c', [tcpIs, { kind: 'dnat-map', family: 'ip6', keys: [ng], map: 'eps' }])],
    'add',
    'not a map to ipv6_addr . inet_service',
  ],
  [
    'dnat-map keys mismatch',
    [rule('c', [tcpIs, { kind: 'dnat-map', family: 'ip', keys: [{ kind: 'payload', field: 'ip daddr' }], map: 'eps' }])],
    'add',
    'do not match',
  ],
  [
    'dnat-map ip6 in an ip table',
    [{ ...rule('c', [tcpIs, { kind: 'dnat-map', family: 'ip6', keys: [ng], map: 'x' }]), family: 'ip' }],
    'add',
    'cannot be used in a ip table',
  ],
  ['64-bit integer key', [rule('c', [{ kind: 'lookup', keys: [{ kind: 'ct', key: 'packets' }], set: 'x' }])], 'add', 'cannot key'],
  ['concatenated data element', [el('eps', ['0'], ['10.0.0.1', '80'])], 'add', null],
  ['concatenated data with one text', [el('eps', ['0'], '10.0.0.1')], 'add', 'one text per part'],
  ['concatenated data with a bad port', [el('eps', ['1'], ['10.0.0.1', '65536'])], 'add', 'value part 1'],
  ['integer key not canonical', [el('eps', ['01'], ['10.0.0.1', '80'])], 'add', 'key part 0'],
  ['concatenated value in a one-type map', [el('dm', ['eth0'], ['0x1', '0x2'])], 'add', 'not concatenations'],
  ['one-part concatenated data', [{ ...epMap, name: 'one', dataType: ['ipv4_addr'] }], 'add', 'at least two types'],
  [
    'verdict inside concatenated data',
    [{ ...epMap, name: 'v', dataType: ['ipv4_addr', 'verdict'] }],
    'add',
    'cannot be part of concatenated data',
  ],
  ['flowtable with a bad device', [{ ...flowtable, devices: ['eth/0'] }], 'add', 'flowtable device'],
  ['flowtable with a device twice', [{ ...flowtable, devices: ['eth0', 'eth0'] }], 'add', 'listed twice'],
];

describe('transaction: checks', () => {
  it.each(cases)('%s', (_d, objs, verb, reason) => {
    const err = firstError(objs, verb, known);
    if (reason === null) expect(err).toBeUndefined();
    else {
      expect(err, 'expected an error').toBeInstanceOf(NftInvalidError);
      expect(err!.index).toBe(objs.length - 1);
      expect(err!.reason).toContain(reason);
    }
  });
});

describe('selectorType', () => {
  const table: Array<[Selector, string]> = [
    [{ kind: 'payload', field: 'ip daddr' }, 'ipv4_addr'],
    [{ kind: 'payload', field: 'ip6 saddr' }, 'ipv6_addr'],
    [{ kind: 'payload', field: 'ip protocol' }, 'inet_proto'],
    [{ kind: 'payload', field: 'ip6 nexthdr' }, 'inet_proto'],
    [{ kind: 'payload', field: 'th dport' }, 'inet_service'],
    [{ kind: 'payload', field: 'udp dport' }, 'inet_service'],
    [{ kind: 'meta', key: 'l4proto' }, 'inet_proto'],
    [{ kind: 'meta', key: 'nfproto' }, 'nf_proto'],
    [{ kind: 'meta', key: 'mark' }, 'mark'],
    [{ kind: 'meta', key: 'oifname' }, 'ifname'],
    [{ kind: 'meta', key: 'iif' }, 'integer'],
    [{ kind: 'ct', key: 'state' }, 'ct_state'],
    [{ kind: 'ct', key: 'status' }, 'ct_status'],
    [{ kind: 'ct', key: 'mark' }, 'mark'],
    [{ kind: 'ct', key: 'packets' }, 'integer'],
    [{ kind: 'ct-addr', dir: 'original', field: 'ip daddr' }, 'ipv4_addr'],
    [{ kind: 'ct-addr', dir: 'reply', field: 'ip6 saddr' }, 'ipv6_addr'],
    [{ kind: 'fib-type', addr: 'daddr' }, 'fib_type'],
    [{ kind: 'numgen', mod: 3 }, 'integer'],
  ];
  it.each(table)('%j → %s', (s, t) => expect(selectorType(s)).toBe(t));
});

describe('transaction: printable and transport checks', () => {
  const l4 = { kind: 'meta', key: 'l4proto' } as const;
  const more: Array<[string, NftObject, string | null]> = [
    ['double quote in a name', chain('a"b'), 'double quote'],
    ['double quote in a comment', chain('c', undefined, 'say "hi"'), 'double quote'],
    ['dnat port without a protocol match', rule('c', [{ kind: 'dnat', addr: '10.0.0.1', port: 80 }]), 'port mapping needs'],
    [
      'dnat port after l4proto != tcp',
      rule('c', [
        { kind: 'match', left: l4, op: '!=', right: 'tcp' },
        { kind: 'dnat', addr: '10.0.0.1', port: 80 },
      ]),
      'port mapping needs',
    ],
    [
      'dnat port after l4proto icmp',
      rule('c', [
        { kind: 'match', left: l4, op: '==', right: 'icmp' },
        { kind: 'dnat', addr: '10.0.0.1', port: 80 },
      ]),
      'port mapping needs',
    ],
    [
      'dnat port after l4proto tcp',
      rule('c', [
        { kind: 'match', left: l4, op: '==', right: 'tcp' },
        { kind: 'dnat', addr: '10.0.0.1', port: 80 },
      ]),
      null,
    ],
    [
      'snat port after udp dport',
      rule('c', [
        { kind: 'match', left: { kind: 'payload', field: 'udp dport' }, op: '==', right: '53' },
        { kind: 'snat', addr: '10.0.0.1', port: 53 },
      ]),
      null,
    ],
    ['dnat without port needs nothing', rule('c', [{ kind: 'dnat', addr: '10.0.0.1' }]), null],
  ];
  it.each(more)('%s', (_d, obj, reason) => {
    const err = new Transaction().add(obj).error;
    if (reason === null) expect(err).toBeUndefined();
    else expect(err?.reason).toContain(reason);
  });
});

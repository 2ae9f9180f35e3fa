// What the kernel does with a transaction, as a table: the fake kernel's pure
// tests assert these outcomes, and the oracle test replays the same scenarios
// against the real kernel (via `nft -f` in a netns) and asserts the same.

import type { Chain, Element, NftMap, NftObject, NftSet, Operation, Rule, Statement } from '../../src/nft/objects.ts';
import { chain, el, F, rule, T, table } from './fixtures.ts';

const op =
  (verb: Operation['verb']) =>
  (object: NftObject): Operation => ({ verb, object });
export const add = op('add');
export const create = op('create');
export const insert = op('insert');
export const replace = op('replace');
export const del = op('delete');
export const destroy = op('destroy');
export const flush = op('flush');

export const base = (
  name: string,
  type: 'filter' | 'nat',
  hook: NonNullable<Chain['base']>['hook'],
  priority = 0,
  policy?: 'accept' | 'drop',
): Chain => chain(name, { type, hook, priority, ...(policy ? { policy } : {}) });

export const vm: NftMap = { kind: 'map', family: F, table: T, name: 'vm', keyType: ['ipv4_addr'], dataType: 'verdict' };
export const marks: NftMap = { kind: 'map', family: F, table: T, name: 'marks', keyType: ['ifname'], dataType: 'mark' };
export const ips: NftSet = { kind: 'set', family: F, table: T, name: 'ips', keyType: ['ipv4_addr'] };
export const ranges: NftSet = { kind: 'set', family: F, table: T, name: 'ranges', keyType: ['ipv4_addr'], flags: ['interval'] };
export const aff: NftSet = { kind: 'set', family: F, table: T, name: 'aff', keyType: ['ipv4_addr'], flags: ['timeout'] };

const jump = (target: string): Statement => ({ kind: 'verdict', verdict: 'jump', chain: target });
const gotoS = (target: string): Statement => ({ kind: 'verdict', verdict: 'goto', chain: target });
const daddr = { kind: 'payload', field: 'ip daddr' } as const;
const tcp: Statement = { kind: 'match', left: { kind: 'meta', key: 'l4proto' }, op: '==', right: 'tcp' };

/** Rule handles as the kernel (or the fake) numbered them: handle(chain, i) is the i-th rule of chain. */
export type HandleOf = (chain: string, i: number) => number;

export interface Scenario {
  name: string;
  /** Applied first, in its own transaction, and must succeed. */
  setup: Operation[];
  /** The transaction under test. */
  tx: (h: HandleOf) => Operation[];
  /** 'ok', the errno code of the first failure, or 'invalid' (NftInvalidError: refused before anything is sent). */
  expect: 'ok' | 'invalid' | string;
  /** What the kernel answers when an 'invalid' transaction is sent anyway (as nft -f does). */
  kernelCode?: string;
  /** Whether the netlink dataplane can encode it (it must know a set's types to encode its elements). */
  netlink?: boolean;
  /** Operation index the failure is blamed on (checked where given). */
  index?: number;
  /** Whether nft 1.0.6 can express it (no `destroy`), so the oracle can replay it. */
  oracle?: boolean;
  /** Flowtables available to the fake (the oracle's kernel has none). */
  flowtables?: boolean;
}

/** A table with a little of everything: base chains, regular chains, a verdict map, sets. */
export const world: Operation[] = [
  add(table),
  add(base('input', 'filter', 'input', 0, 'accept')),
  add(base('nat-pre', 'nat', 'prerouting', -100)),
  add(base('nat-post', 'nat', 'postrouting', 100)),
  add(chain('c')),
  add(chain('svc')),
  add(chain('ep')),
  add(vm),
  add(marks),
  add(ips),
  add(ranges),
  add(aff),
  add(rule('c', [{ kind: 'counter' }])),
  add(rule('c', [{ kind: 'verdict', verdict: 'accept' }])),
  add(rule('nat-pre', [{ kind: 'vmap', keys: [daddr], map: 'vm' }])),
  add(rule('svc', [gotoS('ep')])),
  add(rule('ep', [tcp, { kind: 'dnat', addr: '10.1.0.1', port: 80 }])),
  add(rule('input', [{ kind: 'lookup', keys: [daddr], set: 'ips' }, jump('c')])),
  add(el('vm', ['10.96.0.1'], { verdict: 'goto', chain: 'svc' })),
  add(el('vm', ['10.96.0.2'], { verdict: 'drop' })),
  add(el('marks', ['eth0'], '0x1')),
  add(el('ips', ['192.0.2.1'])),
  add(el('ranges', ['10.0.0.0/8'])),
];

const R = (c: string, exprs: Statement[], handle?: number): Rule => rule(c, exprs, handle === undefined ? {} : { handle });
const E = (set: string, key: string[], value?: Element['value']): Element => el(set, key, value);

export const scenarios: Scenario[] = [
  // tables
  { name: 'add an existing table', setup: world, tx: () => [add(table)], expect: 'ok' },
  { name: 'create an existing table', setup: world, tx: () => [create(table)], expect: 'EEXIST', index: 0 },
  { name: 'delete a missing table', setup: [], tx: () => [del(table)], expect: 'ENOENT', index: 0 },
  { name: 'delete a table with everything in it', setup: world, tx: () => [del(table)], expect: 'ok' },
  { name: 'flush table removes rules, keeps chains, sets and elements', setup: world, tx: () => [flush(table)], expect: 'ok' },
  { name: 'an object in a missing table', setup: [], tx: () => [add(chain('c'))], expect: 'ENOENT', index: 0 },
  // chains
  { name: 'add an existing chain', setup: world, tx: () => [add(chain('c'))], expect: 'ok' },
  { name: 'create an existing chain', setup: world, tx: () => [create(chain('c'))], expect: 'EEXIST', index: 0 },
  {
    name: 'add a base chain again with another policy updates it',
    setup: world,
    tx: () => [add(base('input', 'filter', 'input', 0, 'drop'))],
    expect: 'ok',
  },
  {
    name: 'add a base chain again with another priority',
    setup: world,
    tx: () => [add(base('input', 'filter', 'input', 10))],
    expect: 'EOPNOTSUPP',
    index: 0,
  },
  {
    name: 'add a base chain again with another hook',
    setup: world,
    tx: () => [add(base('input', 'filter', 'output'))],
    expect: 'EOPNOTSUPP',
    index: 0,
  },
  {
    name: 'add a base chain again with another type',
    setup: world,
    tx: () => [add(base('input', 'nat', 'input'))],
    expect: 'EEXIST',
    index: 0,
  },
  {
    name: 'turn a regular chain into a base chain',
    setup: world,
    tx: () => [add(base('c', 'filter', 'input'))],
    expect: 'EEXIST',
    index: 0,
  },
  { name: 'add a base chain again without its base fields', setup: world, tx: () => [add(chain('input'))], expect: 'ok' },
  { name: 'delete a missing chain', setup: world, tx: () => [del(chain('nope'))], expect: 'ENOENT', index: 0 },
  {
    name: 'delete a chain with rules (they go with it)',
    setup: [...world, add(chain('lonely')), add(R('lonely', [{ kind: 'counter' }]))],
    tx: () => [del(chain('lonely'))],
    expect: 'ok',
  },
  { name: 'delete a chain a rule jumps to', setup: world, tx: () => [del(chain('c'))], expect: 'EBUSY', index: 0 },
  { name: 'delete a chain a map element jumps to', setup: world, tx: () => [del(chain('svc'))], expect: 'EBUSY', index: 0 },
  {
    name: 'delete a chain after flushing the map that pointed at it',
    setup: world,
    tx: () => [flush(vm), del(chain('svc'))],
    expect: 'ok',
  },
  {
    name: 'delete a chain after deleting the rule that jumped to it',
    setup: world,
    tx: (h) => [del(R('input', [], h('input', 0))), del(chain('c'))],
    expect: 'ok',
  },
  { name: 'flush a missing chain', setup: world, tx: () => [flush(chain('nope'))], expect: 'ENOENT', index: 0 },
  { name: 'flush a chain', setup: world, tx: () => [flush(chain('c'))], expect: 'ok' },
  // rules
  { name: 'a rule in a missing chain', setup: world, tx: () => [add(R('nope', [{ kind: 'counter' }]))], expect: 'ENOENT', index: 0 },
  { name: 'a jump to a missing chain', setup: world, tx: () => [add(R('c', [jump('nope')]))], expect: 'ENOENT', index: 0 },
  { name: 'a jump to a base chain', setup: world, tx: () => [add(R('c', [jump('input')]))], expect: 'EOPNOTSUPP', index: 0 },
  {
    name: 'a lookup in a missing set',
    setup: world,
    tx: () => [add(R('c', [{ kind: 'lookup', keys: [daddr], set: 'nope' }]))],
    expect: 'ENOENT',
    index: 0,
  },
  {
    name: 'a vmap on a missing map',
    setup: world,
    tx: () => [add(R('c', [{ kind: 'vmap', keys: [daddr], map: 'nope' }]))],
    expect: 'ENOENT',
    index: 0,
  },
  {
    name: 'insert prepends, add appends, replace keeps the handle',
    setup: world,
    tx: (h) => [
      insert(R('c', [{ kind: 'notrack' }])),
      add(R('c', [{ kind: 'verdict', verdict: 'drop' }])),
      replace(R('c', [{ kind: 'verdict', verdict: 'return' }], h('c', 1))),
    ],
    expect: 'ok',
  },
  { name: 'replace a missing handle', setup: world, tx: () => [replace(R('c', [{ kind: 'counter' }], 9999))], expect: 'ENOENT', index: 0 },
  { name: 'delete a missing handle', setup: world, tx: () => [del(R('c', [], 9999))], expect: 'ENOENT', index: 0 },
  { name: 'delete a rule by handle', setup: world, tx: (h) => [del(R('c', [], h('c', 0)))], expect: 'ok' },
  // sets, maps and elements
  { name: 'add an existing set', setup: world, tx: () => [add(ips)], expect: 'ok' },
  { name: 'create an existing set', setup: world, tx: () => [create(ips)], expect: 'EEXIST', index: 0 },
  {
    name: 'add an existing set with other flags',
    setup: world,
    tx: () => [add({ ...ips, flags: ['interval'] })],
    expect: 'EEXIST',
    index: 0,
  },
  {
    name: 'add an existing set with another key type',
    setup: world,
    tx: () => [add({ ...ips, keyType: ['ipv6_addr'] })],
    expect: 'EEXIST',
    index: 0,
  },
  { name: 'delete a set a rule uses', setup: world, tx: () => [del(ips)], expect: 'EBUSY', index: 0 },
  { name: 'delete a map a rule uses', setup: world, tx: () => [del(vm)], expect: 'EBUSY', index: 0 },
  { name: 'delete an unused set with elements', setup: world, tx: () => [del(ranges)], expect: 'ok' },
  { name: 'delete a missing set', setup: world, tx: () => [del({ ...ips, name: 'nope' })], expect: 'ENOENT', index: 0 },
  { name: 'flush a missing set', setup: world, tx: () => [flush({ ...ips, name: 'nope' })], expect: 'ENOENT', index: 0 },
  { name: 'flush a map', setup: world, tx: () => [flush(vm)], expect: 'ok' },
  {
    name: 'add an existing element with the same value',
    setup: world,
    tx: () => [add(E('vm', ['10.96.0.1'], { verdict: 'goto', chain: 'svc' }))],
    expect: 'ok',
  },
  {
    name: 'add an existing element with another verdict',
    setup: world,
    tx: () => [add(E('vm', ['10.96.0.1'], { verdict: 'goto', chain: 'ep' }))],
    expect: 'EEXIST',
    index: 0,
  },
  {
    name: 'add an existing element with another value',
    setup: world,
    tx: () => [add(E('marks', ['eth0'], '0x2'))],
    expect: 'EEXIST',
    index: 0,
  },
  { name: 'create an existing element', setup: world, tx: () => [create(E('ips', ['192.0.2.1']))], expect: 'EEXIST', index: 0 },
  { name: 'delete a missing element', setup: world, tx: () => [del(E('ips', ['192.0.2.99']))], expect: 'ENOENT', index: 0 },
  { name: 'delete a map element whatever value is given', setup: world, tx: () => [del(E('marks', ['eth0'], '0x7'))], expect: 'ok' },
  {
    name: 'an element of a missing set',
    setup: world,
    tx: () => [add(E('nope', ['192.0.2.1']))],
    expect: 'ENOENT',
    index: 0,
    netlink: false,
  },
  {
    name: 'an element going to a missing chain',
    setup: world,
    tx: () => [add(E('vm', ['10.96.0.9'], { verdict: 'goto', chain: 'nope' }))],
    expect: 'ENOENT',
    index: 0,
  },
  {
    name: 'an element jumping to a base chain',
    setup: world,
    tx: () => [add(E('vm', ['10.96.0.9'], { verdict: 'jump', chain: 'input' }))],
    expect: 'EOPNOTSUPP',
    index: 0,
  },
  {
    name: 'an element timeout in a set without the timeout flag',
    setup: world,
    tx: () => [add({ ...E('ips', ['192.0.2.7']), timeout: 5 })],
    expect: 'invalid',
    kernelCode: 'EINVAL',
    index: 0,
  },
  { name: 'an element timeout in a timeout set', setup: world, tx: () => [add({ ...E('aff', ['192.0.2.7']), timeout: 5 })], expect: 'ok' },
  { name: 'an interval overlapping another', setup: world, tx: () => [add(E('ranges', ['10.1.0.0/16']))], expect: 'EEXIST' },
  { name: 'the same interval again', setup: world, tx: () => [add(E('ranges', ['10.0.0.0/8']))], expect: 'ok' },
  {
    name: 'an interval next to another',
    setup: world,
    tx: () => [add(E('ranges', ['11.0.0.0/8'])), add(E('ranges', ['9.255.255.255']))],
    expect: 'ok',
  },
  // atomicity
  {
    name: 'one bad operation: nothing applies',
    setup: world,
    tx: () => [add(chain('new')), add(E('ips', ['192.0.2.50'])), add(R('c', [jump('nope')]))],
    expect: 'ENOENT',
    index: 2,
  },
  {
    name: 'definitions and uses in one transaction',
    setup: [add(table)],
    tx: () => [
      add(chain('a')),
      add({ ...vm, name: 'm2' }),
      add(E('m2', ['10.0.0.1'], { verdict: 'goto', chain: 'a' })),
      add(base('pre', 'nat', 'prerouting', -100)),
      add(R('pre', [{ kind: 'vmap', keys: [daddr], map: 'm2' }])),
    ],
    expect: 'ok',
  },
  // paths from base chains
  {
    name: 'a jump loop reachable from a base chain',
    setup: [...world, add(chain('x')), add(chain('y')), add(R('c', [jump('x')]))],
    tx: () => [add(R('x', [jump('y')])), add(R('y', [jump('x')]))],
    expect: 'EMLINK',
  },
  {
    name: 'a loop through a verdict map',
    setup: world,
    tx: () => [add(R('ep', [{ kind: 'vmap', keys: [daddr], map: 'vm' }]))],
    expect: 'EMLINK',
  },
  {
    name: 'a jump loop no base chain reaches',
    setup: [...world, add(chain('x')), add(chain('y'))],
    tx: () => [add(R('x', [jump('y')])), add(R('y', [jump('x')]))],
    expect: 'ok',
  },
  {
    name: 'masquerade reachable from a filter chain',
    setup: [...world, add(chain('m')), add(R('m', [{ kind: 'masquerade' }]))],
    tx: () => [add(R('c', [jump('m')]))],
    expect: 'EOPNOTSUPP',
    index: 0,
  },
  {
    name: 'masquerade reachable from nat postrouting',
    setup: [...world, add(chain('m')), add(R('m', [{ kind: 'masquerade' }]))],
    tx: () => [add(R('nat-post', [jump('m')]))],
    expect: 'ok',
  },
  {
    name: 'dnat reachable from nat postrouting',
    setup: world,
    tx: () => [add(R('nat-post', [jump('svc')]))],
    expect: 'EOPNOTSUPP',
    index: 0,
  },
  {
    name: 'snat in nat prerouting',
    setup: world,
    tx: () => [add(R('nat-pre', [{ kind: 'snat', addr: '192.0.2.1' }]))],
    expect: 'EOPNOTSUPP',
    index: 0,
  },
  {
    name: 'dnat reached through a new map element',
    setup: [...world, add({ ...vm, name: 'vm-in' }), add(R('input', [{ kind: 'vmap', keys: [daddr], map: 'vm-in' }]))],
    tx: () => [add(E('vm-in', ['10.0.0.1'], { verdict: 'goto', chain: 'svc' }))],
    expect: 'EOPNOTSUPP',
    index: 0,
  },
  {
    name: '15 nested jumps are fine',
    setup: [add(table), add(base('b', 'filter', 'input')), ...Array.from({ length: 15 }, (_, i) => add(chain(`j${i}`)))],
    tx: () => [add(R('b', [jump('j0')])), ...Array.from({ length: 14 }, (_, i) => add(R(`j${i}`, [jump(`j${i + 1}`)])))],
    expect: 'ok',
  },
  {
    name: '16 nested jumps are too many',
    setup: [add(table), add(base('b', 'filter', 'input')), ...Array.from({ length: 16 }, (_, i) => add(chain(`j${i}`)))],
    tx: () => [add(R('b', [jump('j0')])), ...Array.from({ length: 15 }, (_, i) => add(R(`j${i}`, [jump(`j${i + 1}`)])))],
    expect: 'EMLINK',
  },
  // flowtables: this kernel has none
  {
    name: 'a flowtable without kernel support',
    setup: world,
    tx: () => [add({ kind: 'flowtable', family: F, table: T, name: 'ft', hook: 'ingress', priority: 0, devices: ['lo'] })],
    expect: 'ENOENT',
    index: 0,
    flowtables: false,
  },
  // destroy (kernel 6.3+; nft 1.0.6 cannot say it, so these are checked in the fake only)
  {
    name: 'destroy what is missing',
    setup: world,
    tx: () => [
      destroy({ ...table, name: 'nope' }),
      destroy(chain('nope')),
      destroy({ ...ips, name: 'nope' }),
      destroy(E('ips', ['1.1.1.1'])),
      destroy(R('c', [], 9999)),
      destroy(R('nope', [], 1)),
      destroy({ kind: 'flowtable', family: F, table: T, name: 'nope', hook: 'ingress', priority: 0, devices: [] }),
    ],
    expect: 'ok',
    oracle: false,
  },
  {
    name: 'destroy what exists',
    setup: world,
    tx: (h) => [destroy(E('ips', ['192.0.2.1'])), destroy(R('c', [], h('c', 0))), destroy(ranges), destroy(chain('ep'))],
    expect: 'EBUSY',
    index: 3,
    oracle: false,
  },
  { name: 'destroy a table', setup: world, tx: () => [destroy(table)], expect: 'ok', oracle: false },
];

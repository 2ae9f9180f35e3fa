import { describe, expect, it } from 'vitest';
import type { Element, NftMap, Operation } from '../../src/nft/objects.ts';
import { renderName, renderOperations, renderTableText } from '../../src/nft/render-text.ts';
import { chain, el, F, flowtable, rule, serviceIPs, serviceKeys, T, table } from './fixtures.ts';

const vmap = serviceIPs;

describe('renderName', () => {
  it.each([
    ['service-ips', 'service-ips'],
    ['service-ULMVA6XW-ns1/svc1/tcp/p80', 'service-ULMVA6XW-ns1/svc1/tcp/p80'],
    ['a.b_c', 'a.b_c'],
    ['_x', '_x'],
    ['1abc', '"1abc"'],
    ['a b', '"a b"'],
    ['a@b', '"a@b"'],
    ['counter', '"counter"'],
    ['tcp', '"tcp"'],
    ['services', 'services'],
  ])('%s → %s', (n, want) => expect(renderName(n)).toBe(want));
});

describe('renderOperations: golden', () => {
  it('every object kind with its verbs', () => {
    const ops: Operation[] = [
      { verb: 'add', object: table },
      { verb: 'add', object: chain('nat-prerouting', { type: 'nat', hook: 'prerouting', priority: -100, policy: 'accept' }) },
      { verb: 'create', object: chain('services', undefined, 'all services') },
      { verb: 'add', object: vmap },
      {
        verb: 'add',
        object: { kind: 'set', family: F, table: T, name: 'aff', keyType: ['ipv4_addr'], flags: ['dynamic', 'timeout'], timeout: 10800 },
      },
      { verb: 'add', object: { kind: 'map', family: F, table: T, name: 'marks', keyType: ['ifname'], dataType: 'mark' } },
      { verb: 'add', object: el('marks', ['eth0'], '0x4000') },
      { verb: 'add', object: el('service-ips', ['10.96.0.1', 'tcp', '80'], { verdict: 'goto', chain: 'service-X' }) },
      { verb: 'add', object: el('service-ips', ['10.96.0.10', 'udp', '53'], { verdict: 'goto', chain: 'service-Y' }, { comment: 'dns' }) },
      { verb: 'create', object: el('aff', ['10.0.0.1'], undefined, { timeout: 30 }) },
      { verb: 'delete', object: el('service-ips', ['10.96.0.2', 'tcp', '80'], { verdict: 'accept' }) },
      { verb: 'destroy', object: el('service-ips', ['10.96.0.3', 'tcp', '80']) },
      {
        verb: 'add',
        object: rule('services', [
          {
            kind: 'vmap',
            keys: serviceKeys,
            map: 'service-ips',
          },
        ]),
      },
      { verb: 'insert', object: rule('services', [{ kind: 'counter' }], { comment: 'first' }) },
      { verb: 'replace', object: rule('services', [{ kind: 'verdict', verdict: 'accept' }], { handle: 7 }) },
      { verb: 'delete', object: rule('services', [], { handle: 8 }) },
      { verb: 'destroy', object: rule('services', [], { handle: 9 }) },
      { verb: 'add', object: flowtable },
      { verb: 'add', object: { ...flowtable, name: 'empty', devices: [] } },
      { verb: 'flush', object: chain('services') },
      { verb: 'flush', object: vmap },
      { verb: 'flush', object: table },
      { verb: 'delete', object: { ...flowtable, devices: ['eth1'] } },
      { verb: 'delete', object: { ...flowtable, devices: [] } },
      { verb: 'destroy', object: chain('gone') },
      { verb: 'delete', object: vmap },
      { verb: 'destroy', object: { ...table, name: 'old' } },
      { verb: 'delete', object: table },
    ];
    expect(renderOperations(ops)).toBe(
      [
        'add table inet kube-nft-proxy { comment "rules for kube-nft-proxy" ; }',
        'add chain inet kube-nft-proxy nat-prerouting { type nat hook prerouting priority -100 ; policy accept ; }',
        'create chain inet kube-nft-proxy services { comment "all services" ; }',
        'add map inet kube-nft-proxy service-ips { type ipv4_addr . inet_proto . inet_service : verdict ; }',
        'add set inet kube-nft-proxy aff { type ipv4_addr ; flags dynamic,timeout ; timeout 10800s ; }',
        'add map inet kube-nft-proxy marks { type ifname : mark ; }',
        'add element inet kube-nft-proxy marks { "eth0" : 0x4000 }',
        'add element inet kube-nft-proxy service-ips { 10.96.0.1 . tcp . 80 : goto service-X, 10.96.0.10 . udp . 53 ' +
          'comment "dns" : goto service-Y }',
        'create element inet kube-nft-proxy aff { 10.0.0.1 timeout 30s }',
        'delete element inet kube-nft-proxy service-ips { 10.96.0.2 . tcp . 80 }',
        'destroy element inet kube-nft-proxy service-ips { 10.96.0.3 . tcp . 80 }',
        'add rule inet kube-nft-proxy services ip daddr . meta l4proto . th dport vmap @service-ips',
        'insert rule inet kube-nft-proxy services counter comment "first"',
        'replace rule inet kube-nft-proxy services handle 7 accept',
        'delete rule inet kube-nft-proxy services handle 8',
        'destroy rule inet kube-nft-proxy services handle 9',
        'add flowtable inet kube-nft-proxy kube-proxy-flowtable { hook ingress priority 0 ; devices = { "lo" } ; }',
        'add flowtable inet kube-nft-proxy empty { hook ingress priority 0 ; }',
        'flush chain inet kube-nft-proxy services',
        'flush map inet kube-nft-proxy service-ips',
        'flush table inet kube-nft-proxy',
        'delete flowtable inet kube-nft-proxy kube-proxy-flowtable { hook ingress priority 0 ; devices = { "eth1" } ; }',
        'delete flowtable inet kube-nft-proxy kube-proxy-flowtable',
        'destroy chain inet kube-nft-proxy gone',
        'delete map inet kube-nft-proxy service-ips',
        'destroy table inet old',
        'delete table inet kube-nft-proxy',
        '',
      ].join('\n'),
    );
  });

  it('quotes names that need it, everywhere a name appears', () => {
    const ops: Operation[] = [
      { verb: 'add', object: { ...table, name: 'tcp', comment: undefined } },
      { verb: 'add', object: { ...chain('1st'), table: 'tcp' } },
      {
        verb: 'add',
        object: {
          ...rule('1st', [
            { kind: 'lookup', keys: [{ kind: 'payload', field: 'ip daddr' }], set: 'my set' },
            { kind: 'verdict', verdict: 'jump', chain: 'a@b' },
          ]),
          table: 'tcp',
        },
      },
      { verb: 'add', object: { ...el('my set', ['10.0.0.1']), table: 'tcp' } },
    ];
    expect(renderOperations(ops)).toBe(
      [
        'add table inet "tcp"',
        'add chain inet "tcp" "1st"',
        'add rule inet "tcp" "1st" ip daddr @"my set" jump "a@b"',
        'add element inet "tcp" "my set" { 10.0.0.1 }',
        '',
      ].join('\n'),
    );
  });

  it('prints elements of sets defined elsewhere with their types when told', () => {
    const marks: NftMap = { kind: 'map', family: F, table: T, name: 'marks', keyType: ['ifname'], dataType: 'mark' };
    const ops: Operation[] = [{ verb: 'add', object: el('marks', ['eth0'], '0x1') }];
    expect(renderOperations(ops, [marks])).toBe('add element inet kube-nft-proxy marks { "eth0" : 0x1 }\n');
  });

  it('groups only consecutive elements of one set with one verb', () => {
    const ops: Operation[] = [
      { verb: 'add', object: el('a', ['1']) },
      { verb: 'add', object: el('a', ['2']) },
      { verb: 'delete', object: el('a', ['3']) },
      { verb: 'add', object: el('b', ['4']) },
      { verb: 'add', object: el('a', ['5']) },
    ];
    expect(renderOperations(ops)).toBe(
      [
        'add element inet kube-nft-proxy a { 1, 2 }',
        'delete element inet kube-nft-proxy a { 3 }',
        'add element inet kube-nft-proxy b { 4 }',
        'add element inet kube-nft-proxy a { 5 }',
        '',
      ].join('\n'),
    );
    expect(renderOperations([])).toBe('');
  });

  it('renders 100k elements in well under a second', () => {
    const ops: Operation[] = [{ verb: 'add', object: vmap }];
    for (let i = 0; i < 100_000; i++) {
      ops.push({
        verb: 'add',
        object: el('service-ips', [`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, 'tcp', '80'], {
          verdict: 'goto',
          chain: `service-${i}`,
        }),
      });
    }
    const t0 = performance.now();
    const text = renderOperations(ops);
    const ms = performance.now() - t0;
    console.log(`render-text: 100k map elements in ${ms.toFixed(1)} ms (${(text.length / 1e6).toFixed(1)} MB)`);
    expect(text.split('\n').length).toBe(3);
    expect(text).toContain('10.1.134.159 . tcp . 80 : goto service-99999 }');
    expect(ms).toBeLessThan(1000);
  });
});

describe('renderTableText: golden', () => {
  it('prints one table block, deterministic', () => {
    const elements: Element[] = [
      el('service-ips', ['10.96.0.1', 'tcp', '80'], { verdict: 'goto', chain: 'svc' }),
      el('service-ips', ['10.96.0.2', 'udp', '53'], { verdict: 'drop' }),
    ];
    const listing = {
      table,
      chains: [chain('nat-prerouting', { type: 'nat', hook: 'prerouting', priority: -100 }), chain('svc', undefined, 'a service')],
      rules: [
        rule(
          'nat-prerouting',
          [
            {
              kind: 'vmap',
              keys: serviceKeys,
              map: 'service-ips',
            },
          ],
          { handle: 3 },
        ),
        rule(
          'svc',
          [
            { kind: 'match', left: { kind: 'meta', key: 'l4proto' }, op: '==', right: 'tcp' },
            { kind: 'dnat', addr: '10.180.0.1', port: 8080 },
          ],
          { handle: 4 },
        ),
      ],
      sets: [
        vmap,
        { kind: 'set' as const, family: F, table: T, name: 'empty', keyType: ['ipv6_addr' as const], flags: ['interval' as const] },
      ],
      elements,
      flowtables: [flowtable],
    };
    const want = `table inet kube-nft-proxy {
	comment "rules for kube-nft-proxy"
	flowtable kube-proxy-flowtable {
		hook ingress priority 0
		devices = { "lo" }
	}

	map service-ips {
		type ipv4_addr . inet_proto . inet_service : verdict
		elements = { 10.96.0.1 . tcp . 80 : goto svc,
			     10.96.0.2 . udp . 53 : drop }
	}

	set empty {
		type ipv6_addr
		flags interval
	}

	chain nat-prerouting {
		type nat hook prerouting priority -100; policy accept;
		ip daddr . meta l4proto . th dport vmap @service-ips
	}

	chain svc {
		comment "a service"
		meta l4proto tcp dnat ip to 10.180.0.1:8080
	}
}
`;
    expect(renderTableText(listing)).toBe(want);
    expect(renderTableText(listing, { handles: true })).toContain('dnat ip to 10.180.0.1:8080 # handle 4\n');
    expect(
      renderTableText({
        ...listing,
        table: { ...table, comment: undefined },
        chains: [],
        rules: [],
        sets: [],
        elements: [],
        flowtables: [],
      }),
    ).toBe('table inet kube-nft-proxy {\n}\n');
  });
});

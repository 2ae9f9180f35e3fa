// A representative ruleset shaped like kube-proxy's nftables mode: every object
// kind, every Statement kind and every Selector kind appears at least once.
// Shared by the transaction, renderer and fake-kernel tests.

import type {
  Chain,
  Element,
  Family,
  Flowtable,
  NftMap,
  NftObject,
  NftSet,
  Rule,
  Selector,
  Statement,
  Table,
} from '../../src/nft/objects.ts';

export const T = 'kube-nft-proxy';
export const F: Family = 'inet';

export const table: Table = { kind: 'table', family: F, name: T, comment: 'rules for kube-nft-proxy' };

export const chain = (name: string, base?: Chain['base'], comment?: string): Chain => ({
  kind: 'chain',
  family: F,
  table: T,
  name,
  ...(base ? { base } : {}),
  ...(comment ? { comment } : {}),
});

export const rule = (chainName: string, exprs: Statement[], extra: Partial<Rule> = {}): Rule => ({
  kind: 'rule',
  family: F,
  table: T,
  chain: chainName,
  exprs,
  ...extra,
});

export const el = (set: string, key: string[], value?: Element['value'], extra: Partial<Element> = {}): Element => ({
  kind: 'element',
  family: F,
  table: T,
  set,
  key,
  ...(value !== undefined ? { value } : {}),
  ...extra,
});

export const chains: Chain[] = [
  chain('nat-prerouting', { type: 'nat', hook: 'prerouting', priority: -100 }),
  chain('nat-output', { type: 'nat', hook: 'output', priority: -100 }),
  chain('nat-postrouting', { type: 'nat', hook: 'postrouting', priority: 100 }),
  chain('filter-forward', { type: 'filter', hook: 'forward', priority: -110, policy: 'accept' }),
  chain('filter-input', { type: 'filter', hook: 'input', priority: 0, policy: 'accept' }),
  chain('services'),
  chain('masquerading'),
  chain('mark-for-masquerade'),
  chain('service-ULMVA6XW-ns1/svc1/tcp/p80', undefined, 'ns1/svc1:p80'),
  chain('endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80'),
  chain('endpoint-GXXKD6FH-ns1/svc1/tcp/p80__10.180.0.2/80'),
  chain('endpoint-V6-ns1/svc6/tcp/p80__fd00-10-180--1/80'),
  chain('service-LEANSHAP-ns1/svc2/tcp/p80'),
  chain('reject-chain'),
  chain('firewall-check'),
];

/** The ClusterIP verdict map, without a comment. */
export const serviceIPs: NftMap = {
  kind: 'map',
  family: F,
  table: T,
  name: 'service-ips',
  keyType: ['ipv4_addr', 'inet_proto', 'inet_service'],
  dataType: 'verdict',
};

export const sets: Array<NftSet | NftMap> = [
  { ...serviceIPs, comment: 'ClusterIP, ExternalIP and LoadBalancer IP traffic' },
  { kind: 'map', family: F, table: T, name: 'service-nodeports', keyType: ['inet_proto', 'inet_service'], dataType: 'verdict' },
  { kind: 'map', family: F, table: T, name: 'service-ips-v6', keyType: ['ipv6_addr', 'inet_proto', 'inet_service'], dataType: 'verdict' },
  { kind: 'set', family: F, table: T, name: 'cluster-ips', keyType: ['ipv4_addr'] },
  { kind: 'set', family: F, table: T, name: 'nodeport-ips', keyType: ['ipv4_addr'], flags: ['interval'] },
  {
    kind: 'set',
    family: F,
    table: T,
    name: 'affinity-ns1/svc1/tcp/p80__10.180.0.1/80',
    keyType: ['ipv4_addr'],
    flags: ['dynamic', 'timeout'],
    timeout: 10800,
  },
  {
    kind: 'map',
    family: F,
    table: T,
    name: 'no-endpoint-services',
    keyType: ['ipv4_addr', 'inet_proto', 'inet_service'],
    dataType: 'verdict',
  },
  { kind: 'map', family: F, table: T, name: 'ct-mark-by-iface', keyType: ['ifname'], dataType: 'mark' },
  {
    kind: 'map',
    family: F,
    table: T,
    name: 'endpoints-LEANSHAP-ns1/svc2/tcp/p80',
    keyType: ['integer'],
    dataType: ['ipv4_addr', 'inet_service'],
  },
  {
    kind: 'map',
    family: F,
    table: T,
    name: 'endpoints-LEANSHAP-ns1/svc2/tcp/p80-v6',
    keyType: ['integer'],
    dataType: ['ipv6_addr', 'inet_service'],
  },
  {
    kind: 'set',
    family: F,
    table: T,
    name: 'lb-source-ranges',
    keyType: ['ipv4_addr', 'inet_proto', 'inet_service', 'ipv4_addr'],
    flags: ['interval'],
  },
];

export const SVC = 'service-ULMVA6XW-ns1/svc1/tcp/p80';
export const EP1 = 'endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80';
export const EP2 = 'endpoint-GXXKD6FH-ns1/svc1/tcp/p80__10.180.0.2/80';
export const EP6 = 'endpoint-V6-ns1/svc6/tcp/p80__fd00-10-180--1/80';
const AFF = 'affinity-ns1/svc1/tcp/p80__10.180.0.1/80';
export const SVC2 = 'service-LEANSHAP-ns1/svc2/tcp/p80';
const EPS2 = 'endpoints-LEANSHAP-ns1/svc2/tcp/p80';

export const elements: Element[] = [
  el('service-ips', ['172.30.0.41', 'tcp', '80'], { verdict: 'goto', chain: SVC }),
  el('service-ips', ['192.0.2.10', 'udp', '53'], { verdict: 'goto', chain: SVC }),
  el('service-ips', ['203.0.113.5', 'sctp', '9000'], { verdict: 'goto', chain: SVC }, { comment: 'ns1/svc1' }),
  el('service-nodeports', ['tcp', '30080'], { verdict: 'goto', chain: SVC }),
  el('service-ips-v6', ['fd00:10:96::1', 'tcp', '80'], { verdict: 'jump', chain: EP6 }),
  el('no-endpoint-services', ['172.30.0.42', 'tcp', '80'], { verdict: 'goto', chain: 'reject-chain' }),
  el('no-endpoint-services', ['172.30.0.43', 'tcp', '81'], { verdict: 'drop' }),
  el('cluster-ips', ['172.30.0.41']),
  el('cluster-ips', ['172.30.0.42']),
  el('nodeport-ips', ['192.0.2.0/24']),
  el('nodeport-ips', ['198.51.100.7']),
  el('ct-mark-by-iface', ['eth0'], '0x4000'),
  el('lb-source-ranges', ['203.0.113.5', 'tcp', '80', '198.51.100.0/24']),
  el('service-ips', ['172.30.0.44', 'tcp', '80'], { verdict: 'goto', chain: SVC2 }),
  el(EPS2, ['0'], ['10.180.1.1', '8080']),
  el(EPS2, ['1'], ['10.180.1.2', '80']),
  el(`${EPS2}-v6`, ['0'], ['fd00:10:180::2', '443']),
];

const tcpDport = { kind: 'payload', field: 'th dport' } as const;
const l4 = { kind: 'meta', key: 'l4proto' } as const;
const daddr = { kind: 'payload', field: 'ip daddr' } as const;
/** The keys of the service-ips map: destination address . protocol . port. */
export const serviceKeys: Selector[] = [daddr, l4, tcpDport];
const saddr = { kind: 'payload', field: 'ip saddr' } as const;

export const rules: Rule[] = [
  rule('nat-prerouting', [{ kind: 'verdict', verdict: 'jump', chain: 'services' }]),
  rule('nat-output', [{ kind: 'verdict', verdict: 'jump', chain: 'services' }]),
  rule('nat-postrouting', [{ kind: 'verdict', verdict: 'jump', chain: 'masquerading' }]),
  rule('services', [{ kind: 'vmap', keys: serviceKeys, map: 'service-ips' }], { comment: 'ClusterIPs' }),
  rule('services', [{ kind: 'vmap', keys: [{ kind: 'payload', field: 'ip6 daddr' }, l4, tcpDport], map: 'service-ips-v6' }]),
  rule('services', [
    { kind: 'match', left: { kind: 'fib-type', addr: 'daddr' }, op: '==', right: 'local' },
    { kind: 'vmap', keys: [l4, tcpDport], map: 'service-nodeports' },
  ]),
  rule('masquerading', [
    { kind: 'match', left: { kind: 'meta', key: 'mark' }, op: '==', right: '0x0', mask: '0x4000' },
    { kind: 'verdict', verdict: 'return' },
  ]),
  rule('masquerading', [{ kind: 'mark-xor', value: '0x4000' }]),
  rule('masquerading', [{ kind: 'masquerade', fullyRandom: true }]),
  rule('mark-for-masquerade', [{ kind: 'mark-set', value: '0x4000', or: true }]),
  rule('mark-for-masquerade', [{ kind: 'mark-set', value: '0x1' }]),
  rule(SVC, [
    { kind: 'match', left: saddr, op: '!=', right: '10.0.0.0/8' },
    { kind: 'verdict', verdict: 'jump', chain: 'mark-for-masquerade' },
  ]),
  rule(SVC, [
    { kind: 'match', left: { kind: 'numgen', mod: 2 }, op: '==', right: '0' },
    { kind: 'counter' },
    { kind: 'verdict', verdict: 'goto', chain: EP1 },
  ]),
  rule(SVC, [
    { kind: 'match', left: { kind: 'numgen', mod: 2 }, op: '==', right: '1' },
    { kind: 'verdict', verdict: 'goto', chain: EP2 },
  ]),
  rule(EP1, [
    { kind: 'match', left: saddr, op: '==', right: '10.180.0.1' },
    { kind: 'verdict', verdict: 'jump', chain: 'mark-for-masquerade' },
  ]),
  rule(EP1, [{ kind: 'set-update', op: 'update', set: AFF, keys: [saddr], timeout: 10800 }]),
  rule(EP1, [{ kind: 'set-update', op: 'add', set: AFF, keys: [saddr] }]),
  rule(EP1, [
    { kind: 'match', left: l4, op: '==', right: 'tcp' },
    { kind: 'dnat', addr: '10.180.0.1', port: 80 },
  ]),
  rule(EP2, [
    { kind: 'match', left: l4, op: '==', right: 'udp' },
    { kind: 'dnat', addr: '10.180.0.2' },
  ]),
  rule(EP6, [
    { kind: 'match', left: l4, op: '==', right: 'tcp' },
    { kind: 'dnat', addr: 'fd00:10:180::1', port: 8080 },
  ]),
  rule('nat-postrouting', [
    { kind: 'match', left: { kind: 'ct', key: 'status' }, op: '==', right: 'dnat' },
    { kind: 'match', left: { kind: 'payload', field: 'ip protocol' }, op: '==', right: 'udp' },
    { kind: 'snat', addr: '192.0.2.1', port: 1024 },
  ]),
  rule('nat-postrouting', [
    { kind: 'match', left: { kind: 'meta', key: 'nfproto' }, op: '==', right: 'ipv6' },
    { kind: 'snat', addr: 'fd00::1' },
  ]),
  rule(SVC2, [
    { kind: 'match', left: l4, op: '==', right: 'tcp' },
    { kind: 'dnat-map', family: 'ip', keys: [{ kind: 'numgen', mod: 2 }], map: EPS2 },
  ]),
  rule(SVC2, [
    { kind: 'match', left: l4, op: '==', right: 'tcp' },
    { kind: 'dnat-map', family: 'ip6', keys: [{ kind: 'numgen', mod: 1 }], map: `${EPS2}-v6` },
  ]),
  rule(SVC2, [
    { kind: 'match', left: l4, op: '==', right: 'udp' },
    { kind: 'dnat-map', family: 'ip', keys: [{ kind: 'numgen', mod: 3, offset: 4000000000 }], map: EPS2 },
  ]),
  rule('reject-chain', [{ kind: 'reject', with: 'icmpx port-unreachable' }]),
  rule('reject-chain', [
    { kind: 'match', left: { kind: 'payload', field: 'ip protocol' }, op: '==', right: 'tcp' },
    { kind: 'reject', with: 'tcp reset' },
  ]),
  rule('reject-chain', [
    { kind: 'match', left: { kind: 'payload', field: 'ip6 nexthdr' }, op: '==', right: 'udp' },
    { kind: 'reject', with: 'icmpv6 port-unreachable' },
  ]),
  rule('reject-chain', [
    { kind: 'match', left: { kind: 'meta', key: 'nfproto' }, op: '==', right: 'ipv4' },
    { kind: 'reject', with: 'icmp port-unreachable' },
  ]),
  rule('filter-input', [
    { kind: 'match', left: { kind: 'ct', key: 'state' }, op: '==', right: 'new' },
    { kind: 'verdict', verdict: 'jump', chain: 'firewall-check' },
  ]),
  rule('filter-input', [
    { kind: 'match', left: { kind: 'ct', key: 'state' }, op: '!=', right: 'established,related' },
    { kind: 'counter' },
  ]),
  rule('filter-input', [{ kind: 'match', left: { kind: 'meta', key: 'iifname' }, op: '==', right: 'eth0' }, { kind: 'notrack' }]),
  rule('filter-input', [
    { kind: 'match', left: { kind: 'meta', key: 'oifname' }, op: '!=', right: 'lo' },
    { kind: 'match', left: { kind: 'meta', key: 'iif' }, op: '==', right: '1' },
    { kind: 'match', left: { kind: 'meta', key: 'oif' }, op: '!=', right: '1' },
    { kind: 'counter' },
  ]),
  rule('firewall-check', [
    { kind: 'lookup', keys: [daddr, l4, tcpDport, saddr], set: 'lb-source-ranges', negate: true },
    { kind: 'verdict', verdict: 'drop' },
  ]),
  rule('firewall-check', [
    { kind: 'lookup', keys: [daddr], set: 'cluster-ips' },
    { kind: 'verdict', verdict: 'accept' },
  ]),
  rule('filter-forward', [
    { kind: 'match', left: { kind: 'ct-addr', dir: 'original', field: 'ip daddr' }, op: '==', right: '172.30.0.41' },
    { kind: 'match', left: { kind: 'ct', key: 'packets' }, op: '>', right: '20' },
    { kind: 'match', left: { kind: 'ct', key: 'bytes' }, op: '<', right: '100000' },
    { kind: 'counter' },
  ]),
  rule('filter-forward', [
    { kind: 'match', left: { kind: 'ct', key: 'packets' }, op: '>', right: '20' },
    { kind: 'flow-offload', flowtable: 'kube-proxy-flowtable' },
  ]),
  rule('filter-forward', [
    { kind: 'match', left: { kind: 'ct-addr', dir: 'reply', field: 'ip6 saddr' }, op: '==', right: 'fd00::/64' },
    { kind: 'match', left: { kind: 'ct', key: 'mark' }, op: '==', right: '0x10', mask: '0xff' },
    { kind: 'match', left: { kind: 'fib-type', addr: 'saddr' }, op: '!=', right: 'local' },
    { kind: 'match', left: { kind: 'payload', field: 'tcp dport' }, op: '>=', right: '1024' },
    { kind: 'verdict', verdict: 'continue' },
  ]),
  rule('filter-forward', [
    { kind: 'match', left: { kind: 'payload', field: 'udp dport' }, op: '<=', right: '53' },
    { kind: 'match', left: { kind: 'payload', field: 'th sport' }, op: '==', right: '53' },
    { kind: 'verdict', verdict: 'accept' },
  ]),
  rule('filter-forward', [
    { kind: 'match', left: { kind: 'payload', field: 'sctp dport' }, op: '==', right: '9000' },
    { kind: 'match', left: { kind: 'payload', field: 'ip6 saddr' }, op: '!=', right: 'fd00::1' },
    { kind: 'verdict', verdict: 'accept' },
  ]),
];

export const flowtable: Flowtable = {
  kind: 'flowtable',
  family: F,
  table: T,
  name: 'kube-proxy-flowtable',
  hook: 'ingress',
  priority: 0,
  devices: ['lo'],
};

/** Everything, in an order the kernel accepts (definitions before uses). */
export function representativeObjects(opts: { flowtable: boolean }): NftObject[] {
  const out: NftObject[] = [table, ...chains, ...sets, ...elements];
  if (opts.flowtable) out.push(flowtable);
  for (const r of rules) {
    if (!opts.flowtable && r.exprs.some((s) => s.kind === 'flow-offload')) continue;
    out.push(r);
  }
  return out;
}

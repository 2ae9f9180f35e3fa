// A kube-proxy-shaped ruleset for the netlink benchmark: a service-ips verdict
// map on `ip daddr . meta l4proto . th dport`, per-service chains choosing an
// endpoint with `numgen random mod (E-k) == 0 goto` cascades (no anonymous
// maps: they make the kernel's commit quadratic), per-endpoint chains with
// DNAT and the masquerade mark, and a masquerading chain.

import type { Chain, Operation, Rule, Statement } from '../src/nft/objects.ts';

export const TABLE = 'kube-nft-proxy';
const family = 'ip' as const;

const chain = (name: string, base?: Chain['base']): Chain => ({ kind: 'chain', family, table: TABLE, name, ...(base ? { base } : {}) });
const rule = (chainName: string, exprs: Statement[]): Rule => ({ kind: 'rule', family, table: TABLE, chain: chainName, exprs });
const add = (object: Operation['object']): Operation => ({ verb: 'add', object });

function ip(prefix: number, n: number): string {
  return `10.${prefix + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`;
}

export const serviceIp = (i: number) => ip(96, i);
export const endpointIp = (i: number, k: number, generation = 0) => ip(128 + generation * 8, i * 2 + k);
export const serviceChain = (i: number) => `service-${i}`;
export const endpointChain = (i: number, k: number, generation = 0) => `endpoint-${i}-${k}${generation ? `-g${generation}` : ''}`;

function endpointOps(i: number, k: number, generation = 0): Operation[] {
  const name = endpointChain(i, k, generation);
  const addr = endpointIp(i, k, generation);
  return [
    add(chain(name)),
    add(
      rule(name, [
        { kind: 'match', left: { kind: 'payload', field: 'ip saddr' }, op: '==', right: addr },
        { kind: 'verdict', verdict: 'jump', chain: 'mark-for-masquerade' },
      ]),
    ),
    add(
      rule(name, [
        { kind: 'match', left: { kind: 'meta', key: 'l4proto' }, op: '==', right: 'tcp' },
        { kind: 'dnat', addr, port: 8080 },
      ]),
    ),
  ];
}

/** The rules choosing among endpoint chains: goto endpoint k with probability 1/(E-k), the last always. */
function cascade(i: number, endpoints: string[]): Operation[] {
  return endpoints.map((ep, k) => {
    const left = endpoints.length - k;
    const exprs: Statement[] =
      left > 1
        ? [
            { kind: 'match', left: { kind: 'numgen', mod: left }, op: '==', right: '0' },
            { kind: 'verdict', verdict: 'goto', chain: ep },
          ]
        : [{ kind: 'verdict', verdict: 'goto', chain: ep }];
    return add(rule(serviceChain(i), exprs));
  });
}

export function fullRuleset(services: number, endpointsPerService = 2): Operation[] {
  const ops: Operation[] = [
    add({ kind: 'table', family, name: TABLE }),
    add(chain('nat-prerouting', { type: 'nat', hook: 'prerouting', priority: -100 })),
    add(chain('nat-output', { type: 'nat', hook: 'output', priority: -100 })),
    add(chain('nat-postrouting', { type: 'nat', hook: 'postrouting', priority: 100 })),
    add(chain('services')),
    add(chain('masquerading')),
    add(chain('mark-for-masquerade')),
    add({
      kind: 'map',
      family,
      table: TABLE,
      name: 'service-ips',
      keyType: ['ipv4_addr', 'inet_proto', 'inet_service'],
      dataType: 'verdict',
    }),
    add(rule('nat-prerouting', [{ kind: 'verdict', verdict: 'jump', chain: 'services' }])),
    add(rule('nat-output', [{ kind: 'verdict', verdict: 'jump', chain: 'services' }])),
    add(rule('nat-postrouting', [{ kind: 'verdict', verdict: 'jump', chain: 'masquerading' }])),
    add(
      rule('services', [
        {
          kind: 'vmap',
          keys: [
            { kind: 'payload', field: 'ip daddr' },
            { kind: 'meta', key: 'l4proto' },
            { kind: 'payload', field: 'th dport' },
          ],
          map: 'service-ips',
        },
      ]),
    ),
    add(rule('mark-for-masquerade', [{ kind: 'mark-set', value: '0x4000', or: true }])),
    add(
      rule('masquerading', [
        { kind: 'match', left: { kind: 'meta', key: 'mark' }, op: '==', right: '0x0', mask: '0x4000' },
        { kind: 'verdict', verdict: 'return' },
      ]),
    ),
    add(rule('masquerading', [{ kind: 'mark-xor', value: '0x4000' }])),
    add(rule('masquerading', [{ kind: 'masquerade', fullyRandom: true }])),
  ];
  for (let i = 0; i < services; i++) {
    const eps: string[] = [];
    for (let k = 0; k < endpointsPerService; k++) {
      ops.push(...endpointOps(i, k));
      eps.push(endpointChain(i, k));
    }
    ops.push(add(chain(serviceChain(i))), ...cascade(i, eps));
  }
  for (let i = 0; i < services; i++) {
    ops.push(
      add({
        kind: 'element',
        family,
        table: TABLE,
        set: 'service-ips',
        key: [serviceIp(i), 'tcp', '80'],
        value: { verdict: 'goto', chain: serviceChain(i) },
      }),
    );
  }
  return ops;
}

/** n service-ips elements pointing at the mark-for-masquerade chain (for the boundary figure). */
export function elementOps(n: number): Operation[] {
  const ops: Operation[] = [];
  for (let i = 0; i < n; i++) {
    ops.push(
      add({
        kind: 'element',
        family,
        table: TABLE,
        set: 'service-ips',
        key: [serviceIp(i), i % 2 ? 'tcp' : 'udp', String(1 + (i % 60000))],
        value: { verdict: 'goto', chain: 'mark-for-masquerade' },
      }),
    );
  }
  return ops;
}

/** Service i's second endpoint is replaced by a new one: one transaction. */
export function endpointChange(i: number, endpointsPerService = 2): Operation[] {
  const last = endpointsPerService - 1;
  const eps = Array.from({ length: endpointsPerService }, (_, k) => (k === last ? endpointChain(i, k, 1) : endpointChain(i, k)));
  return [
    ...endpointOps(i, last, 1),
    { verb: 'flush', object: chain(serviceChain(i)) },
    ...cascade(i, eps),
    { verb: 'flush', object: chain(endpointChain(i, last)) },
    { verb: 'delete', object: chain(endpointChain(i, last)) },
  ];
}

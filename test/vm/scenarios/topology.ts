// client → router → server network namespaces over veth pairs, for scenarios
// that run inside the flowtable VM (the router forwards between two subnets;
// its netns is the one an agent or the nft CLI programs).
//
//   client 192.0.2.2/24 ── eth0 │ r-client 192.0.2.1/24
//                                 router (ip_forward=1)
//   server 203.0.113.2/24 ─ eth0 │ r-server 203.0.113.1/24
//
// 198.51.100.0/24 is left free for "cluster IPs" a scenario may DNAT.
// Usable on the host too (namespaces only), but flowtables need the VM's kernel.

import { execFileSync } from 'node:child_process';
import { createNetns, type NetNs } from '../../helpers/netns.ts';

export interface RouterTopology {
  client: NetNs;
  router: NetNs;
  server: NetNs;
  clientIp: string;
  serverIp: string;
  /** The router's interfaces towards the client and the server. */
  routerClientIf: string;
  routerServerIf: string;
  /** Adds a veth pair whose one end (named name) lives in the router; returns the peer's namespace. */
  addRouterVeth(name: string): NetNs;
  /** Deletes a router interface (its veth peer goes with it). */
  deleteRouterLink(name: string): void;
  destroy(): void;
}

function ip(args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A veth pair with one end in each namespace, renamed there, up, addressed. */
function link(a: NetNs, aName: string, aAddr: string | undefined, b: NetNs, bName: string, bAddr: string | undefined): void {
  // Temporary names in the creating namespace must not clash across calls.
  const tmpA = `k${Math.random().toString(36).slice(2, 10)}`;
  const tmpB = `k${Math.random().toString(36).slice(2, 10)}`;
  ip(['link', 'add', tmpA, 'type', 'veth', 'peer', 'name', tmpB]);
  ip(['link', 'set', tmpA, 'netns', a.name, 'name', aName]);
  ip(['link', 'set', tmpB, 'netns', b.name, 'name', bName]);
  for (const [ns, name, addr] of [
    [a, aName, aAddr],
    [b, bName, bAddr],
  ] as const) {
    if (addr) ns.exec('ip', ['addr', 'add', addr, 'dev', name]);
    ns.exec('ip', ['link', 'set', name, 'up']);
  }
}

export function createRouterTopology(): RouterTopology {
  const made: NetNs[] = [];
  const destroy = () => {
    for (const ns of made.splice(0).reverse()) ns.destroy();
  };
  try {
    const client = createNetns('client');
    made.push(client);
    const router = createNetns('router');
    made.push(router);
    const server = createNetns('server');
    made.push(server);

    link(client, 'eth0', '192.0.2.2/24', router, 'r-client', '192.0.2.1/24');
    link(server, 'eth0', '203.0.113.2/24', router, 'r-server', '203.0.113.1/24');
    client.exec('ip', ['route', 'add', 'default', 'via', '192.0.2.1']);
    server.exec('ip', ['route', 'add', 'default', 'via', '203.0.113.1']);
    router.exec('sysctl', ['-qw', 'net.ipv4.ip_forward=1']);

    return {
      client,
      router,
      server,
      clientIp: '192.0.2.2',
      serverIp: '203.0.113.2',
      routerClientIf: 'r-client',
      routerServerIf: 'r-server',
      addRouterVeth(name) {
        const peer = createNetns('peer');
        made.push(peer);
        link(router, name, undefined, peer, 'eth0', undefined);
        return peer;
      },
      deleteRouterLink(name) {
        router.exec('ip', ['link', 'del', name]);
      },
      destroy,
    };
  } catch (e) {
    destroy();
    throw e;
  }
}

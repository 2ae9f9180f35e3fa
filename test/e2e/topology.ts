// A small cluster made of network namespaces, for tests with real packets.
//
//   client (192.0.2.10, 2001:db8:1::10) ── ext0 ┐
//                                                │  node (the agent programs this one)
//   lb (198.51.100.2; answers on 203.0.113.0/24) ─ lb0 ┤  ext0 192.0.2.1, lb0 198.51.100.1
//                                                │  cbr0 bridge 10.244.0.1/24, fd00:10:244::1/64
//   pod namespaces (10.244.0.N, fd00:10:244::N) ── cbr0 ┘
//
// Nothing here has a route out of these namespaces: every address is either a
// documentation range or the test pod range, and all default routes point at
// the node namespace.

import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { createNetns, type NetNs } from '../helpers/netns.ts';

const here = fileURLToPath(new URL('.', import.meta.url));
const NODE_BIN = process.execPath;

export interface Pod {
  name: string;
  ns: NetNs;
  ipv4: string;
  ipv6: string;
}

export interface Cluster {
  node: NetNs;
  client: NetNs;
  lb: NetNs;
  pods: Map<string, Pod>;
  nodeIPv4: string;
  clientIPv4: string;
  /** Runs a probe (test/e2e/probe.ts) from a namespace and returns its outcomes; `source`: the local address to use (TCP). */
  probe(
    from: NetNs,
    proto: 'tcp' | 'udp',
    address: string,
    port: number,
    count?: number,
    timeoutMs?: number,
    source?: string,
  ): Promise<string[]>;
  destroy(): Promise<void>;
}

function sh(ns: NetNs | undefined, args: string[]) {
  if (ns) ns.exec('ip', args);
  else throw new Error('no namespace');
}

async function startBackend(ns: NetNs, name: string, ports: number[]): Promise<ChildProcess> {
  const child = ns.spawn(NODE_BIN, [`${here}backend.ts`, name, ports.join(',')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr?.on('data', (d) => (err += d));
  const [line] = (await Promise.race([
    once(child.stdout!, 'data'),
    once(child, 'exit').then(() => {
      throw new Error(`backend ${name} exited: ${err}`);
    }),
  ])) as [Buffer];
  if (!line.toString().includes('ready')) throw new Error(`backend ${name} said ${line}`);
  return child;
}

/**
 * Builds the namespaces and starts a backend in every pod and in the LB namespace.
 * podNames become pods 10.244.0.11, .12, ... in order.
 */
export async function createCluster(podNames: string[], backendPorts: number[] = [8080]): Promise<Cluster> {
  const made: NetNs[] = [];
  const children: ChildProcess[] = [];
  const mk = (p: string) => {
    const ns = createNetns(p);
    made.push(ns);
    // Duplicate address detection would leave link-local addresses tentative for
    // a second or two, and the first IPv6 packets would wait on it.
    ns.exec('sysctl', ['-qw', 'net.ipv6.conf.all.accept_dad=0', 'net.ipv6.conf.default.accept_dad=0']);
    return ns;
  };
  const destroy = async () => {
    for (const c of children) c.kill('SIGKILL');
    await Promise.all(children.map((c) => (c.exitCode === null && c.signalCode === null ? once(c, 'exit') : undefined)));
    // Deleting a namespace deletes the veth ends inside it, and so their peers.
    for (const ns of made.reverse()) ns.destroy();
  };
  try {
    const node = mk('knp-node');
    const client = mk('knp-cli');
    const lb = mk('knp-lb');
    const sysctl = (ns: NetNs, kv: string) => ns.exec('sysctl', ['-qw', kv]);
    sysctl(node, 'net.ipv4.ip_forward=1');
    sysctl(node, 'net.ipv6.conf.all.forwarding=1');

    // client <-> node
    sh(node, ['link', 'add', 'ext0', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', client.name]);
    sh(node, ['addr', 'add', '192.0.2.1/24', 'dev', 'ext0']);
    sh(node, ['addr', 'add', '2001:db8:1::1/64', 'dev', 'ext0', 'nodad']);
    sh(node, ['link', 'set', 'ext0', 'up']);
    sh(client, ['addr', 'add', '192.0.2.10/24', 'dev', 'eth0']);
    sh(client, ['addr', 'add', '2001:db8:1::10/64', 'dev', 'eth0', 'nodad']);
    sh(client, ['link', 'set', 'eth0', 'up']);
    sh(client, ['route', 'add', 'default', 'via', '192.0.2.1']);
    sh(client, ['-6', 'route', 'add', 'default', 'via', '2001:db8:1::1']);

    // lb <-> node; the load balancer answers for 203.0.113.0/24.
    sh(node, ['link', 'add', 'lb0', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', lb.name]);
    sh(node, ['addr', 'add', '198.51.100.1/24', 'dev', 'lb0']);
    sh(node, ['link', 'set', 'lb0', 'up']);
    sh(node, ['route', 'add', '203.0.113.0/24', 'via', '198.51.100.2']);
    sh(lb, ['addr', 'add', '198.51.100.2/24', 'dev', 'eth0']);
    sh(lb, ['link', 'set', 'eth0', 'up']);
    sh(lb, ['route', 'add', 'default', 'via', '198.51.100.1']);
    sh(lb, ['route', 'add', 'local', '203.0.113.0/24', 'dev', 'lo']);

    // A real node has a default route. Ours leads over a veth into the lb
    // namespace, which has no address on that end and answers nothing: unrouted
    // addresses (ClusterIPs without rules) reach the forward hook as they would
    // on a node, and nothing leaves these namespaces. (This kernel has no dummy
    // device type.)
    sh(node, ['link', 'add', 'uplink', 'type', 'veth', 'peer', 'name', 'sink0', 'netns', lb.name]);
    sh(node, ['link', 'set', 'uplink', 'up']);
    sh(lb, ['link', 'set', 'sink0', 'up']);
    sh(node, ['route', 'add', 'default', 'dev', 'uplink']);
    sh(node, ['-6', 'route', 'add', 'default', 'dev', 'uplink']);

    // pods on a bridge
    sh(node, ['link', 'add', 'cbr0', 'type', 'bridge']);
    sh(node, ['addr', 'add', '10.244.0.1/24', 'dev', 'cbr0']);
    sh(node, ['addr', 'add', 'fd00:10:244::1/64', 'dev', 'cbr0', 'nodad']);
    sh(node, ['link', 'set', 'cbr0', 'up']);
    const pods = new Map<string, Pod>();
    podNames.forEach((name, i) => {
      const ns = mk(`knp-${name}`);
      const n = 11 + i;
      const ipv4 = `10.244.0.${n}`;
      const ipv6 = `fd00:10:244::${n.toString(16)}`;
      const hostSide = `veth${i}`;
      sh(node, ['link', 'add', hostSide, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns.name]);
      sh(node, ['link', 'set', hostSide, 'master', 'cbr0']);
      // As kubelet's hairpin-veth mode does: with br_netfilter loaded (it is on
      // these hosts) a pod's packet to a service is DNATed at the bridge and,
      // when the endpoint is the pod itself, must go back out of the port it came in by.
      sh(node, ['link', 'set', hostSide, 'type', 'bridge_slave', 'hairpin', 'on']);
      sh(node, ['link', 'set', hostSide, 'up']);
      sh(ns, ['addr', 'add', `${ipv4}/24`, 'dev', 'eth0']);
      sh(ns, ['addr', 'add', `${ipv6}/64`, 'dev', 'eth0', 'nodad']);
      sh(ns, ['link', 'set', 'eth0', 'up']);
      sh(ns, ['route', 'add', 'default', 'via', '10.244.0.1']);
      sh(ns, ['-6', 'route', 'add', 'default', 'via', 'fd00:10:244::1']);
      pods.set(name, { name, ns, ipv4, ipv6 });
    });

    for (const pod of pods.values()) children.push(await startBackend(pod.ns, pod.name, backendPorts));
    children.push(
      await startBackend(
        lb,
        'lb',
        backendPorts.concat([80, 443]).filter((p, i, a) => a.indexOf(p) === i),
      ),
    );

    const probe = async (
      from: NetNs,
      proto: 'tcp' | 'udp',
      address: string,
      port: number,
      count = 1,
      timeoutMs = 1000,
      source?: string,
    ) => {
      const args = [`${here}probe.ts`, proto, address, String(port), String(count), String(timeoutMs), ...(source ? [source] : [])];
      const child = from.spawn(NODE_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout!.on('data', (d) => (out += d));
      child.stderr!.on('data', (d) => (err += d));
      const [code] = (await once(child, 'exit')) as [number];
      if (code !== 0) throw new Error(`probe failed (${code}): ${err}`);
      return JSON.parse(out) as string[];
    };

    return { node, client, lb, pods, nodeIPv4: '192.0.2.1', clientIPv4: '192.0.2.10', probe, destroy };
  } catch (e) {
    await destroy();
    throw e;
  }
}

// kube-proxy's detect-local modes with real packets. Traffic to a ClusterIP
// that is not local (not from this node's pods) is masqueraded, as kube-proxy's
// nftables mode does; local traffic keeps its source. The backend answers with
// the source it saw: the pod's own address (local) or the node's bridge
// address 10.244.0.1 (masqueraded). Pods hang off the bridge cbr0; the client
// arrives on ext0.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, nodeObject, serviceObject, sliceObject } from './agent-process.ts';
import { startAgentCluster, type AgentCluster } from './agent-cluster.ts';

const B1 = '10.244.0.11';
const C1 = '10.244.0.12';
const CLIENT = '192.0.2.10';
const MASQUERADED = '10.244.0.1';

interface Case {
  name: string;
  args: string[];
  /** The source b1 sees for the pod c1's connection, and for the client's. */
  fromPod: string;
  fromClient: string;
  /** What the table holds for the ClusterIP's masquerade rule. */
  rule: RegExp;
}

const CASES: Case[] = [
  {
    name: 'ClusterCIDR',
    args: ['--detect-local-mode=ClusterCIDR'],
    fromPod: C1,
    fromClient: MASQUERADED,
    rule: /ip saddr != 10\.244\.0\.0\/16 jump mark-for-masquerade/,
  },
  {
    name: 'NodeCIDR (the Node has 10.244.0.0/24)',
    args: ['--detect-local-mode=NodeCIDR'],
    fromPod: C1,
    fromClient: MASQUERADED,
    rule: /ip saddr != 10\.244\.0\.0\/24 jump mark-for-masquerade/,
  },
  {
    name: 'BridgeInterface cbr0',
    args: ['--detect-local-mode=BridgeInterface', '--pod-bridge-interface=cbr0'],
    fromPod: C1,
    fromClient: MASQUERADED,
    rule: /iifname != "cbr0" jump mark-for-masquerade/,
  },
  {
    name: 'BridgeInterface of another bridge',
    args: ['--detect-local-mode=BridgeInterface', '--pod-bridge-interface=br-other'],
    fromPod: MASQUERADED,
    fromClient: MASQUERADED,
    rule: /iifname != "br-other" jump mark-for-masquerade/,
  },
  {
    name: 'InterfaceNamePrefix cbr',
    args: ['--detect-local-mode=InterfaceNamePrefix', '--pod-interface-name-prefix=cbr'],
    fromPod: C1,
    fromClient: MASQUERADED,
    rule: /iifname != "cbr\*" jump mark-for-masquerade/,
  },
  // The prefix decides, not the address: with "ext" the client's interface counts as local and the pods' does not.
  {
    name: 'InterfaceNamePrefix ext',
    args: ['--detect-local-mode=InterfaceNamePrefix', '--pod-interface-name-prefix=ext'],
    fromPod: MASQUERADED,
    fromClient: CLIENT,
    rule: /iifname != "ext\*" jump mark-for-masquerade/,
  },
];

describe.each(CASES)('--detect-local-mode: $name', { timeout: 60_000 }, (c) => {
  let env: AgentCluster;
  const fromPod = () => env.cluster.probe(env.cluster.pods.get('c1')!.ns, 'tcp', '10.96.0.130', 80, 1, 1000);
  const fromClient = () => env.cluster.probe(env.cluster.client, 'tcp', '10.96.0.130', 80, 1, 1000);

  beforeAll(async () => {
    env = await startAgentCluster(['b1', 'c1'], c.args, (api) => {
      api.create('services', serviceObject({ name: 'local', clusterIP: '10.96.0.130' }));
      api.create('endpointslices', sliceObject('local', 'local-1', [{ ip: B1 }]));
    });
  }, 60_000);
  afterAll(() => env?.destroy());

  it('renders the mode as kube-proxy does', async () => {
    const list = async () => {
      try {
        return env.cluster.node.exec('nft', ['list', 'table', 'ip', 'kube-nft-proxy']);
      } catch {
        return ''; // not programmed yet
      }
    };
    const text = await eventually(list, (t) => c.rule.test(t), 15_000, 'the masquerade rule');
    expect(text).toMatch(c.rule);
  });

  it(`masquerades what is not local: the pod is seen as ${c.fromPod}, the client as ${c.fromClient}`, async () => {
    const pod = await eventually(fromPod, (o) => o[0]?.startsWith('b1 ') ?? false, 15_000, 'an answer to the pod');
    expect(pod).toEqual([`b1 ${c.fromPod}`]);
    expect(await fromClient()).toEqual([`b1 ${c.fromClient}`]);
  });

  if (c.name.startsWith('NodeCIDR')) {
    it("follows the Node's spec.podCIDRs as they change", async () => {
      const node = nodeObject('node-a', 'zone-a', 'region-1', env.cluster.nodeIPv4);
      env.api.update('nodes', { ...node, spec: { podCIDRs: ['10.245.0.0/24'] } });
      const after = await eventually(
        fromPod,
        (o) => o[0] === `b1 ${MASQUERADED}`,
        15_000,
        'pod traffic masqueraded once its CIDR is not the node one',
      );
      expect(after).toEqual([`b1 ${MASQUERADED}`]);
      expect(env.cluster.node.exec('nft', ['list', 'table', 'ip', 'kube-nft-proxy'])).toMatch(
        /ip saddr != 10\.245\.0\.0\/24 jump mark-for-masquerade/,
      );
    });
  }
});

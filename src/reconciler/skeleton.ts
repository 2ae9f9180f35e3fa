// The static part of one family's table: base chains on the netfilter hooks,
// the dispatch chains they jump to, and the sets and maps the per-service
// elements go into. Kept as data (the tables below) so that its shape can be
// read at a glance and compared with kube-proxy's.

import type { IPFamily } from '../k8s/types.ts';
import type { ChainHook, ChainType, Statement } from '../nft/objects.ts';
import { type FamilyConfig, masqueradeMark, offloadEnabled, type RulesetConfig } from './config.ts';
import { endpointMapTypes, shardMapName } from './endpoint-slots.ts';
import { hairpinKeyType } from './element-claims.ts';
import { type Fragment, FragmentBuilder } from './fragment.ts';
import { CHAIN, FLOWTABLE, MAP, SET } from './names.ts';
import {
  addrType,
  ctStateNew,
  daddr,
  drop,
  fibLocal,
  jump,
  lookup,
  loopbackNet,
  match,
  nodePortKey,
  rejectStatement,
  ret,
  saddr,
  serviceKey,
  tableFamily,
  vmap,
} from './statements.ts';

// Priorities as kube-proxy sets them: filtering sees the destination before
// DNAT (dstnat - 10), except the ClusterIP checks on locally generated traffic,
// which must run after nat-output has rewritten valid service traffic.
const DSTNAT = -100;
const SRCNAT = 100;
const FILTER_PRIORITY = 0;

interface BaseChainSpec {
  name: string;
  type: ChainType;
  hook: ChainHook;
  priority: number;
}

const BASE_CHAINS: readonly BaseChainSpec[] = [
  { name: CHAIN.filterPrerouting, type: 'filter', hook: 'prerouting', priority: DSTNAT - 10 },
  { name: CHAIN.filterInput, type: 'filter', hook: 'input', priority: DSTNAT - 10 },
  { name: CHAIN.filterForward, type: 'filter', hook: 'forward', priority: DSTNAT - 10 },
  { name: CHAIN.filterOutput, type: 'filter', hook: 'output', priority: DSTNAT - 10 },
  { name: CHAIN.filterOutputPostDnat, type: 'filter', hook: 'output', priority: DSTNAT + 10 },
  { name: CHAIN.natPrerouting, type: 'nat', hook: 'prerouting', priority: DSTNAT },
  { name: CHAIN.natOutput, type: 'nat', hook: 'output', priority: DSTNAT },
  { name: CHAIN.natPostrouting, type: 'nat', hook: 'postrouting', priority: SRCNAT },
];

interface JumpSpec {
  from: string;
  to: string;
  /** Only the first packet of a connection needs the check; later ones follow conntrack. */
  newOnly: boolean;
}

const JUMPS: readonly JumpSpec[] = [
  // Rejecting is done from input/forward/output: older kernels refuse `reject` in prerouting.
  { from: CHAIN.filterInput, to: CHAIN.nodePortEndpointsCheck, newOnly: true },
  { from: CHAIN.filterInput, to: CHAIN.serviceEndpointsCheck, newOnly: true },
  { from: CHAIN.filterForward, to: CHAIN.serviceEndpointsCheck, newOnly: true },
  { from: CHAIN.filterOutput, to: CHAIN.serviceEndpointsCheck, newOnly: true },
  { from: CHAIN.filterPrerouting, to: CHAIN.firewallCheck, newOnly: true },
  { from: CHAIN.filterOutput, to: CHAIN.firewallCheck, newOnly: true },
  { from: CHAIN.natOutput, to: CHAIN.services, newOnly: false },
  { from: CHAIN.natPrerouting, to: CHAIN.services, newOnly: false },
  { from: CHAIN.natPostrouting, to: CHAIN.masquerading, newOnly: false },
  { from: CHAIN.filterForward, to: CHAIN.clusterIPsCheck, newOnly: true },
  { from: CHAIN.filterOutputPostDnat, to: CHAIN.clusterIPsCheck, newOnly: true },
];

/** `endpointShards`: the shared endpoint maps some slot range starts in (endpoint shape 'map'). */
export function renderSkeleton(
  family: IPFamily,
  fc: FamilyConfig,
  config: RulesetConfig,
  endpointShards: readonly number[] = [],
): Fragment {
  const b = new FragmentBuilder(tableFamily(family), config.tableName);
  const addr = addrType(family);
  const mark = masqueradeMark(config);

  for (const c of BASE_CHAINS) b.chain(c.name, { base: { type: c.type, hook: c.hook, priority: c.priority } });
  for (const j of JUMPS) b.rule(j.from, j.newOnly ? [ctStateNew, jump(j.to)] : [jump(j.to)]);

  b.set({ name: SET.clusterIPs, keyType: [addr], comment: 'Active ClusterIPs' });
  b.map({
    name: MAP.serviceIPs,
    keyType: [addr, 'inet_proto', 'inet_service'],
    dataType: 'verdict',
    comment: 'ClusterIP, ExternalIP and LoadBalancer IP traffic',
  });
  b.map({ name: MAP.serviceNodePorts, keyType: ['inet_proto', 'inet_service'], dataType: 'verdict', comment: 'NodePort traffic' });
  b.map({
    name: MAP.noEndpointServices,
    keyType: [addr, 'inet_proto', 'inet_service'],
    dataType: 'verdict',
    comment: 'vmap to drop or reject packets to services with no endpoints',
  });
  b.map({
    name: MAP.noEndpointNodePorts,
    keyType: ['inet_proto', 'inet_service'],
    dataType: 'verdict',
    comment: 'vmap to drop or reject packets to service nodeports with no endpoints',
  });
  b.map({
    name: MAP.firewallIPs,
    keyType: [addr, 'inet_proto', 'inet_service'],
    dataType: 'verdict',
    comment: 'destinations that are subject to LoadBalancerSourceRanges',
  });

  // Masquerading: the mark asks for it, postrouting does it (and clears the
  // mark, so that a packet that re-enters the stack is judged afresh).
  b.rule(CHAIN.markForMasquerade, [{ kind: 'mark-set', value: mark, or: true }]);
  // Hairpin: an endpoint that reached itself through a service (source and
  // DNATed destination are the same endpoint) must see the node as source, or
  // it would answer itself directly and the client would drop the reply.
  // Endpoint chains mark such traffic themselves; this set serves the ports
  // that have none (endpoint shape 'map'), and exists only in that shape so
  // that the 'chains' ruleset is kube-proxy's.
  if (config.endpointShape === 'map') {
    for (const shard of endpointShards) {
      b.map({
        name: shardMapName(shard),
        ...endpointMapTypes(family),
        comment: 'endpoints of service ports, a slot range each',
      });
    }
    b.set({
      name: SET.hairpinEndpoints,
      keyType: hairpinKeyType(family),
      comment: 'endpoints whose traffic to themselves through a service is masqueraded',
    });
    b.rule(CHAIN.masquerading, [
      match({ kind: 'ct', key: 'status' }, 'dnat'),
      lookup([saddr(family), daddr(family)], SET.hairpinEndpoints),
      jump(CHAIN.markForMasquerade),
    ]);
  }
  b.rule(CHAIN.masquerading, [{ kind: 'match', left: { kind: 'meta', key: 'mark' }, op: '==', right: '0x0', mask: mark }, ret]);
  b.rule(CHAIN.masquerading, [{ kind: 'mark-xor', value: mark }]);
  b.rule(CHAIN.masquerading, [{ kind: 'masquerade', fullyRandom: true }]);

  // Dispatch. NodePorts answer on the configured addresses, or on every local
  // address except loopback (kube-proxy does not support localhost NodePorts).
  const nodePortMatch: Statement[] =
    fc.nodePortAddresses === 'all'
      ? [fibLocal('daddr'), match(daddr(family), loopbackNet(family), '!=')]
      : [lookup([daddr(family)], SET.nodePortIPs)];
  if (fc.nodePortAddresses !== 'all') {
    b.set({ name: SET.nodePortIPs, keyType: [addr], comment: 'IPs that accept NodePort traffic' });
    for (const ip of fc.nodePortAddresses) b.element(SET.nodePortIPs, [ip]);
  }
  b.rule(CHAIN.services, [vmap(serviceKey(family), MAP.serviceIPs)]);
  b.rule(CHAIN.services, [...nodePortMatch, vmap(nodePortKey, MAP.serviceNodePorts)]);

  // No endpoints: reject or drop before the packet goes anywhere. Only
  // local-destined NodePort traffic can be for us (filter-input), so the
  // loopback exclusion suffices there without `fib`.
  b.chain(CHAIN.reject, { comment: 'helper for @no-endpoint-services / @no-endpoint-nodeports' });
  b.rule(CHAIN.reject, [rejectStatement(family)]);
  b.rule(CHAIN.serviceEndpointsCheck, [vmap(serviceKey(family), MAP.noEndpointServices)]);
  b.rule(
    CHAIN.nodePortEndpointsCheck,
    fc.nodePortAddresses === 'all'
      ? [match(daddr(family), loopbackNet(family), '!='), vmap(nodePortKey, MAP.noEndpointNodePorts)]
      : [lookup([daddr(family)], SET.nodePortIPs), vmap(nodePortKey, MAP.noEndpointNodePorts)],
  );

  b.rule(CHAIN.firewallCheck, [vmap(serviceKey(family), MAP.firewallIPs)]);

  // After DNAT, a packet still addressed to a ClusterIP matched no service
  // port: a wrong port (reject), or an unallocated address of the range (drop).
  b.rule(
    CHAIN.clusterIPsCheck,
    [lookup([daddr(family)], SET.clusterIPs), rejectStatement(family)],
    'Reject traffic to invalid ports of ClusterIPs',
  );
  for (const cidr of fc.serviceCIDRs) {
    b.rule(CHAIN.clusterIPsCheck, [match(daddr(family), cidr), drop], 'Drop traffic to unallocated ClusterIPs');
  }

  if (offloadEnabled(config)) {
    b.flowtable({ name: FLOWTABLE, hook: 'ingress', priority: FILTER_PRIORITY, devices: [...config.flowtableDevices] });
    b.rule(CHAIN.filterForward, [
      lookup([{ kind: 'ct-addr', dir: 'original', field: family === 'IPv4' ? 'ip daddr' : 'ip6 daddr' }], SET.clusterIPs),
      { kind: 'match', left: { kind: 'ct', key: 'packets' }, op: '>', right: String(config.offloadPacketThreshold) },
      { kind: 'flow-offload', flowtable: FLOWTABLE },
    ]);
  }
  return b.finish();
}

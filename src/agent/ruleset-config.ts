// From flags, the Node object and what the kernel can do to the renderer's
// RulesetConfig. Pure, so the mapping of every flag is table-tested.

import { BlockList } from 'node:net';
import type { AgentOptions } from './options.ts';
import type { IPFamily, NodeInfo } from '../k8s/types.ts';
import { parseIP, textFamily } from '../net/ip.ts';
import { defaultRulesetConfig, type FamilyConfig, type RulesetConfig } from '../reconciler/config.ts';

export interface OffloadState {
  /** KubeProxyAcceleration gate and --offload-packet-threshold > 0. */
  wanted: boolean;
  /** The kernel's answer to the flowtable probe. */
  supported: boolean;
  devices: string[];
}

export interface LocalAddress {
  address: string;
  family: IPFamily;
}

function familyOf(cidrOrIP: string): IPFamily {
  return textFamily(cidrOrIP.split('/')[0]!, 'strict') === 'IPv4' ? 'IPv4' : 'IPv6';
}

/**
 * The Node's addresses of one family (of one type, when given), read as the
 * model reads API addresses: the API stores them as written, leading zeros and all.
 */
function nodeAddresses(node: NodeInfo | undefined, family: IPFamily, type?: string): string[] {
  const out: string[] = [];
  for (const a of node?.addresses ?? []) {
    if (type !== undefined && a.type !== type) continue;
    const ip = parseIP(a.address);
    if (ip?.family === family) out.push(ip.address);
  }
  return out;
}

function inCidrs(family: IPFamily, cidrs: readonly string[], address: string): boolean {
  const list = new BlockList();
  const type = family === 'IPv4' ? 'ipv4' : 'ipv6';
  for (const c of cidrs) {
    const [net, bits] = c.split('/');
    list.addSubnet(net!, Number(bits), type);
  }
  return list.check(address, type);
}

/**
 * Addresses that accept NodePorts in one family:
 * - 'primary' (the default): the Node's InternalIPs of that family (kube-proxy's
 *   "primary IPs"); none known yet → none;
 * - a zero-length prefix (0.0.0.0/0, ::/0): every local address ('all');
 * - other CIDRs: the local addresses inside them.
 */
export function nodePortAddressesFor(
  family: IPFamily,
  flag: readonly string[],
  node: NodeInfo | undefined,
  local: readonly LocalAddress[],
): 'all' | string[] {
  if (flag.length === 1 && flag[0] === 'primary') {
    return nodeAddresses(node, family, 'InternalIP');
  }
  const cidrs = flag.filter((c) => familyOf(c) === family);
  if (cidrs.some((c) => c.endsWith('/0'))) return 'all';
  return local.filter((a) => a.family === family && inCidrs(family, cidrs, a.address)).map((a) => a.address);
}

/**
 * The CIDRs of kube-proxy's CIDR detect-local modes in one family: ClusterCIDR
 * takes --cluster-cidr; NodeCIDR the Node's spec.podCIDRs, so it follows the
 * Node as it changes (none until the Node is known: nothing is then treated as
 * local, as kube-proxy without a detector).
 */
export function localCIDRsFor(family: IPFamily, options: AgentOptions, node: NodeInfo | undefined): string[] {
  const mode = options.detectLocal?.mode ?? 'ClusterCIDR';
  switch (mode) {
    case 'ClusterCIDR':
      return options.clusterCIDRs.filter((c) => familyOf(c) === family);
    case 'NodeCIDR':
      return (node?.podCIDRs ?? []).filter((c) => familyOf(c) === family);
    case 'BridgeInterface':
    case 'InterfaceNamePrefix':
      return [];
    default:
      return mode satisfies never;
  }
}

/** The interface modes' `iifname` operand: the bridge, or the prefix with nft's wildcard. */
export function localInterfaceFor(options: AgentOptions): string | undefined {
  const d = options.detectLocal;
  if (d?.mode === 'BridgeInterface') return d.bridgeInterface;
  if (d?.mode === 'InterfaceNamePrefix') return d.interfaceNamePrefix === undefined ? undefined : `${d.interfaceNamePrefix}*`;
  return undefined;
}

/** The Node's addresses, with --bind-address as the primary IP of its family when it names one (as kube-proxy). */
function nodeWithBindAddress(options: AgentOptions, node: NodeInfo | undefined): NodeInfo | undefined {
  const bind = options.bindAddress;
  if (bind === undefined || node === undefined) return node;
  const family = familyOf(bind);
  const rest = node.addresses.filter((a) => !(a.type === 'InternalIP' && familyOf(a.address) === family));
  return { ...node, addresses: [{ type: 'InternalIP', address: bind }, ...rest] };
}

export function rulesetConfigFor(
  options: AgentOptions,
  nodeObject: NodeInfo | undefined,
  offload: OffloadState,
  local: readonly LocalAddress[] = [],
): RulesetConfig {
  const node = nodeWithBindAddress(options, nodeObject);
  const families: Partial<Record<IPFamily, FamilyConfig>> = {};
  for (const family of ['IPv4', 'IPv6'] as const) {
    families[family] = {
      nodePortAddresses: nodePortAddressesFor(family, options.nodePortAddresses, node, local),
      nodeIPs: nodeAddresses(node, family),
      clusterCIDRs: localCIDRsFor(family, options, node),
      serviceCIDRs: options.serviceCIDRs.filter((c) => familyOf(c) === family),
    };
  }
  const localInterface = localInterfaceFor(options);
  return defaultRulesetConfig({
    tableName: options.table,
    families,
    ...(localInterface !== undefined ? { localInterface } : {}),
    ...(options.masqueradeBit !== undefined ? { masqueradeBit: options.masqueradeBit } : {}),
    masqueradeAll: options.masqueradeAll,
    offloadPacketThreshold: offload.wanted ? options.offloadPacketThreshold : 0,
    flowtableSupported: offload.supported,
    flowtableDevices: offload.devices,
    endpointShape: options.endpointShape,
  });
}

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
function nodePortAddressesFor(family: IPFamily, flag: readonly string[], node: NodeInfo | undefined, local: readonly LocalAddress[]): 'all' | string[] {
  if (flag.length === 1 && flag[0] === 'primary') {
    return nodeAddresses(node, family, 'InternalIP');
  }
  const cidrs = flag.filter((c) => familyOf(c) === family);
  if (cidrs.some((c) => c.endsWith('/0'))) return 'all';
  return local.filter((a) => a.family === family && inCidrs(family, cidrs, a.address)).map((a) => a.address);
}

export function rulesetConfigFor(options: AgentOptions, node: NodeInfo | undefined, offload: OffloadState, local: readonly LocalAddress[] = []): RulesetConfig {
  const families: Partial<Record<IPFamily, FamilyConfig>> = {};
  for (const family of ['IPv4', 'IPv6'] as const) {
    families[family] = {
      nodePortAddresses: nodePortAddressesFor(family, options.nodePortAddresses, node, local),
      nodeIPs: nodeAddresses(node, family),
      clusterCIDRs: options.clusterCIDRs.filter((c) => familyOf(c) === family),
      serviceCIDRs: options.serviceCIDRs.filter((c) => familyOf(c) === family),
    };
  }
  return defaultRulesetConfig({
    tableName: options.table,
    families,
    masqueradeAll: options.masqueradeAll,
    offloadPacketThreshold: offload.wanted ? options.offloadPacketThreshold : 0,
    flowtableSupported: offload.supported,
    flowtableDevices: offload.devices,
    endpointShape: options.endpointShape,
  });
}

// What the ruleset renderer needs to know besides the ServicePorts: the node's
// addresses, the cluster's CIDRs and the proxy's own switches. Plain data; the
// agent builds it from flags and the Node object, the tests from literals.
//
// Families: one table per IP family (`ip kube-nft-proxy`, `ip6 kube-nft-proxy`),
// as kube-proxy's nftables mode does, rather than one `inet` table:
// - an operator sees the same objects, with the same names, as in kube-proxy;
// - in an `ip` table every packet is IPv4, so `ip daddr` needs no hidden
//   `meta nfproto ipv4` guard (our rules are structured statements, and a
//   forgotten guard in an inet table would read IPv6 bytes as an IPv4 header);
// - `reject` answers ICMP port-unreachable of the table's family, exactly what
//   kube-proxy does for TCP too, without icmpx;
// - a family that is not configured simply has no table.
// The cost is a second copy of the static skeleton (a few dozen objects).

import { BlockList } from 'node:net';
import type { IPFamily } from '../k8s/types.ts';
import { textFamily } from '../net/ip.ts';
import { canonicalValue } from '../nft/values.ts';
import { DEFAULT_ENDPOINT_MAP_BLOCKS } from './endpoint-slots.ts';

export interface FamilyConfig {
  /**
   * Addresses that accept NodePort traffic (kube-proxy's `nodeport-ips` set),
   * or 'all' for every local address (`fib daddr type local`, loopback excluded).
   * The agent resolves `--nodeport-addresses` (CIDRs or 'primary') to addresses.
   */
  nodePortAddresses: 'all' | string[];
  /**
   * The node's own addresses: a LoadBalancer source range that holds one of them also admits the LB IPs (hairpin through a VIP-like LB).
   */
  nodeIPs: string[];
  /**
   * The CIDRs local (pod) traffic comes from: `--cluster-cidr` in kube-proxy's
   * detect-local mode ClusterCIDR, the Node's spec.podCIDRs in NodeCIDR. Traffic
   * to a ClusterIP from outside them is masqueraded; eTP Local short-circuits
   * traffic from inside them. Empty in the interface modes (see localInterface).
   */
  clusterCIDRs: string[];
  /** Service CIDRs: traffic to an address inside them that is no ClusterIP is dropped. */
  serviceCIDRs: string[];
}

/**
 * How a service port without session affinity reaches its endpoints:
 * - 'map' (the default): one DNAT through its slot range of a shared endpoint
 *   map (see endpoint-slots.ts), hairpin through the shared `hairpin-endpoints`
 *   set. An endpoint change is element updates only (no table re-validation),
 *   and a cold sync creates a few hundred maps, not one per port;
 * - 'chains': a `numgen` cascade of per-endpoint chains, each with its own
 *   hairpin rule (kube-proxy's shape).
 * Ports with session affinity always use per-endpoint chains.
 */
export type EndpointShape = 'chains' | 'map';
export const ENDPOINT_SHAPES: readonly EndpointShape[] = ['chains', 'map'];

export interface RulesetConfig {
  /** Our table's name in each family; never anyone else's table. */
  tableName: string;
  /** One table per configured family. */
  families: Partial<Record<IPFamily, FamilyConfig>>;
  /**
   * Detect-local modes BridgeInterface and InterfaceNamePrefix: local (pod)
   * traffic is what arrives on this interface (`br0`) or on any whose name
   * starts with the prefix (`veth*`, nft's wildcard), matched with `iifname`
   * where the CIDR modes match `saddr`.
   */
  localInterface?: string;
  /** Masquerade all traffic to ClusterIPs (`--masquerade-all`). */
  masqueradeAll: boolean;
  /** Bit of the packet mark that asks for masquerading (kube-proxy: 14, i.e. 0x4000). */
  masqueradeBit: number;
  /** KEP-4963: offload a Service connection after this many packets; 0 disables offload. */
  offloadPacketThreshold: number;
  /** Whether the kernel has flowtables (the dataplane's capability probe); without them no offload objects are rendered. */
  flowtableSupported: boolean;
  /** Interfaces the flowtable attaches to (kept true to the node's links by the agent). */
  flowtableDevices: string[];
  /** How service ports without session affinity reach their endpoints (see EndpointShape). */
  endpointShape: EndpointShape;
  /**
   * Blocks of 16 slots in the shared endpoint map (endpoint shape 'map'; see
   * endpoint-slots.ts); default 2^26. Tests make it small to force regions to
   * collide.
   */
  endpointMapBlocks?: number;
}

export const DEFAULT_TABLE_NAME = 'kube-nft-proxy';

export function defaultRulesetConfig(overrides: Partial<RulesetConfig> = {}): RulesetConfig {
  return {
    tableName: DEFAULT_TABLE_NAME,
    families: {},
    masqueradeAll: false,
    masqueradeBit: 14,
    offloadPacketThreshold: 0,
    flowtableSupported: false,
    flowtableDevices: [],
    endpointShape: 'map',
    ...overrides,
  };
}

export class RulesetConfigError extends Error {
  readonly code = 'ERR_RULESET_CONFIG';
  readonly field: string;
  constructor(field: string, reason: string) {
    super(`ruleset config ${field}: ${reason}`);
    this.name = 'RulesetConfigError';
    this.field = field;
  }
}

const TABLE_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

/** Throws RulesetConfigError on the first bad field; returns the config with addresses in canonical form. */
export function validateRulesetConfig(c: RulesetConfig): RulesetConfig {
  if (!TABLE_NAME.test(c.tableName)) throw new RulesetConfigError('tableName', `${JSON.stringify(c.tableName)} is not a valid table name`);
  if (!Number.isInteger(c.masqueradeBit) || c.masqueradeBit < 0 || c.masqueradeBit > 31) {
    throw new RulesetConfigError('masqueradeBit', `must be 0-31, got ${c.masqueradeBit}`);
  }
  if (!Number.isInteger(c.offloadPacketThreshold) || c.offloadPacketThreshold < 0) {
    throw new RulesetConfigError('offloadPacketThreshold', `must be a whole number, got ${c.offloadPacketThreshold}`);
  }
  if (!ENDPOINT_SHAPES.includes(c.endpointShape)) {
    throw new RulesetConfigError('endpointShape', `must be one of ${ENDPOINT_SHAPES.join(', ')}, got ${JSON.stringify(c.endpointShape)}`);
  }
  const blocks = c.endpointMapBlocks;
  if (blocks !== undefined && (!Number.isInteger(blocks) || blocks < 1 || blocks > DEFAULT_ENDPOINT_MAP_BLOCKS)) {
    throw new RulesetConfigError('endpointMapBlocks', `must be 1-${DEFAULT_ENDPOINT_MAP_BLOCKS}, got ${blocks}`);
  }
  if (c.localInterface !== undefined) {
    try {
      canonicalValue('ifname', c.localInterface);
    } catch (e) {
      throw new RulesetConfigError('localInterface', (e as Error).message);
    }
  }
  const families: Partial<Record<IPFamily, FamilyConfig>> = {};
  for (const family of ['IPv4', 'IPv6'] as const) {
    const f = c.families[family];
    if (!f) continue;
    const where = `families.${family}`;
    families[family] = {
      nodePortAddresses:
        f.nodePortAddresses === 'all' ? 'all' : f.nodePortAddresses.map((a, i) => address(family, a, `${where}.nodePortAddresses[${i}]`)),
      nodeIPs: f.nodeIPs.map((a, i) => address(family, a, `${where}.nodeIPs[${i}]`)),
      clusterCIDRs: f.clusterCIDRs.map((a, i) => cidr(family, a, `${where}.clusterCIDRs[${i}]`)),
      serviceCIDRs: f.serviceCIDRs.map((a, i) => cidr(family, a, `${where}.serviceCIDRs[${i}]`)),
    };
  }
  return { ...c, families };
}

function address(family: IPFamily, text: string, field: string): string {
  if (textFamily(text, 'strict') !== family) throw new RulesetConfigError(field, `${JSON.stringify(text)} is not an ${family} address`);
  return canonicalValue(family === 'IPv4' ? 'ipv4_addr' : 'ipv6_addr', text);
}

function cidr(family: IPFamily, text: string, field: string): string {
  const slash = text.indexOf('/');
  if (slash < 0) throw new RulesetConfigError(field, `${JSON.stringify(text)} is not a CIDR`);
  address(family, text.slice(0, slash), field);
  try {
    return canonicalValue(family === 'IPv4' ? 'ipv4_addr' : 'ipv6_addr', text);
  } catch (e) {
    throw new RulesetConfigError(field, (e as Error).message);
  }
}

/** The masquerade mark as the canonical `mark` text ('0x4000' for bit 14). */
export function masqueradeMark(c: RulesetConfig): string {
  return `0x${(2 ** c.masqueradeBit).toString(16)}`;
}

/** Whether the offload flowtable and its forward rule belong in the ruleset. */
export function offloadEnabled(c: RulesetConfig): boolean {
  return c.offloadPacketThreshold > 0 && c.flowtableSupported;
}

/** Whether any of the CIDRs holds any of the addresses. */
export function cidrsContainAny(family: IPFamily, cidrs: readonly string[], addresses: readonly string[]): boolean {
  if (cidrs.length === 0 || addresses.length === 0) return false;
  const type = family === 'IPv4' ? 'ipv4' : 'ipv6';
  const list = new BlockList();
  for (const c of cidrs) {
    const slash = c.indexOf('/');
    if (slash < 0) list.addAddress(c, type);
    else list.addSubnet(c.slice(0, slash), Number(c.slice(slash + 1)), type);
  }
  return addresses.some((a) => list.check(a, type));
}

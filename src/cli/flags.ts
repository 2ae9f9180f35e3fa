// Command line of the agent, shaped like kube-proxy's so that an operator's
// muscle memory carries over. Pure: argv in, options or a FlagError out.

import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import type { AgentOptions } from '../agent/options.ts';
import { ENDPOINT_SHAPES, type EndpointShape } from '../reconciler/config.ts';
import { parseDuration } from './duration.ts';


export type Command = { command: 'run'; options: AgentOptions } | { command: 'cleanup'; options: AgentOptions } | { command: 'help' } | { command: 'version' };

export class FlagError extends Error {
  readonly code = 'ERR_BAD_FLAG';
}

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;

// kube-proxy's NFT table names are short; ours must also fit the kernel's 256-byte
// limit and nft's identifier grammar so that `nft list table` works by hand.
const TABLE_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

export const USAGE = `Usage: kube-nft-proxy [run] [flags]
       kube-nft-proxy cleanup [--table NAME] [--netns NAME]

Flags (kube-proxy compatible where the name matches):
  --kubeconfig PATH                 kubeconfig file (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)
  --manifests PATH                  read Services/EndpointSlices/Nodes from YAML files instead of an API server
  --hostname-override NAME          this node's name (default: the host name)
  --cluster-cidr CIDR[,CIDR]        pod CIDRs; traffic from outside them to ClusterIPs is masqueraded
  --service-cluster-ip-range CIDR[,CIDR]
                                    service CIDRs; unallocated ClusterIPs inside them are dropped
  --nodeport-addresses CIDR[,CIDR]|primary
                                    addresses that accept NodePorts (default: primary)
  --masquerade-all                  masquerade all traffic to services
  --min-sync-period DURATION        least time between two syncs (default 1s; 0 allowed)
  --sync-period DURATION            interval of full resyncs that re-assert every rule (default 1h, as
                                    kube-proxy's nftables mode; changes are synced as they come)
  --feature-gates K=V[,K=V]         TopologyAwareProxying, LoadBalancerIPMode, KubeProxyAcceleration
  --service-proxy-name NAME         serve only Services labelled service.kubernetes.io/service-proxy-name=NAME
  --table NAME                      our nftables table (default kube-nft-proxy)
  --offload-packet-threshold N      offload Service connections after N packets (default 20; 0 disables)
  --offload-interfaces NAME[,NAME]  interfaces the flowtable may use (default: all but loopback)
  --offload-exclude-interfaces NAME[,NAME]
  --endpoint-shape map|chains       ports without affinity DNAT through slot ranges of shared endpoint maps
                                    (default) or a cascade of per-endpoint chains (kube-proxy's shape; slower)
  --metrics-bind-address ADDR:PORT  (default 127.0.0.1:10249)
  --healthz-bind-address ADDR:PORT  (default 0.0.0.0:10256)
  --netns NAME|PATH                 program another network namespace
  --dry-run                         print the desired ruleset as nft text and exit
  --log-level LEVEL                 trace|debug|info|warn|error (default info)
  -h, --help                        this text
  --version                         print the version
`;

function list(value: string | undefined): string[] {
  if (value === undefined) return [];
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function cidrs(flag: string, value: string | undefined): string[] {
  const out = list(value);
  for (const c of out) {
    const slash = c.indexOf('/');
    const addr = slash < 0 ? '' : c.slice(0, slash);
    const bits = slash < 0 ? NaN : Number(c.slice(slash + 1));
    const family = isIP(addr);
    const max = family === 4 ? 32 : 128;
    if (family === 0 || !Number.isInteger(bits) || bits < 0 || bits > max) {
      throw new FlagError(`--${flag}: ${JSON.stringify(c)} is not a CIDR (expected e.g. 10.244.0.0/16 or fd00::/64)`);
    }
  }
  return out;
}

function duration(flag: string, value: string | undefined, fallbackMs: number): number {
  if (value === undefined) return fallbackMs;
  try {
    return parseDuration(value);
  } catch (e) {
    throw new FlagError(`--${flag}: ${(e as Error).message}`);
  }
}

function bindAddress(flag: string, value: string): string {
  const colon = value.lastIndexOf(':');
  const port = Number(value.slice(colon + 1));
  const host = value.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  if (colon < 0 || !Number.isInteger(port) || port < 0 || port > 65535 || (host !== '' && isIP(host) === 0)) {
    throw new FlagError(`--${flag}: ${JSON.stringify(value)} is not ADDRESS:PORT`);
  }
  return value;
}

export function parseCommandLine(argv: readonly string[]): Command {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        kubeconfig: { type: 'string' },
        manifests: { type: 'string' },
        'hostname-override': { type: 'string' },
        'cluster-cidr': { type: 'string' },
        'service-cluster-ip-range': { type: 'string' },
        'nodeport-addresses': { type: 'string' },
        'masquerade-all': { type: 'boolean' },
        'min-sync-period': { type: 'string' },
        'sync-period': { type: 'string' },
        'feature-gates': { type: 'string' },
        'service-proxy-name': { type: 'string' },
        table: { type: 'string' },
        'offload-packet-threshold': { type: 'string' },
        'offload-interfaces': { type: 'string' },
        'offload-exclude-interfaces': { type: 'string' },
        'endpoint-shape': { type: 'string' },
        'metrics-bind-address': { type: 'string' },
        'healthz-bind-address': { type: 'string' },
        netns: { type: 'string' },
        'dry-run': { type: 'boolean' },
        'log-level': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean' },
      },
    });
  } catch (e) {
    throw new FlagError(`${(e as Error).message}\n\n${USAGE}`);
  }
  const v = parsed.values;
  if (v.help) return { command: 'help' };
  if (v.version) return { command: 'version' };

  const [sub, ...rest] = parsed.positionals;
  if (rest.length > 0 || (sub !== undefined && sub !== 'run' && sub !== 'cleanup')) {
    throw new FlagError(`unexpected argument ${JSON.stringify(rest[0] ?? sub)}\n\n${USAGE}`);
  }

  const table = v.table ?? 'kube-nft-proxy';
  if (!TABLE_NAME.test(table)) {
    throw new FlagError(`--table: ${JSON.stringify(table)} must start with a letter and hold only letters, digits, '-' and '_' (at most 64)`);
  }
  const logLevel = (v['log-level'] ?? 'info') as AgentOptions['logLevel'];
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new FlagError(`--log-level: ${JSON.stringify(logLevel)} is not one of ${LOG_LEVELS.join(', ')}`);
  }
  const thresholdText = v['offload-packet-threshold'] ?? '20';
  const offloadPacketThreshold = Number(thresholdText);
  if (!/^\d+$/.test(thresholdText) || offloadPacketThreshold > 0xffffffff) {
    throw new FlagError(`--offload-packet-threshold: ${JSON.stringify(thresholdText)} is not a whole number of packets (0 disables offload)`);
  }
  const endpointShape = (v['endpoint-shape'] ?? 'map') as EndpointShape;
  if (!ENDPOINT_SHAPES.includes(endpointShape)) {
    throw new FlagError(`--endpoint-shape: ${JSON.stringify(endpointShape)} is not ${ENDPOINT_SHAPES.join(' or ')}`);
  }
  const nodePortAddresses = v['nodeport-addresses'] === 'primary' || v['nodeport-addresses'] === undefined ? ['primary'] : cidrs('nodeport-addresses', v['nodeport-addresses']);
  const minSyncPeriodMs = duration('min-sync-period', v['min-sync-period'], 1000);
  const syncPeriodMs = duration('sync-period', v['sync-period'], 3_600_000);
  if (syncPeriodMs <= 0) throw new FlagError('--sync-period must be greater than 0');
  if (v.manifests !== undefined && v.kubeconfig !== undefined) {
    throw new FlagError('--manifests and --kubeconfig are exclusive: choose one source of cluster state');
  }
  if (v['service-proxy-name'] !== undefined && !/^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/.test(v['service-proxy-name'])) {
    throw new FlagError(`--service-proxy-name: ${JSON.stringify(v['service-proxy-name'])} is not a valid label value`);
  }

  const options: AgentOptions = {
    kubeconfig: v.kubeconfig,
    manifests: v.manifests,
    hostnameOverride: v['hostname-override'],
    clusterCIDRs: cidrs('cluster-cidr', v['cluster-cidr']),
    serviceCIDRs: cidrs('service-cluster-ip-range', v['service-cluster-ip-range']),
    nodePortAddresses,
    masqueradeAll: v['masquerade-all'] ?? false,
    minSyncPeriodMs,
    syncPeriodMs,
    featureGates: v['feature-gates'] ?? '',
    serviceProxyName: v['service-proxy-name'],
    table,
    offloadPacketThreshold,
    offloadInterfaces: list(v['offload-interfaces']),
    offloadExcludeInterfaces: list(v['offload-exclude-interfaces']),
    metricsBindAddress: bindAddress('metrics-bind-address', v['metrics-bind-address'] ?? '127.0.0.1:10249'),
    healthzBindAddress: bindAddress('healthz-bind-address', v['healthz-bind-address'] ?? '0.0.0.0:10256'),
    endpointShape,
    netns: v.netns,
    dryRun: v['dry-run'] ?? false,
    logLevel,
  };
  return { command: sub === 'cleanup' ? 'cleanup' : 'run', options };
}

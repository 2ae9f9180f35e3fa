// Every flag: kube-proxy's with kube-proxy's names and meanings (each writes a
// field of the KubeProxyConfiguration, as kube-proxy's flags do), ours (each
// writes a field of our KubeNftProxyConfiguration), the command flags, and the
// kube-proxy flags that make no sense here, refused with the reason.

import { parseDuration } from '../config/duration.ts';
import type { Configuration } from '../config/config-file.ts';
import { FeatureGateError, parseFeatureGates } from '../config/feature-gates.ts';

export class FlagError extends Error {
  readonly code = 'ERR_BAD_FLAG';
}

export type FlagGroup = 'kube-proxy' | 'logging' | 'ours' | 'command';

export interface FlagSpec {
  group: FlagGroup;
  type: 'string' | 'boolean';
  /** Argument name shown in --help ('' for booleans). */
  arg: string;
  help: string;
  /** Writes the flag's value into the configuration (absent for command flags). */
  apply?: (c: Configuration, value: string | boolean) => void;
}

function num(flag: string, text: string, min: number, max: number, integer = true): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min || n > max) {
    throw new FlagError(`--${flag}: ${JSON.stringify(text)} is not a ${integer ? 'whole ' : ''}number in [${min}, ${max}]`);
  }
  return n;
}

function dur(flag: string, text: string): number {
  try {
    return parseDuration(text);
  } catch (e) {
    throw new FlagError(`--${flag}: ${(e as Error).message}`);
  }
}

export function list(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

const str = (v: string | boolean) => String(v);
const I32 = 2 ** 31 - 1;

export const FLAGS: Readonly<Record<string, FlagSpec>> = {
  // --- kube-proxy's flags, with its names, meanings and defaults
  'bind-address': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'IP',
    help: "overrides this node's primary IP (default 0.0.0.0: from the Node object)",
    apply: (c, v) => (c.kubeProxy.bindAddress = str(v)),
  },
  'cluster-cidr': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'CIDR[,CIDR]',
    help: 'pod CIDRs (detect-local-mode ClusterCIDR): traffic to a ClusterIP from outside them is masqueraded',
    apply: (c, v) => (c.kubeProxy.clusterCIDR = str(v)),
  },
  'config-sync-period': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'DURATION',
    help: 'accepted for compatibility (default 15m0s); our informers need no resync',
    apply: (c, v) => (c.kubeProxy.configSyncPeriod = dur('config-sync-period', str(v))),
  },
  'conntrack-max-per-core': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'N',
    help: 'conntrack entries per CPU (default 32768; 0 leaves the limit as is)',
    apply: (c, v) => (c.kubeProxy.conntrack.maxPerCore = num('conntrack-max-per-core', str(v), 0, I32)),
  },
  'conntrack-min': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'N',
    help: 'least conntrack entries (default 131072)',
    apply: (c, v) => (c.kubeProxy.conntrack.min = num('conntrack-min', str(v), 0, I32)),
  },
  'conntrack-tcp-be-liberal': {
    group: 'kube-proxy',
    type: 'boolean',
    arg: '',
    help: 'set nf_conntrack_tcp_be_liberal',
    apply: (c, v) => (c.kubeProxy.conntrack.tcpBeLiberal = v === true),
  },
  'conntrack-tcp-timeout-close-wait': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'DURATION',
    help: 'CLOSE_WAIT timeout (default 1h0m0s)',
    apply: (c, v) => (c.kubeProxy.conntrack.tcpCloseWaitTimeout = dur('conntrack-tcp-timeout-close-wait', str(v))),
  },
  'conntrack-tcp-timeout-established': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'DURATION',
    help: 'established TCP timeout (default 24h0m0s; 0 leaves it)',
    apply: (c, v) => (c.kubeProxy.conntrack.tcpEstablishedTimeout = dur('conntrack-tcp-timeout-established', str(v))),
  },
  'conntrack-udp-timeout': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'DURATION',
    help: 'UNREPLIED UDP timeout (0 leaves it)',
    apply: (c, v) => (c.kubeProxy.conntrack.udpTimeout = dur('conntrack-udp-timeout', str(v))),
  },
  'conntrack-udp-timeout-stream': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'DURATION',
    help: 'ASSURED UDP timeout (0 leaves it)',
    apply: (c, v) => (c.kubeProxy.conntrack.udpStreamTimeout = dur('conntrack-udp-timeout-stream', str(v))),
  },
  'detect-local-mode': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'MODE',
    help: 'ClusterCIDR (default), NodeCIDR, BridgeInterface or InterfaceNamePrefix',
    apply: (c, v) => (c.kubeProxy.detectLocalMode = str(v)),
  },
  'feature-gates': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'K=V[,K=V]',
    help: 'kube-proxy 1.32 gates and ours (TopologyAwareProxying, KubeProxyAcceleration)',
    apply: (c, v) => (c.kubeProxy.featureGates = gateMap(str(v))),
  },
  'healthz-bind-address': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'IP:PORT',
    help: '/healthz and /livez (default 0.0.0.0:10256; empty disables)',
    apply: (c, v) => (c.kubeProxy.healthzBindAddress = str(v)),
  },
  'hostname-override': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'NAME',
    help: "this node's name (default: the host name); wins over --config",
    apply: (c, v) => (c.kubeProxy.hostnameOverride = str(v)),
  },
  'iptables-masquerade-bit': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'N',
    help: 'the packet-mark bit that asks for masquerading, 0-31 (default 14)',
    apply: (c, v) => (c.kubeProxy.nftables.masqueradeBit = num('iptables-masquerade-bit', str(v), 0, 31)),
  },
  'iptables-min-sync-period': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'DURATION',
    help: 'as --min-sync-period (kube-proxy applies it to nftables mode too)',
    apply: (c, v) => (c.kubeProxy.nftables.minSyncPeriod = dur('iptables-min-sync-period', str(v))),
  },
  'iptables-sync-period': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'DURATION',
    help: 'as --sync-period (kube-proxy applies it to nftables mode too)',
    apply: (c, v) => (c.kubeProxy.nftables.syncPeriod = dur('iptables-sync-period', str(v))),
  },
  'kube-api-burst': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'N',
    help: 'API request burst (default 10)',
    apply: (c, v) => (c.kubeProxy.clientConnection.burst = num('kube-api-burst', str(v), 0, I32)),
  },
  'kube-api-content-type': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'TYPE',
    help: 'application/json; the protobuf default is read as JSON',
    apply: (c, v) => (c.kubeProxy.clientConnection.contentType = str(v)),
  },
  'kube-api-qps': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'QPS',
    help: 'API requests per second (default 5)',
    apply: (c, v) => (c.kubeProxy.clientConnection.qps = num('kube-api-qps', str(v), 0, 1e9, false)),
  },
  kubeconfig: {
    group: 'kube-proxy',
    type: 'string',
    arg: 'PATH',
    help: 'kubeconfig file (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)',
    apply: (c, v) => (c.kubeProxy.clientConnection.kubeconfig = str(v)),
  },
  'masquerade-all': {
    group: 'kube-proxy',
    type: 'boolean',
    arg: '',
    help: 'masquerade all traffic to Service IPs',
    apply: (c, v) => (c.kubeProxy.nftables.masqueradeAll = v === true),
  },
  'metrics-bind-address': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'IP:PORT',
    help: '/metrics (default 127.0.0.1:10249; empty disables)',
    apply: (c, v) => (c.kubeProxy.metricsBindAddress = str(v)),
  },
  'min-sync-period': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'DURATION',
    help: 'least time between two syncs (default 1s; 0 allowed)',
    apply: (c, v) => (c.kubeProxy.nftables.minSyncPeriod = dur('min-sync-period', str(v))),
  },
  'nodeport-addresses': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'CIDR[,CIDR]|primary',
    help: 'addresses that accept NodePorts (default: primary)',
    apply: (c, v) => (c.kubeProxy.nodePortAddresses = list(str(v))),
  },
  'oom-score-adj': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'N',
    help: 'our oom_score_adj, -1000..1000 (default -999)',
    apply: (c, v) => (c.kubeProxy.oomScoreAdj = num('oom-score-adj', str(v), -1000, 1000)),
  },
  'pod-bridge-interface': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'NAME',
    help: 'detect-local-mode BridgeInterface: the pods bridge',
    apply: (c, v) => (c.kubeProxy.detectLocal.bridgeInterface = str(v)),
  },
  'pod-interface-name-prefix': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'PREFIX',
    help: 'detect-local-mode InterfaceNamePrefix: the pod interfaces prefix',
    apply: (c, v) => (c.kubeProxy.detectLocal.interfaceNamePrefix = str(v)),
  },
  'proxy-mode': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'MODE',
    help: 'nftables (or empty); iptables and ipvs are refused',
    apply: (c, v) => (c.kubeProxy.mode = str(v)),
  },
  'show-hidden-metrics-for-version': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'X.Y',
    help: 'accepted; no metric of ours is hidden',
    apply: (c, v) => (c.kubeProxy.showHiddenMetricsForVersion = str(v)),
  },
  'sync-period': {
    group: 'kube-proxy',
    type: 'string',
    arg: 'DURATION',
    help: "kube-proxy's: a queued change older than 2x this turns /healthz unhealthy (default 30s)",
    apply: (c, v) => (c.kubeProxy.nftables.syncPeriod = dur('sync-period', str(v))),
  },
  // --- logging (win over --config, as in kube-proxy)
  v: {
    group: 'logging',
    type: 'string',
    arg: 'N',
    help: 'verbosity: 0-2 info, 3-4 debug, 5+ trace (default 0)',
    apply: (c, v) => (c.kubeProxy.logging.verbosity = num('v', str(v), 0, 2 ** 32 - 1)),
  },
  'logging-format': {
    group: 'logging',
    type: 'string',
    arg: 'text|json',
    help: 'json (default): one JSON object per line; text: one readable line per event',
    apply: (c, v) => (c.kubeProxy.logging.format = str(v)),
  },
  'log-flush-frequency': {
    group: 'logging',
    type: 'string',
    arg: 'DURATION',
    help: 'accepted; every line is written at once',
    apply: (c, v) => (c.kubeProxy.logging.flushFrequency = dur('log-flush-frequency', str(v))),
  },
  'log-level': {
    group: 'logging',
    type: 'string',
    arg: 'LEVEL',
    help: 'ours: trace|debug|info|warn|error|fatal; overrides --v',
    apply: (c, v) => (c.own.logLevel = str(v)),
  },
  // --- ours
  'endpoint-shape': {
    group: 'ours',
    type: 'string',
    arg: 'map|chains',
    help:
      'ports without affinity DNAT through slot ranges of shared endpoint maps\n(default) or a cascade of ' +
      "per-endpoint chains (kube-proxy's shape; slower)",
    apply: (c, v) => (c.own.endpointShape = str(v)),
  },
  'full-sync-period': {
    group: 'ours',
    type: 'string',
    arg: 'DURATION',
    help: 're-assert every rule this often (default 1h); changes are synced as they come',
    apply: (c, v) => (c.own.fullSyncPeriod = dur('full-sync-period', str(v))),
  },
  manifests: {
    group: 'ours',
    type: 'string',
    arg: 'PATH',
    help: 'read Services/EndpointSlices/Nodes from YAML files instead of an API server',
    apply: (c, v) => (c.own.manifests = str(v)),
  },
  'offload-exclude-interfaces': {
    group: 'ours',
    type: 'string',
    arg: 'NAME[,NAME]',
    help: 'interfaces the flowtable must not use',
    apply: (c, v) => (c.own.offload.excludeInterfaces = list(str(v))),
  },
  'offload-interfaces': {
    group: 'ours',
    type: 'string',
    arg: 'NAME[,NAME]',
    help: 'interfaces the flowtable may use (default: all but loopback)',
    apply: (c, v) => (c.own.offload.interfaces = list(str(v))),
  },
  'offload-packet-threshold': {
    group: 'ours',
    type: 'string',
    arg: 'N',
    help: 'offload Service connections after N packets (default 20; 0 disables)',
    apply: (c, v) => (c.own.offload.packetThreshold = num('offload-packet-threshold', str(v), 0, 0xffffffff)),
  },
  'service-cluster-ip-range': {
    group: 'ours',
    type: 'string',
    arg: 'CIDR[,CIDR]',
    help: 'service CIDRs; unallocated ClusterIPs inside them are dropped',
    apply: (c, v) => (c.own.serviceCIDRs = list(str(v))),
  },
  'service-proxy-name': {
    group: 'ours',
    type: 'string',
    arg: 'NAME',
    help: 'serve only Services labelled service.kubernetes.io/service-proxy-name=NAME',
    apply: (c, v) => (c.own.serviceProxyName = str(v)),
  },
  table: {
    group: 'ours',
    type: 'string',
    arg: 'NAME',
    help: 'our nftables table (default kube-nft-proxy)',
    apply: (c, v) => (c.own.table = str(v)),
  },
  // --- what to do (never in a config file)
  cleanup: {
    group: 'command',
    type: 'boolean',
    arg: '',
    help: "remove our tables and exit (kube-proxy's flag; also the `cleanup` subcommand)",
  },
  config: {
    group: 'command',
    type: 'string',
    arg: 'FILE',
    help:
      'KubeProxyConfiguration (+ optional KubeNftProxyConfiguration); wins over flags\nexcept logging and ' +
      '--hostname-override; we exit when it changes',
  },
  'dry-run': { group: 'command', type: 'boolean', arg: '', help: 'print the desired ruleset as nft text and exit' },
  help: { group: 'command', type: 'boolean', arg: '', help: 'this text' },
  'init-only': {
    group: 'command',
    type: 'boolean',
    arg: '',
    help: "set the conntrack sysctls (which need full root privileges) and exit, for a privileged init container (kube-proxy's flag)",
  },
  master: { group: 'command', type: 'string', arg: 'URL', help: "the API server's address (overrides the kubeconfig's)" },
  netns: { group: 'command', type: 'string', arg: 'NAME|PATH', help: 'program another network namespace' },
  version: { group: 'command', type: 'boolean', arg: '', help: 'print the version' },
  'write-config-to': { group: 'command', type: 'string', arg: 'FILE', help: 'write the effective configuration and exit' },
};

/** kube-proxy 1.32 flags that make no sense for an nftables proxy, with the reason. */
export const REFUSED_FLAGS: Readonly<Record<string, string>> = {
  'bind-address-hard-fail': 'a port that cannot be bound is always fatal here',
  'iptables-localhost-nodeports': 'NodePorts are never served on localhost in nftables mode',
  'ipvs-exclude-cidrs': 'kube-nft-proxy is an nftables proxy, not IPVS',
  'ipvs-min-sync-period': 'kube-nft-proxy is an nftables proxy, not IPVS; use --min-sync-period',
  'ipvs-scheduler': 'kube-nft-proxy is an nftables proxy, not IPVS',
  'ipvs-strict-arp': 'kube-nft-proxy is an nftables proxy, not IPVS',
  'ipvs-sync-period': 'kube-nft-proxy is an nftables proxy, not IPVS; use --sync-period',
  'ipvs-tcp-timeout': 'kube-nft-proxy is an nftables proxy, not IPVS',
  'ipvs-tcpfin-timeout': 'kube-nft-proxy is an nftables proxy, not IPVS',
  'ipvs-udp-timeout': 'kube-nft-proxy is an nftables proxy, not IPVS',
  profiling: 'there is no Go profiler (/debug/pprof) to serve',
  vmodule: 'per-file verbosity has no meaning here; use --v',
  'log-text-split-stream': 'every log line goes to stdout',
  'log-json-split-stream': 'every log line goes to stdout',
  'log-text-info-buffer-size': 'every log line is written at once',
  'log-json-info-buffer-size': 'every log line is written at once',
  'windows-service': 'kube-nft-proxy runs on Linux only',
};

const TRUE_WORDS = new Set(['1', 't', 'T', 'true', 'TRUE', 'True']);

/** The flag's "A=true,B=false" as the file's map; parseFeatureGates checks it first, with its precise errors. */
function gateMap(text: string): Record<string, boolean> {
  try {
    parseFeatureGates(text);
  } catch (e) {
    if (e instanceof FeatureGateError) throw new FlagError(`--feature-gates: ${e.message}`);
    throw e;
  }
  const out: Record<string, boolean> = {};
  for (const item of list(text.replace(/^--feature-gates=/, ''))) {
    const eq = item.indexOf('=');
    out[item.slice(0, eq).trim()] = TRUE_WORDS.has(item.slice(eq + 1).trim());
  }
  return out;
}

// What the agent is told to do: built by the CLI from flags (and a config file),
// or by an embedder directly. The agent owns this shape; the CLI only fills it in.

import type { DetectLocalMode } from '../config/kube-proxy-config.ts';
import type { EndpointShape } from '../reconciler/config.ts';

export type { DetectLocalMode };

/** kube-proxy's detect-local modes: how traffic from this node's pods is told from the rest. */
export interface DetectLocalOptions {
  mode: DetectLocalMode;
  /** BridgeInterface: the bridge the pods hang off. */
  bridgeInterface?: string;
  /** InterfaceNamePrefix: the prefix of the pods' interfaces. */
  interfaceNamePrefix?: string;
}

/** clientConnection: how the API server is spoken to. */
export interface ApiClientOptions {
  qps: number;
  burst: number;
  contentType: string;
  acceptContentTypes: string;
  /** --master: overrides the kubeconfig's server. */
  server?: string;
}

export interface AgentOptions {
  kubeconfig?: string;
  /** Name of this node; defaults to the host name. */
  hostnameOverride?: string;
  /** ClusterCIDR mode's CIDRs (`--cluster-cidr`); at most one per family. */
  clusterCIDRs: string[];
  serviceCIDRs: string[];
  /** CIDRs whose local addresses accept NodePorts, or ['primary'] for the node's primary IPs. */
  nodePortAddresses: string[];
  /** kube-proxy's --bind-address: an address other than 0.0.0.0/:: is this node's primary IP of its family. */
  bindAddress?: string;
  masqueradeAll: boolean;
  /** Bit of the packet mark that asks for masquerading (default 14). */
  masqueradeBit?: number;
  /** How local (pod) traffic is detected; default ClusterCIDR. */
  detectLocal?: DetectLocalOptions;
  minSyncPeriodMs: number;
  /**
   * kube-proxy's --sync-period (default 30 s): /healthz turns unhealthy when a
   * queued change is older than twice this, as kube-proxy's does.
   */
  syncPeriodMs: number;
  /** Interval of the full re-assert of every rule (--full-sync-period, default 1 h). */
  fullSyncPeriodMs: number;
  /** Raw `--feature-gates` value; parsed by src/config/feature-gates.ts. */
  featureGates: string;
  serviceProxyName?: string;
  table: string;
  manifests?: string;
  dryRun: boolean;
  logLevel: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';
  /** Program this network namespace (a name under /var/run/netns or a path) instead of our own. */
  netns?: string;
  /** KEP-4963: packets before a Service connection is offloaded; 0 disables offload. */
  offloadPacketThreshold: number;
  /** Interfaces the flowtable may hold (names or /regex/); empty means all but loopback. */
  offloadInterfaces: string[];
  offloadExcludeInterfaces: string[];
  /** ADDRESS:PORT, or '' for no metrics server. */
  metricsBindAddress: string;
  /** ADDRESS:PORT, or '' for no health server. */
  healthzBindAddress: string;
  /** How service ports without session affinity reach their endpoints (src/reconciler/config.ts). */
  endpointShape: EndpointShape;
  apiClient?: ApiClientOptions;
}

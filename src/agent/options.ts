// What the agent is told to do: built by the CLI from flags (and a config file),
// or by an embedder directly. The agent owns this shape; the CLI only fills it in.

import type { EndpointShape } from '../reconciler/config.ts';

export interface AgentOptions {
  kubeconfig?: string;
  /** Name of this node; defaults to the host name. */
  hostnameOverride?: string;
  clusterCIDRs: string[];
  serviceCIDRs: string[];
  /** CIDRs whose local addresses accept NodePorts, or ['primary'] for the node's primary IPs. */
  nodePortAddresses: string[];
  masqueradeAll: boolean;
  minSyncPeriodMs: number;
  syncPeriodMs: number;
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
  metricsBindAddress: string;
  healthzBindAddress: string;
  /** How service ports without session affinity reach their endpoints (src/reconciler/config.ts). */
  endpointShape: EndpointShape;
}

// Compact projections of the Kubernetes objects the proxy reads.
//
// The streams validate API objects and keep only these fields (a full
// EndpointSlice held in memory is ~6 KiB, this projection a fraction of it).
// The service model consumes nothing else. Addresses are kept as the API sent
// them (after the stream's structural checks); the model normalises them
// (leading zeros, whitespace) and drops bad entries field by field.

export type Protocol = 'TCP' | 'UDP' | 'SCTP';
export type IPFamily = 'IPv4' | 'IPv6';

export interface ServicePortSpec {
  /** Empty string for a single unnamed port. */
  name: string;
  protocol: Protocol;
  port: number;
  /** Number or named port; resolved through the EndpointSlice's ports. */
  targetPort?: number | string;
  nodePort?: number;
}

export interface LoadBalancerIngress {
  ip?: string;
  hostname?: string;
  /** KEP-1860; undefined means VIP. */
  ipMode?: 'VIP' | 'Proxy';
}

export interface ServiceInfo {
  namespace: string;
  name: string;
  resourceVersion: string;
  type: 'ClusterIP' | 'NodePort' | 'LoadBalancer' | 'ExternalName';
  /** spec.clusterIPs (or [spec.clusterIP]); 'None' for headless services. */
  clusterIPs: string[];
  ipFamilies: IPFamily[];
  ports: ServicePortSpec[];
  externalIPs: string[];
  loadBalancerIngress: LoadBalancerIngress[];
  loadBalancerSourceRanges: string[];
  sessionAffinity: 'None' | 'ClientIP';
  /** spec.sessionAffinityConfig.clientIP.timeoutSeconds; defaults to 10800 when affinity is ClientIP. */
  sessionAffinityTimeoutSeconds?: number;
  externalTrafficPolicy: 'Cluster' | 'Local';
  internalTrafficPolicy: 'Cluster' | 'Local';
  healthCheckNodePort?: number;
  /** spec.trafficDistribution: 'PreferClose' | 'PreferSameZone' | 'PreferSameNode' | other. */
  trafficDistribution?: string;
}

export interface EndpointHints {
  forZones: string[];
  forNodes: string[];
}

export interface EndpointInfo {
  /**
   * addresses[0]. The API calls an endpoint's addresses fungible and lets
   * clients use only the first, as kube-proxy does; keeping the string rather
   * than the list saves an array per endpoint (~5.6 MiB at 100k endpoints).
   * The others are still validated: one bad address drops the endpoint.
   */
  address: string;
  /** conditions.ready, .serving and .terminating, packed with their defaults applied (endpoint-conditions.ts). */
  conditions: number;
  nodeName?: string;
  zone?: string;
  hints?: EndpointHints;
}

export interface EndpointPortInfo {
  /** Empty string when unnamed. */
  name: string;
  protocol: Protocol;
  port: number;
}

export interface EndpointSliceInfo {
  namespace: string;
  name: string;
  resourceVersion: string;
  /** Label kubernetes.io/service-name. */
  serviceName: string;
  addressType: 'IPv4' | 'IPv6' | 'FQDN';
  /** KEP-2030 labels endpointslice.kubernetes.io/for-zone and for-region. */
  forZone?: string;
  forRegion?: string;
  ports: EndpointPortInfo[];
  endpoints: EndpointInfo[];
  /** Annotation endpoints.kubernetes.io/last-change-trigger-time, ms since the epoch; undefined when absent. */
  lastChangeTriggerTime?: number;
}

export interface NodeInfo {
  name: string;
  resourceVersion: string;
  /** Labels topology.kubernetes.io/zone and topology.kubernetes.io/region. */
  zone?: string;
  region?: string;
  /** status.addresses, InternalIP/ExternalIP only. */
  addresses: { type: 'InternalIP' | 'ExternalIP'; address: string }[];
  podCIDRs: string[];
  /** metadata.deletionTimestamp is set: the Node is going away (kube-proxy's /healthz turns 503). */
  deleting?: boolean;
  /** spec.taints[].key, only those the proxy reads (ToBeDeletedByClusterAutoscaler); absent when none. */
  taints?: string[];
}

/** A change to one stored object, as the streams emit it. */
export type StoreEvent<T> = { type: 'upsert'; key: string; object: T } | { type: 'delete'; key: string; object: T };

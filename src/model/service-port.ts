// What this node must do for one Service port in one IP family: the output of
// the service model and the only input of the ruleset renderer.

import type { IPFamily, Protocol } from '../k8s/types.ts';

export interface Endpoint {
  /** Normalised address of the endpoint's family. */
  ip: string;
  port: number;
  /** On this node (nodeName matches). */
  isLocal: boolean;
  ready: boolean;
  serving: boolean;
  terminating: boolean;
  zone?: string;
}

/**
 * The endpoints that traffic of one kind (cluster or external) goes to.
 * - endpoints: spread over these (never empty);
 * - reject: the service has no usable endpoints anywhere (ICMP port-unreachable);
 * - drop: a Local traffic policy and none of the endpoints is on this node.
 */
export type EndpointSelection = { kind: 'endpoints'; endpoints: Endpoint[] } | { kind: 'reject' } | { kind: 'drop' };

export interface ServicePort {
  /** Stable identity: `namespace/name/protocol/portName/family` (portName may be empty). */
  id: string;
  namespace: string;
  serviceName: string;
  portName: string;
  protocol: Protocol;
  family: IPFamily;
  /** Normalised ClusterIP of this family; undefined when the service has none of it. */
  clusterIP?: string;
  port: number;
  nodePort?: number;
  externalIPs: string[];
  /** Only ingresses with ipMode VIP (or unset) when KEP-1860 is on. */
  loadBalancerIPs: string[];
  /** Normalised CIDRs of this family. */
  loadBalancerSourceRanges: string[];
  /** Seconds; undefined when sessionAffinity is None. */
  sessionAffinityTimeout?: number;
  externalPolicyLocal: boolean;
  internalPolicyLocal: boolean;
  healthCheckNodePort?: number;
  /** Where traffic to the ClusterIP goes (after topology and internalTrafficPolicy). */
  cluster: EndpointSelection;
  /** Where traffic to NodePort, externalIPs and LB IPs goes (after externalTrafficPolicy). */
  external: EndpointSelection;
  /**
   * Every endpoint that `cluster` or `external` uses (kube-proxy's
   * allReachableEndpoints). The renderer spreads over it when both traffic
   * policies are Local: the short-circuit of pod and host traffic to the
   * service's external addresses still goes cluster-wide. Sorted by address,
   * then port; shares objects with them.
   */
  allEndpoints: Endpoint[];
}

export function servicePortId(namespace: string, serviceName: string, protocol: Protocol, portName: string, family: IPFamily): string {
  // join() builds one flat string; a template literal leaves a tree of
  // concatenations (~120 instead of ~50 bytes), kept as long as the port is.
  return [namespace, serviceName, protocol, portName, family].join('/');
}

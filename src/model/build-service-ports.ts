// The service model's entry point: one Service, its EndpointSlices, this Node
// and the configuration in; what this node must do for each (port, family) out.
// Pure: same input, same output (slices are read in name order), no logging.

import type { EndpointSliceInfo, NodeInfo, ServiceInfo } from '../k8s/types.ts';
import type { FeatureGates } from '../config/feature-gates.ts';
import { servicePortId, type ServicePort } from './service-port.ts';
import { readServiceFields } from './service-fields.ts';
import { candidatesForPort, mergeDuplicates, readSlices } from './endpoint-candidates.ts';
import { subsetForNode, type NodeTopology } from './topology.ts';
import { selectEndpoints } from './select-endpoints.ts';
import { WarningSink, type ModelWarning } from './warnings.ts';

export interface ModelConfig {
  /** This node's name as endpoints' nodeName and hints.forNodes spell it. */
  nodeName: string;
  featureGates: FeatureGates;
}

export interface ServicePortsResult {
  ports: ServicePort[];
  warnings: ModelWarning[];
}

/** Zone and region of this node; a missing Node (not yet seen, deleted) has neither. */
export function nodeTopology(node: NodeInfo | undefined, config: ModelConfig): NodeTopology {
  const t: NodeTopology = { nodeName: config.nodeName };
  if (node?.zone !== undefined && node.zone !== '') t.zone = node.zone;
  if (node?.region !== undefined && node.region !== '') t.region = node.region;
  return t;
}

function byName(a: EndpointSliceInfo, b: EndpointSliceInfo): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

export function buildServicePorts(
  service: ServiceInfo,
  slices: readonly EndpointSliceInfo[],
  node: NodeInfo | undefined,
  config: ModelConfig,
): ServicePortsResult {
  const sink = new WarningSink();
  const fields = readServiceFields(service, config.featureGates, sink);
  if (fields === undefined) return { ports: [], warnings: sink.warnings };

  const topology = nodeTopology(node, config);
  const ordered = [...slices].sort(byName);
  const ports: ServicePort[] = [];
  for (const fam of fields.families) {
    const views = readSlices(service, ordered, fam.family, config.nodeName, sink);
    for (const p of fields.ports) {
      const subset = subsetForNode(candidatesForPort(views, p.protocol, p.name), topology, config.featureGates.TopologyAwareProxying);
      const selection = selectEndpoints(mergeDuplicates(subset.candidates), fields, topology);
      const sp: ServicePort = {
        id: servicePortId(service.namespace, service.name, p.protocol, p.name, fam.family),
        namespace: service.namespace,
        serviceName: service.name,
        portName: p.name,
        protocol: p.protocol,
        family: fam.family,
        clusterIP: fam.clusterIP,
        port: p.port,
        externalIPs: fam.externalIPs,
        loadBalancerIPs: fam.loadBalancerIPs,
        loadBalancerSourceRanges: fam.loadBalancerSourceRanges,
        externalPolicyLocal: fields.externalPolicyLocal,
        internalPolicyLocal: fields.internalPolicyLocal,
        cluster: selection.cluster,
        external: selection.external,
        allEndpoints: selection.allEndpoints,
      };
      if (p.nodePort !== undefined) sp.nodePort = p.nodePort;
      if (fields.sessionAffinityTimeout !== undefined) sp.sessionAffinityTimeout = fields.sessionAffinityTimeout;
      if (fields.healthCheckNodePort !== undefined) sp.healthCheckNodePort = fields.healthCheckNodePort;
      ports.push(sp);
    }
  }
  return { ports, warnings: sink.warnings };
}

// Structural equality of model output, field by field (no JSON round trip: the
// change tracker compares every port of every touched service). An absent
// optional field and one set to undefined are equal.

import type { Endpoint, EndpointSelection, ServicePort } from './service-port.ts';

function stringsEqual(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function endpointEqual(a: Endpoint, b: Endpoint): boolean {
  return (
    a === b ||
    (a.ip === b.ip &&
      a.port === b.port &&
      a.isLocal === b.isLocal &&
      a.ready === b.ready &&
      a.serving === b.serving &&
      a.terminating === b.terminating &&
      a.zone === b.zone)
  );
}

function endpointsEqual(a: readonly Endpoint[], b: readonly Endpoint[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!endpointEqual(a[i]!, b[i]!)) return false;
  return true;
}

export function selectionEqual(a: EndpointSelection, b: EndpointSelection): boolean {
  if (a === b) return true;
  if (a.kind !== b.kind) return false;
  if (a.kind === 'endpoints' && b.kind === 'endpoints') return endpointsEqual(a.endpoints, b.endpoints);
  return true;
}

export function servicePortEqual(a: ServicePort, b: ServicePort): boolean {
  return (
    a === b ||
    (a.id === b.id &&
      a.namespace === b.namespace &&
      a.serviceName === b.serviceName &&
      a.portName === b.portName &&
      a.protocol === b.protocol &&
      a.family === b.family &&
      a.clusterIP === b.clusterIP &&
      a.port === b.port &&
      a.nodePort === b.nodePort &&
      a.sessionAffinityTimeout === b.sessionAffinityTimeout &&
      a.externalPolicyLocal === b.externalPolicyLocal &&
      a.internalPolicyLocal === b.internalPolicyLocal &&
      a.healthCheckNodePort === b.healthCheckNodePort &&
      stringsEqual(a.externalIPs, b.externalIPs) &&
      stringsEqual(a.loadBalancerIPs, b.loadBalancerIPs) &&
      stringsEqual(a.loadBalancerSourceRanges, b.loadBalancerSourceRanges) &&
      selectionEqual(a.cluster, b.cluster) &&
      selectionEqual(a.external, b.external) &&
      endpointsEqual(a.allEndpoints, b.allEndpoints))
  );
}

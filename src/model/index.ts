// The service model's public surface: pure functions from Kubernetes
// projections to what this node must program, and the change tracker that
// feeds the reconciler.

export { buildServicePorts, nodeTopology } from './build-service-ports.ts';
export type { ModelConfig, ServicePortsResult } from './build-service-ports.ts';
export { ServiceChangeTracker } from './change-tracker.ts';
export type { DrainResult, ServicePortChange } from './change-tracker.ts';
export { servicePortEqual, selectionEqual, endpointEqual } from './equality.ts';
export { servicePortId } from './service-port.ts';
export type { Endpoint, EndpointSelection, ServicePort } from './service-port.ts';
export { DEFAULT_AFFINITY_TIMEOUT_SECONDS } from './service-fields.ts';
export type { NodeTopology } from './topology.ts';
export type { ModelWarning, ModelWarningCode } from './warnings.ts';

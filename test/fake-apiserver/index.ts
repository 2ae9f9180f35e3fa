// The fake API server's public surface for tests and benchmarks.
export type { RecordedEvent } from './events.ts';
export { FakeApiServer, type Fault, type FaultKind, type FakeApiServerOptions, type RequestRecord } from './server.ts';
export { ObjectStore, objectKey, type K8sObject } from './object-store.ts';
export type { ResourceName } from './resources.ts';
export * as fixtures from './fixtures.ts';

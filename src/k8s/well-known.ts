// Well-known label names and the KEP-31 selectors built from them.

const LABEL_SERVICE_PROXY_NAME = 'service.kubernetes.io/service-proxy-name';
const LABEL_HEADLESS = 'service.kubernetes.io/headless';
export const LABEL_SERVICE_NAME = 'kubernetes.io/service-name';
export const LABEL_FOR_ZONE = 'endpointslice.kubernetes.io/for-zone';
export const LABEL_FOR_REGION = 'endpointslice.kubernetes.io/for-region';
export const LABEL_ZONE = 'topology.kubernetes.io/zone';
export const LABEL_REGION = 'topology.kubernetes.io/region';
export const ANNOTATION_INITIAL_EVENTS_END = 'k8s.io/initial-events-end';
/** On an EndpointSlice: when the change it reflects began (RFC 3339); network programming latency starts here. */
export const ANNOTATION_LAST_CHANGE_TRIGGER_TIME = 'endpoints.kubernetes.io/last-change-trigger-time';
/** The cluster autoscaler's taint on a node it is about to delete. */
export const TO_BE_DELETED_TAINT = 'ToBeDeletedByClusterAutoscaler';

/**
 * KEP-31: the selector for Services and EndpointSlices this proxy serves.
 * Without a name, everything no other proxy claims; with one, only what is
 * labelled for us. Headless services never reach a proxy.
 */
export function serviceProxySelector(serviceProxyName?: string): string {
  return serviceProxyName
    ? `${LABEL_SERVICE_PROXY_NAME}=${serviceProxyName},!${LABEL_HEADLESS}`
    : `!${LABEL_SERVICE_PROXY_NAME},!${LABEL_HEADLESS}`;
}

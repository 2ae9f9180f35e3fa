// An EndpointSlice endpoint's conditions, packed into one small integer
// (EndpointInfo.conditions): three fields on each of 100k endpoints cost
// 1.6 MiB more than one. They are read as kube-proxy reads them (its
// endpointslicecache): ready and serving unless the API says false,
// terminating only if it says true. Nothing downstream tells an unset
// condition from its default.

export const READY = 1;
export const SERVING = 2;
export const TERMINATING = 4;

export interface EndpointConditions {
  ready?: unknown;
  serving?: unknown;
  terminating?: unknown;
}

/** The packed conditions of an API object's `conditions` (anything but a boolean counts as unset). */
export function packConditions(c: EndpointConditions | undefined): number {
  return (c?.ready === false ? 0 : READY) | (c?.serving === false ? 0 : SERVING) | (c?.terminating === true ? TERMINATING : 0);
}

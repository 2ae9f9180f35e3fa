// The resources the fake API server serves, and how their URLs look.

export interface ResourceDef {
  /** Plural, as in the URL. */
  name: string;
  group: string;
  version: string;
  kind: string;
  namespaced: boolean;
}

export const RESOURCES: ResourceDef[] = [
  { name: 'services', group: '', version: 'v1', kind: 'Service', namespaced: true },
  { name: 'endpointslices', group: 'discovery.k8s.io', version: 'v1', kind: 'EndpointSlice', namespaced: true },
  { name: 'nodes', group: '', version: 'v1', kind: 'Node', namespaced: false },
];

export type ResourceName = 'services' | 'endpointslices' | 'nodes';

export function apiVersionOf(r: ResourceDef): string {
  return r.group ? `${r.group}/${r.version}` : r.version;
}

export interface ParsedPath {
  resource: ResourceDef;
  namespace?: string;
}

/** /api/v1/services, /api/v1/namespaces/ns/services, /apis/discovery.k8s.io/v1/endpointslices, … */
export function parsePath(pathname: string): ParsedPath | undefined {
  const parts = pathname.split('/').filter(Boolean);
  let rest: string[];
  let group = '';
  if (parts[0] === 'api' && parts[1] === 'v1') rest = parts.slice(2);
  else if (parts[0] === 'apis' && parts.length >= 3) {
    group = parts[1]!;
    if (parts[2] !== 'v1') return undefined;
    rest = parts.slice(3);
  } else return undefined;
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length === 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  if (rest.length !== 1) return undefined;
  const resource = RESOURCES.find((r) => r.name === rest[0] && r.group === group);
  if (!resource || (namespace !== undefined && !resource.namespaced)) return undefined;
  return { resource, namespace };
}

export function resourceByName(name: ResourceName): ResourceDef {
  return RESOURCES.find((r) => r.name === name)!;
}

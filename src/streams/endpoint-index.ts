// EndpointSlices grouped by Service, and the merged endpoint view the model reads.
//
// Where duplicates are merged: here, not in the store. The store keeps every
// slice as the API sent it (so relists and deletes stay exact per slice); this
// index groups slices by `namespace/kubernetes.io/service-name` and, on
// demand, merges them: within one (addressType, port name, protocol, port)
// an endpoint whose first address appears in several slices is listed once.
// When copies disagree the most usable wins (ready > serving > not
// terminating); ties go to the slice whose name sorts first, so the result
// does not depend on the order events arrived in. The merged view of a
// Service is cached until one of its slices changes.

import type { EndpointInfo, EndpointPortInfo, EndpointSliceInfo } from '../k8s/types.ts';
import { KeyedMap, splitKey } from './keyed-map.ts';
import type { StoreListener } from './store.ts';

export interface MergedPortEndpoints {
  addressType: 'IPv4' | 'IPv6';
  /** The slice port: name/protocol as the Service port names it, port is the target port. */
  port: EndpointPortInfo;
  endpoints: EndpointInfo[];
}

function usability(e: EndpointInfo): number {
  return (e.ready !== false ? 4 : 0) + (e.serving ?? e.ready ?? true ? 2 : 0) + (e.terminating === true ? 0 : 1);
}

/** One Service's slices: most Services have one, held as itself; several as an array. */
type Slices = EndpointSliceInfo | EndpointSliceInfo[];

// A group's slices share the namespace, so the name identifies one.
function indexOfSlice(slices: EndpointSliceInfo[], name: string): number {
  for (let i = 0; i < slices.length; i++) if (slices[i]!.name === name) return i;
  throw outOfStep(name);
}

function outOfStep(name: string): Error {
  return new Error(`endpoint index out of step: slice ${name} not in its group`);
}

/**
 * Kept current by the slice store (it is the store's listener, so it is told
 * of each change before any endpointSlices$ subscriber runs). Keyed by
 * namespace and service name: no joined key string per slice.
 */
export class EndpointSliceIndex implements StoreListener<EndpointSliceInfo> {
  private readonly byService = new KeyedMap<Slices>();
  /** Merged views already asked for, by service key; dropped when one of the service's slices changes. */
  private readonly merged = new Map<string, MergedPortEndpoints[]>();

  /** Service key (`namespace/name`) of a slice. */
  static serviceKeyOf(s: EndpointSliceInfo): string {
    return `${s.namespace}/${s.serviceName}`;
  }

  upserted(slice: EndpointSliceInfo, previous: EndpointSliceInfo | undefined): void {
    if (previous !== undefined) {
      if (previous.serviceName === slice.serviceName) {
        // The common case: a slice changed in place.
        this.swap(slice);
        return;
      }
      // Relabelled to another service: it leaves the old group.
      this.remove(previous);
    }
    this.add(slice);
  }

  deleted(slice: EndpointSliceInfo): void {
    this.remove(slice);
  }

  private add(s: EndpointSliceInfo): void {
    const cur = this.byService.get(s.namespace, s.serviceName);
    if (cur === undefined) this.byService.set(s.namespace, s.serviceName, s);
    else if (Array.isArray(cur)) cur.push(s);
    else this.byService.set(s.namespace, s.serviceName, [cur, s]);
    this.invalidate(s);
  }

  /** Replaces the stored version of `s` (found by name: the index may hold an older one than the store's previous). */
  private swap(s: EndpointSliceInfo): void {
    const cur = this.byService.get(s.namespace, s.serviceName);
    if (cur === undefined) throw outOfStep(s.name);
    if (Array.isArray(cur)) cur[indexOfSlice(cur, s.name)] = s;
    else if (cur.name === s.name) this.byService.set(s.namespace, s.serviceName, s);
    else throw outOfStep(s.name);
    this.invalidate(s);
  }

  private remove(s: EndpointSliceInfo): void {
    const cur = this.byService.get(s.namespace, s.serviceName);
    if (cur === undefined) throw outOfStep(s.name);
    if (!Array.isArray(cur)) {
      if (cur.name !== s.name) throw outOfStep(s.name);
      this.byService.delete(s.namespace, s.serviceName);
    } else {
      cur.splice(indexOfSlice(cur, s.name), 1);
      if (cur.length === 1) this.byService.set(s.namespace, s.serviceName, cur[0]!);
    }
    this.invalidate(s);
  }

  private invalidate(s: EndpointSliceInfo): void {
    if (this.merged.size !== 0) this.merged.delete(EndpointSliceIndex.serviceKeyOf(s));
  }

  slicesFor(serviceKey: string): EndpointSliceInfo[] {
    const [namespace, name] = splitKey(serviceKey);
    const cur = this.byService.get(namespace, name);
    return cur === undefined ? [] : Array.isArray(cur) ? [...cur] : [cur];
  }

  serviceKeys(): IterableIterator<string> {
    return keysOf(this.byService.entries());
  }

  /** The Service's endpoints per slice port, duplicates across slices merged (see header). */
  endpointsFor(serviceKey: string): MergedPortEndpoints[] {
    const hit = this.merged.get(serviceKey);
    if (hit) return hit;
    const slices = this.slicesFor(serviceKey)
      .filter((s) => s.addressType !== 'FQDN')
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const groups = new Map<string, { out: MergedPortEndpoints; byAddr: Map<string, number> }>();
    for (const s of slices) {
      for (const port of s.ports) {
        const gk = `${s.addressType}/${port.protocol}/${port.name}/${port.port}`;
        let g = groups.get(gk);
        if (!g) {
          g = { out: { addressType: s.addressType as 'IPv4' | 'IPv6', port, endpoints: [] }, byAddr: new Map() };
          groups.set(gk, g);
        }
        for (const e of s.endpoints) {
          const addr = e.address;
          const at = g.byAddr.get(addr);
          if (at === undefined) {
            g.byAddr.set(addr, g.out.endpoints.length);
            g.out.endpoints.push(e);
          } else if (usability(e) > usability(g.out.endpoints[at]!)) {
            g.out.endpoints[at] = e;
          }
        }
      }
    }
    const result = [...groups.values()].map((g) => g.out);
    this.merged.set(serviceKey, result);
    return result;
  }
}

function* keysOf(entries: IterableIterator<[string, unknown]>): IterableIterator<string> {
  for (const [key] of entries) yield key;
}

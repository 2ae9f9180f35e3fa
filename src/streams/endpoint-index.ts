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

import type { EndpointInfo, EndpointPortInfo, EndpointSliceInfo, StoreEvent } from '../k8s/types.ts';

export interface MergedPortEndpoints {
  addressType: 'IPv4' | 'IPv6';
  /** The slice port: name/protocol as the Service port names it, port is the target port. */
  port: EndpointPortInfo;
  endpoints: EndpointInfo[];
}

function usability(e: EndpointInfo): number {
  return (e.ready !== false ? 4 : 0) + (e.serving ?? e.ready ?? true ? 2 : 0) + (e.terminating === true ? 0 : 1);
}

/** One Service's slices; most Services have one, so a small array, not a Map. */
interface Group {
  readonly serviceKey: string;
  readonly slices: EndpointSliceInfo[];
}

// A group's slices share the namespace, so the name identifies one.
function indexOfSlice(slices: EndpointSliceInfo[], name: string): number {
  for (let i = 0; i < slices.length; i++) if (slices[i]!.name === name) return i;
  throw new Error(`endpoint index out of step: slice ${name} not in its group`);
}

export class EndpointSliceIndex {
  private readonly byService = new Map<string, Group>();
  private readonly merged = new Map<string, MergedPortEndpoints[]>();
  /** Slice key → its group, to notice a slice relabelled to another Service. */
  private readonly groupOfSlice = new Map<string, Group>();

  /** Service key (`namespace/name`) of a slice. */
  static serviceKeyOf(s: EndpointSliceInfo): string {
    return `${s.namespace}/${s.serviceName}`;
  }

  /** Applies a store event; returns the service keys whose view changed. */
  apply(ev: StoreEvent<EndpointSliceInfo>): string[] {
    const before = this.groupOfSlice.get(ev.key);
    if (ev.type === 'upsert' && before !== undefined && before.serviceKey === EndpointSliceIndex.serviceKeyOf(ev.object)) {
      // The common case: a slice changed in place.
      const i = indexOfSlice(before.slices, ev.object.name);
      before.slices[i] = ev.object;
      this.merged.delete(before.serviceKey);
      return [before.serviceKey];
    }
    const touched: string[] = [];
    // Deleted, or relabelled to another service: leave the old group.
    if (before !== undefined) {
      before.slices.splice(indexOfSlice(before.slices, ev.object.name), 1);
      if (before.slices.length === 0) this.byService.delete(before.serviceKey);
      this.merged.delete(before.serviceKey);
      this.groupOfSlice.delete(ev.key);
      touched.push(before.serviceKey);
    }
    if (ev.type === 'upsert') {
      const serviceKey = EndpointSliceIndex.serviceKeyOf(ev.object);
      let group = this.byService.get(serviceKey);
      if (!group) this.byService.set(serviceKey, (group = { serviceKey, slices: [] }));
      group.slices.push(ev.object);
      this.groupOfSlice.set(ev.key, group);
      this.merged.delete(serviceKey);
      touched.push(serviceKey);
    }
    return touched;
  }

  slicesFor(serviceKey: string): EndpointSliceInfo[] {
    const group = this.byService.get(serviceKey);
    return group ? [...group.slices] : [];
  }

  serviceKeys(): IterableIterator<string> {
    return this.byService.keys();
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
          const addr = e.addresses[0]!;
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

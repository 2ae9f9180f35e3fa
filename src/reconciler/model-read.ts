// The model as the reconciler reads it each sync (src/model's change tracker,
// or a list in tests and the dry run), and the views of it a render takes.

import type { ServicePort } from '../model/service-port.ts';
import { type PortSource, portsOf } from './ruleset.ts';

/** The model as one sync reads it. */
export interface ModelRead {
  /** Every ServicePort this node must program: walked only when every one is rendered (a full sync, or 'all'). */
  ports: Iterable<ServicePort>;
  /** One of `ports` by id (undefined: none); default: an index of `ports`, built when first asked. */
  port?: (id: string) => ServicePort | undefined;
  /**
   * How many Services `ports` come from, when it is known without walking
   * them: a full sync of a small model keeps its renderings (Reconciler's
   * SMALL_FULL_SYNC_SERVICES). Unknown: it renders each port again as it
   * makes its operations, as a large one does.
   */
  services?: number;
  /**
   * Ids of the ServicePorts added, updated or removed since the previous read
   * (the change tracker's drain, kube-proxy's UpdatedServices); 'all' when the
   * caller does not know. Only these are rendered again: nothing compares ports.
   */
  changed: ReadonlySet<string> | 'all';
  /** How to derive a port again once nothing holds it (the change tracker's again()); none: renderings hold their ports. */
  again?: PortSource['again'];
}

/** What a render reads of `read`: its lookup, or an index of its ports built when first asked. */
export function portSourceOf(read: ModelRead): PortSource {
  const source = read.port ? { all: read.ports, get: read.port } : portsOf(read.ports);
  return read.again ? { ...source, again: read.again } : source;
}

/** `all` with the substitutions of `now` (an id mapped to undefined is left out). */
export function withSubstitutes(all: Iterable<ServicePort>, now: ReadonlyMap<string, ServicePort | undefined>): Iterable<ServicePort> {
  return {
    *[Symbol.iterator]() {
      for (const sp of all) {
        if (!now.has(sp.id)) yield sp;
        else {
          const p = now.get(sp.id);
          if (p) yield p;
        }
      }
    },
  };
}

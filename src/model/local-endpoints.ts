// What the node-level health signals read from the model after a sync:
// - the Services whose health-check node port this node serves, each with its
//   number of local ready endpoints (kube-proxy's HealthCheckNodePorts and
//   LocalReadyEndpoints): distinct addresses, so an endpoint serving two ports
//   counts once, and over both families of a dual-stack Service;
// - how many service ports with a Local policy drop their traffic here for
//   want of a local endpoint (kube-proxy's no_local_endpoints gauge), per kind.

import type { ServicePort } from './service-port.ts';

export interface HealthCheckService {
  namespace: string;
  name: string;
  /** spec.healthCheckNodePort. */
  port: number;
  /** Distinct addresses of this node's ready endpoints of the Service. */
  localEndpoints: number;
}

/** Keyed namespace/name. Only Services the model gave a healthCheckNodePort (externalTrafficPolicy Local). */
export function healthCheckServices(ports: Iterable<ServicePort>): Map<string, HealthCheckService> {
  const out = new Map<string, HealthCheckService>();
  const addresses = new Map<string, Set<string>>();
  for (const sp of ports) {
    if (sp.healthCheckNodePort === undefined) continue;
    const key = `${sp.namespace}/${sp.serviceName}`;
    let local = addresses.get(key);
    if (local === undefined) {
      local = new Set();
      addresses.set(key, local);
      out.set(key, { namespace: sp.namespace, name: sp.serviceName, port: sp.healthCheckNodePort, localEndpoints: 0 });
    }
    // Only ready ones: a node whose local endpoints all terminate must fail the
    // check so the load balancer moves away, even while they still serve.
    for (const ep of sp.allEndpoints) if (ep.isLocal && ep.ready) local.add(ep.ip);
  }
  for (const [key, hc] of out) hc.localEndpoints = addresses.get(key)!.size;
  return out;
}

export interface NoLocalEndpoints {
  /** internalTrafficPolicy Local: ClusterIP traffic dropped here. */
  internal: number;
  /** externalTrafficPolicy Local: external traffic dropped here. */
  external: number;
}

export function countNoLocalEndpoints(ports: Iterable<ServicePort>): NoLocalEndpoints {
  let internal = 0;
  let external = 0;
  for (const sp of ports) {
    if (sp.internalPolicyLocal && sp.cluster.kind === 'drop') internal++;
    if (sp.externalPolicyLocal && sp.external.kind === 'drop') external++;
  }
  return { internal, external };
}

/** The difference one port makes to the no-local-endpoints counts. */
function noLocalOf(sp: ServicePort): NoLocalEndpoints {
  return {
    internal: sp.internalPolicyLocal && sp.cluster.kind === 'drop' ? 1 : 0,
    external: sp.externalPolicyLocal && sp.external.kind === 'drop' ? 1 : 0,
  };
}

/** One change to the model's ports: what was handed out before (if anything), and what is now. */
export interface PortChange {
  previous?: ServicePort;
  current?: ServicePort;
}

/**
 * healthCheckServices and countNoLocalEndpoints of the model, kept up to date
 * by its changes: a sync pays for what changed, not for two walks over every
 * port.
 */
export class LocalEndpointSignals {
  #internal = 0;
  #external = 0;
  /** The ports with a health-check node port, by id: the few a health check reads. */
  readonly #healthChecked = new Map<string, ServicePort>();

  apply(changes: Iterable<PortChange>): void {
    for (const c of changes) {
      if (c.previous) this.#count(c.previous, -1);
      if (c.current) this.#count(c.current, 1);
    }
  }

  #count(sp: ServicePort, sign: 1 | -1): void {
    const n = noLocalOf(sp);
    this.#internal += sign * n.internal;
    this.#external += sign * n.external;
    if (sp.healthCheckNodePort === undefined) return;
    if (sign > 0) this.#healthChecked.set(sp.id, sp);
    else this.#healthChecked.delete(sp.id);
  }

  get noLocalEndpoints(): NoLocalEndpoints {
    return { internal: this.#internal, external: this.#external };
  }

  /** As healthCheckServices of every port, from the few that have a health-check node port. */
  healthCheckServices(): Map<string, HealthCheckService> {
    return healthCheckServices(this.#healthChecked.values());
  }
}

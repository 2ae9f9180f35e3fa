// Change tracking between the streams and the reconciler.
//
// The tracker keeps the current input (Services, their EndpointSlices, this
// Node) and, per service, what the ServicePorts it last handed out were
// derived from ("previous"): not the ServicePorts themselves, which it derives
// again when asked (the model is pure). At 10k services x 10 endpoints the
// ServicePorts and their endpoints are ~10 MiB that an idle agent then does
// not hold; a rendering keeps a way to derive its port again (`again`).
// Events only mark a service dirty and remember the earliest trigger time;
// drain() recomputes the dirty services ("current") and reports the ports whose
// value differs from previous, and their ids: the one source of "what changed"
// (kube-proxy's UpdatedServices, at ServicePort grain) that the reconciler
// renders from. A change that cancels out (an update then its revert, a slice
// re-sent unchanged, a node label flapping back) yields nothing.
//
// No clock inside: callers pass the trigger time of every event (receipt time,
// or the EndpointSlice's last-change-trigger-time), and get back, per change,
// the earliest one that contributed, for a network-programming-latency metric.
//
// Handing changes out is final: the reconciler folds them into its own desired
// state before committing, so a failed commit is retried from that state, not by
// asking the tracker again.

import { joinKey } from '../k8s/object-key.ts';
import type { EndpointSliceInfo, NodeInfo, ServiceInfo, StoreEvent } from '../k8s/types.ts';
import type { ServicePort } from './service-port.ts';
import { buildServicePorts, type ModelConfig, type ServicePortsResult } from './build-service-ports.ts';
import { servicePortEqual } from './equality.ts';
import type { ModelWarning } from './warnings.ts';

export type ServicePortChange =
  | { kind: 'added'; id: string; current: ServicePort; triggeredAt: number }
  | { kind: 'updated'; id: string; previous: ServicePort; current: ServicePort; triggeredAt: number }
  | { kind: 'removed'; id: string; previous: ServicePort; triggeredAt: number };

export interface DrainResult {
  changes: ServicePortChange[];
  /** The ids of `changes`: the ServicePorts added, updated or removed since the previous drain. */
  changed: ReadonlySet<string>;
  /** Warnings of every service recomputed in this drain. */
  warnings: ModelWarning[];
  /** How many services were recomputed (changed or not). */
  servicesEvaluated: number;
}

/** A slice whose selection depends on this node's zone or region. */
function isTopologySensitive(slice: EndpointSliceInfo): boolean {
  if ((slice.forZone ?? '') !== '' || (slice.forRegion ?? '') !== '') return true;
  for (const ep of slice.endpoints) {
    if (ep.hints !== undefined && (ep.hints.forZones.length > 0 || ep.hints.forNodes.length > 0)) return true;
  }
  return false;
}

/**
 * One service's input as it was when its ports were derived (the objects are
 * the store's, which it replaces and never changes), and the way to derive one
 * of them again: shared by the service's renderings, so none keeps a closure
 * of its own (~1.1 MiB at 10k services in a heap snapshot).
 */
class DerivedFrom {
  readonly service: ServiceInfo;
  readonly slices: readonly EndpointSliceInfo[];
  readonly node: NodeInfo | undefined;
  readonly #ports: (from: DerivedFrom) => ServicePortsResult;

  constructor(
    service: ServiceInfo,
    slices: readonly EndpointSliceInfo[],
    node: NodeInfo | undefined,
    ports: (from: DerivedFrom) => ServicePortsResult,
  ) {
    this.service = service;
    this.slices = slices;
    this.node = node;
    this.#ports = ports;
  }

  /** The port `id` derived again, equal to the one handed out from this input. */
  derive(id: string): ServicePort {
    const p = this.#ports(this).ports.find((q) => q.id === id);
    if (p === undefined) throw new Error(`service port ${id} is not derived again from its own input`);
    return p;
  }
}

const NO_PORTS: ServicePort[] = [];
const NO_SLICES: readonly EndpointSliceInfo[] = [];

function indexOfSlice(slices: readonly EndpointSliceInfo[], name: string): number {
  for (let i = 0; i < slices.length; i++) if (slices[i]!.name === name) return i;
  return -1;
}

/** Lookup by id: a scan for the usual handful of ports, a Map for a service with many. */
function indexById(ports: readonly ServicePort[]): (id: string) => ServicePort | undefined {
  if (ports.length <= 8) return (id) => ports.find((p) => p.id === id);
  const byId = new Map<string, ServicePort>();
  for (const p of ports) byId.set(p.id, p);
  return (id) => byId.get(id);
}

export class ServiceChangeTracker {
  private readonly config: ModelConfig;
  private readonly services = new Map<string, ServiceInfo>();
  // Per service, plain arrays rather than a Map each: nearly every service has
  // one slice and one port, and an empty Map costs ~300 bytes (6 MiB at 10k
  // services for these two). Lookups scan the few entries of one service.
  /** Service key → its slices (distinct names; same namespace as the service); a list is replaced, never changed. */
  private readonly slices = new Map<string, readonly EndpointSliceInfo[]>();
  /** Slice key → the service key it is filed under. */
  private readonly sliceOwner = new Map<string, string>();
  /** Slice keys whose selection depends on zone/region (labels or hints). */
  private readonly topologySlices = new Set<string>();
  private node: NodeInfo | undefined;
  /** Service key → what the ports last handed out were derived from. */
  private readonly previous = new Map<string, DerivedFrom>();
  /** The ports of the last drain by service, until the sync that took them is over (settled()): its reads need not derive them again. */
  #lastDrained: Map<string, ServicePort[]> | undefined;
  /** Each port handed out, to what it was derived from (see again()). */
  readonly #from = new WeakMap<ServicePort, DerivedFrom>();
  /** Service key → earliest trigger time since the last drain. */
  private readonly dirty = new Map<string, number>();
  /** #derive, bound once for every DerivedFrom. */
  readonly #deriveAgain = (from: DerivedFrom): ServicePortsResult => this.#derive(from);

  constructor(config: ModelConfig) {
    this.config = config;
  }

  private touch(serviceKey: string, at: number): void {
    const seen = this.dirty.get(serviceKey);
    if (seen === undefined || at < seen) this.dirty.set(serviceKey, at);
  }

  // Keys are the events' own (the store's namespace/name, never cluster-scoped
  // here), the format slice owners are filed under below.
  onService(event: StoreEvent<ServiceInfo>, at: number): void {
    const key = event.key;
    if (event.type === 'delete') {
      if (!this.services.delete(key)) return;
    } else {
      if (this.services.get(key) === event.object) return;
      this.services.set(key, event.object);
    }
    this.touch(key, at);
  }

  onEndpointSlice(event: StoreEvent<EndpointSliceInfo>, at: number): void {
    const sliceKey = event.key;
    const oldOwner = this.sliceOwner.get(sliceKey);
    const newOwner =
      event.type === 'upsert' && event.object.serviceName !== '' ? joinKey(event.object.namespace, event.object.serviceName) : undefined;
    if (oldOwner !== undefined && oldOwner !== newOwner) {
      // Deleted, or relabelled to another service: it leaves its old service.
      const owned = this.slices.get(oldOwner);
      const i = owned === undefined ? -1 : indexOfSlice(owned, event.object.name);
      if (i >= 0) {
        const left = owned!.toSpliced(i, 1);
        if (left.length === 0) this.slices.delete(oldOwner);
        else this.slices.set(oldOwner, left);
      }
      this.sliceOwner.delete(sliceKey);
      this.topologySlices.delete(sliceKey);
      this.touch(oldOwner, at);
    }
    if (newOwner === undefined) return;
    const owned = this.slices.get(newOwner);
    const i = owned === undefined ? -1 : indexOfSlice(owned, event.object.name);
    if (owned !== undefined && i >= 0 && owned[i] === event.object) return;
    // A new list, never one changed in place: what ports were derived from holds the list it was given.
    // (Exact-size lists: push() would reserve room for 17, ~150 bytes a service.)
    if (owned === undefined) this.slices.set(newOwner, [event.object]);
    else if (i >= 0) this.slices.set(newOwner, owned.with(i, event.object));
    else this.slices.set(newOwner, [...owned, event.object]);
    this.sliceOwner.set(sliceKey, newOwner);
    if (isTopologySensitive(event.object)) this.topologySlices.add(sliceKey);
    else this.topologySlices.delete(sliceKey);
    this.touch(newOwner, at);
  }

  /**
   * This node's latest state (undefined when deleted or unknown). Only a zone or
   * region change matters, and only to services whose slices carry KEP-2030
   * labels or hints; the node name is fixed by configuration.
   */
  onNode(node: NodeInfo | undefined, at: number): void {
    const before = this.node;
    this.node = node;
    if ((before?.zone ?? '') === (node?.zone ?? '') && (before?.region ?? '') === (node?.region ?? '')) return;
    for (const sliceKey of this.topologySlices) {
      const owner = this.sliceOwner.get(sliceKey);
      if (owner !== undefined) this.touch(owner, at);
    }
  }

  get pendingServices(): number {
    return this.dirty.size;
  }

  drain(): DrainResult {
    const changes: ServicePortChange[] = [];
    const warnings: ModelWarning[] = [];
    const evaluated = this.dirty.size;
    const drained = new Map<string, ServicePort[]>();
    for (const [key, triggeredAt] of this.dirty) {
      const service = this.services.get(key);
      const before = this.#portsOf(key);
      let after: ServicePort[] = NO_PORTS;
      const from = service && new DerivedFrom(service, this.slices.get(key) ?? NO_SLICES, this.node, this.#deriveAgain);
      if (from !== undefined) {
        const result = this.#derive(from);
        for (const w of result.warnings) warnings.push(w);
        after = result.ports; // ids are distinct: one per (port, family)
      }
      const beforeById = indexById(before);
      for (let i = 0; i < after.length; i++) {
        const current = after[i]!;
        const id = current.id;
        const previous = beforeById(id);
        if (previous === undefined) changes.push({ kind: 'added', id, current, triggeredAt });
        else if (!servicePortEqual(previous, current)) changes.push({ kind: 'updated', id, previous, current, triggeredAt });
      }
      if (before.length > 0) {
        const afterById = indexById(after);
        for (const previous of before) {
          if (afterById(previous.id) === undefined) changes.push({ kind: 'removed', id: previous.id, previous, triggeredAt });
        }
      }
      if (after.length > 0) {
        this.previous.set(key, from!);
        drained.set(key, after);
      } else {
        this.previous.delete(key);
      }
    }
    this.dirty.clear();
    this.#lastDrained = drained;
    const changed = new Set<string>();
    for (const c of changes) changed.add(c.id);
    return { changes, changed, warnings, servicesEvaluated: evaluated };
  }

  /** How many Services the ServicePorts handed out come from. */
  get serviceCount(): number {
    return this.previous.size;
  }

  /** Every ServicePort as last handed out (derived again, equal): the desired state for a full resync. */
  *servicePorts(): IterableIterator<ServicePort> {
    for (const key of this.previous.keys()) yield* this.#portsOf(key);
  }

  /** One ServicePort as last handed out, by id (undefined: none): found under its service, whose key begins the id. */
  servicePort(id: string): ServicePort | undefined {
    const end = id.indexOf('/', id.indexOf('/') + 1);
    if (end < 0) return undefined;
    return this.#portsOf(id.slice(0, end)).find((p) => p.id === id);
  }

  /** The sync that took the last drain is over: its ports are let go, and derived again when asked for. */
  settled(): void {
    this.#lastDrained = undefined;
  }

  /**
   * How to derive `port` again, equal, once nothing holds it: for a port this
   * tracker handed out (undefined for any other). It keeps what the port was
   * derived from, not the port.
   */
  again(port: ServicePort): { derive(id: string): ServicePort } | undefined {
    return this.#from.get(port);
  }

  #portsOf(key: string): ServicePort[] {
    const recent = this.#lastDrained?.get(key);
    if (recent !== undefined) return recent;
    const from = this.previous.get(key);
    return from === undefined ? NO_PORTS : this.#derive(from).ports;
  }

  /** What `from` gives, each port noted as derived from it (its warnings matter only the first time: drain() logs them). */
  #derive(from: DerivedFrom): ServicePortsResult {
    const result = buildServicePorts(from.service, from.slices, from.node, this.config);
    for (const p of result.ports) this.#from.set(p, from);
    return result;
  }
}

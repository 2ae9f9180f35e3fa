// The EndpointSlice half of the model: which (address, port) pairs a service
// port could send traffic to in one IP family, before any policy or topology.
//
// Rules, as kube-proxy applies them:
// - a slice of the other address family, or an FQDN slice, contributes nothing;
// - an endpoint's first address is its address (the API says consumers use it);
// - the endpoint port is the slice port with the service port's NAME and
//   protocol (the EndpointSlice controller has already resolved targetPort,
//   named or numeric, into that slice port);
// - conditions: ready and serving unset mean true, terminating unset means
//   false (kube-proxy's reading; the API doc says a nil serving "defers to
//   ready", which differs only for a not-ready terminating endpoint with serving
//   unset, and we keep kube-proxy's behaviour to be a drop-in replacement).

import { READY, SERVING, TERMINATING } from '../k8s/endpoint-conditions.ts';
import type { EndpointSliceInfo, IPFamily, Protocol, ServiceInfo } from '../k8s/types.ts';
import { isOrdinaryCanonicalIPv4, parseIP, specialAddressKind } from '../net/ip.ts';
import { isValidPort } from './service-fields.ts';
import { sliceObject, type WarningSink } from './warnings.ts';

export interface EndpointView {
  ip: string;
  isLocal: boolean;
  ready: boolean;
  serving: boolean;
  terminating: boolean;
  zone?: string;
  /** Undefined when the endpoint has no such hints. */
  zoneHints?: readonly string[];
  nodeHints?: readonly string[];
}

/** One slice, validated, for one family. */
export interface SliceView {
  name: string;
  forZone?: string;
  forRegion?: string;
  /** `${protocol}/${name}` → port. */
  ports: Map<string, number>;
  endpoints: EndpointView[];
}

export interface Candidate extends EndpointView {
  port: number;
  slice: SliceView;
}

/**
 * An endpoint's address in canonical text, or undefined (with its warning)
 * when it cannot be used. The store's own string when it is canonical already
 * (nearly always): the model then holds no second copy of 100k addresses.
 */
function usableAddress(raw: string, family: IPFamily, obj: string, i: number, sink: WarningSink): string | undefined {
  if (raw === '') {
    sink.add('MISSING_ADDRESS', obj, `endpoints[${i}].addresses`, 'endpoint has no address; ignored');
    return undefined;
  }
  const field = `endpoints[${i}].addresses[0]`;
  const ip = parseIP(raw);
  if (ip === undefined) {
    sink.add('INVALID_IP', obj, field, `not an IP address: ${JSON.stringify(raw)}; endpoint ignored`, raw);
    return undefined;
  }
  if (ip.family !== family) {
    sink.add('FAMILY_MISMATCH', obj, field, `${ip.family} address in an ${family} slice; endpoint ignored`, raw);
    return undefined;
  }
  const special = specialAddressKind(ip);
  if (special !== undefined) {
    sink.add('SPECIAL_IP', obj, field, `${special} address cannot be an endpoint; endpoint ignored`, raw);
    return undefined;
  }
  return ip.address === raw ? raw : ip.address;
}

function portKey(protocol: Protocol, name: string): string {
  return `${protocol}/${name}`;
}

/**
 * Validates the slices of one service for one family. Slices come sorted by
 * name so that duplicate resolution never depends on arrival order.
 */
export function readSlices(
  service: ServiceInfo,
  slices: readonly EndpointSliceInfo[],
  family: IPFamily,
  nodeName: string,
  sink: WarningSink,
): SliceView[] {
  const views: SliceView[] = [];
  for (const slice of slices) {
    if (slice.addressType !== family) continue;
    const obj = sliceObject(slice.namespace, slice.name);
    if (slice.namespace !== service.namespace || slice.serviceName !== service.name) {
      sink.add(
        'FOREIGN_SLICE',
        obj,
        'metadata.labels[kubernetes.io/service-name]',
        `slice belongs to ${slice.namespace}/${slice.serviceName}, not ${service.namespace}/${service.name}; ignored`,
        slice.serviceName,
      );
      continue;
    }
    const ports = new Map<string, number>();
    slice.ports.forEach((p, i) => {
      if (!isValidPort(p.port)) {
        sink.add(
          'INVALID_PORT',
          obj,
          `ports[${i}].port`,
          `port ${p.port} is outside 1-65535; its endpoints are not used for it`,
          String(p.port),
        );
        return;
      }
      const key = portKey(p.protocol, p.name);
      if (ports.has(key)) {
        sink.add(
          'DUPLICATE_PORT',
          obj,
          `ports[${i}].name`,
          `a second ${p.protocol} port named ${JSON.stringify(p.name)} is ignored`,
          p.name,
        );
        return;
      }
      ports.set(key, p.port);
    });
    const endpoints: EndpointView[] = [];
    slice.endpoints.forEach((ep, i) => {
      const ip = family === 'IPv4' && isOrdinaryCanonicalIPv4(ep.address) ? ep.address : usableAddress(ep.address, family, obj, i, sink);
      if (ip === undefined) return;
      const view: EndpointView = {
        ip,
        isLocal: ep.nodeName !== undefined && ep.nodeName === nodeName,
        ready: (ep.conditions & READY) !== 0,
        serving: (ep.conditions & SERVING) !== 0,
        terminating: (ep.conditions & TERMINATING) !== 0,
      };
      if (ep.zone !== undefined && ep.zone !== '') view.zone = ep.zone;
      if (ep.hints !== undefined) {
        if (ep.hints.forZones.length > 0) view.zoneHints = ep.hints.forZones;
        if (ep.hints.forNodes.length > 0) view.nodeHints = ep.hints.forNodes;
      }
      endpoints.push(view);
    });
    const view: SliceView = { name: slice.name, ports, endpoints };
    if (slice.forZone !== undefined && slice.forZone !== '') view.forZone = slice.forZone;
    if (slice.forRegion !== undefined && slice.forRegion !== '') view.forRegion = slice.forRegion;
    views.push(view);
  }
  return views;
}

/** Every (endpoint, port) the given slices offer for one service port; duplicates kept. */
export function candidatesForPort(views: readonly SliceView[], protocol: Protocol, name: string): Candidate[] {
  const key = portKey(protocol, name);
  const out: Candidate[] = [];
  for (const slice of views) {
    const port = slice.ports.get(key);
    if (port === undefined) continue;
    for (const ep of slice.endpoints) out.push({ ...ep, port, slice });
  }
  return out;
}

function rank(c: Candidate): number {
  if (c.ready) return 2;
  if (c.serving && c.terminating) return 1;
  return 0;
}

function compareCandidates(a: Candidate, b: Candidate): number {
  if (a.ip !== b.ip) return a.ip < b.ip ? -1 : 1;
  return a.port - b.port;
}

/**
 * One candidate per address:port, sorted by address then port. The same
 * endpoint shows up in two slices while a controller moves it between them;
 * the most usable record wins (ready, then serving-terminating), the first
 * slice by name on a tie: candidates come in slice-name order and the sort is
 * stable, so equal ones stay in that order. Sorting first finds duplicates
 * side by side, without a key string per candidate.
 */
export function mergeDuplicates(candidates: readonly Candidate[]): Candidate[] {
  const sorted = [...candidates].sort(compareCandidates);
  let kept = 0;
  for (const c of sorted) {
    const last = kept > 0 ? sorted[kept - 1]! : undefined;
    if (last !== undefined && last.ip === c.ip && last.port === c.port) {
      if (rank(c) > rank(last)) sorted[kept - 1] = c;
      continue;
    }
    sorted[kept++] = c;
  }
  sorted.length = kept;
  return sorted;
}

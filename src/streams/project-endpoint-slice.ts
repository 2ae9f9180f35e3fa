// EndpointSlice → EndpointSliceInfo.
//
// Unlike a Service, a slice is kept when parts of it are bad: the API server
// accepts ports 0/-1/65536+ and odd addresses (FACTS.md), and one bad entry
// must not take the healthy endpoints of a Service down with it. Bad ports and
// bad endpoints are dropped (reported as `dropped`); only a slice whose
// identity is unusable (names, service label, addressType) is left out.
// IPv4 with leading zeros is kept as sent: the model normalises it.

import { packConditions } from '../k8s/endpoint-conditions.ts';
import type { EndpointHints, EndpointInfo, EndpointPortInfo, EndpointSliceInfo } from '../k8s/types.ts';
import { readIPv4, readIPv6 } from '../net/ip.ts';
import { ANNOTATION_LAST_CHANGE_TRIGGER_TIME, LABEL_FOR_REGION, LABEL_FOR_ZONE, LABEL_SERVICE_NAME } from '../k8s/well-known.ts';
import { digestOf, digestStep, EMPTY_LIST, type StringPool } from './intern.ts';
import {
  asList,
  asObject,
  checkDnsLabel,
  checkDnsSubdomain,
  fail,
  isObject,
  isPort,
  project,
  resourceVersionOf,
  type Projection,
} from './validate-common.ts';

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const PORT_NAME = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$/;

/** A port list's digest starts from its length and takes in each port this way. */
function portDigest(digest: number, port: number, name: string): number {
  return digestStep(digestStep(digest, port), digestOf(name));
}

/** Whether raw ports are exactly a pooled (valid) list: then they need no validation either. */
function rawPortsMatch(pooled: EndpointPortInfo[], list: unknown[]): boolean {
  if (pooled.length !== list.length) return false;
  for (let i = 0; i < list.length; i++) {
    const p = list[i];
    const q = pooled[i]!;
    if (!isObject(p) || p.port !== q.port || (p.name ?? '') !== q.name || (p.protocol ?? 'TCP') !== q.protocol) return false;
  }
  return true;
}

function projectPorts(raw: unknown, pool: StringPool, dropped: string[]): EndpointPortInfo[] {
  const list = asList('ports', raw);
  // Most slices of a cluster list the same few port sets: find the shared
  // one straight from the raw list, before building anything.
  let rawDigest = list.length;
  for (let i = 0; i < list.length; i++) {
    const p = list[i];
    const port = isObject(p) && typeof p.port === 'number' ? p.port : -1;
    const name = isObject(p) && typeof p.name === 'string' ? p.name : '';
    rawDigest = portDigest(rawDigest, port, name);
  }
  const seen = pool.lookup(rawDigest, list, rawPortsMatch);
  if (seen !== undefined) return seen;
  const out: EndpointPortInfo[] = [];
  for (let i = 0; i < list.length; i++) {
    const p = list[i];
    if (!isObject(p)) {
      dropped.push(`ports[${i}] is not an object`);
      continue;
    }
    if (!isPort(p.port)) {
      dropped.push(`ports[${i}].port out of range: ${JSON.stringify(p.port)}`);
      continue;
    }
    const name = p.name ?? '';
    if (typeof name !== 'string' || name.length > 63 || !PORT_NAME.test(name)) {
      dropped.push(`ports[${i}].name invalid: ${JSON.stringify(name)}`);
      continue;
    }
    const proto = p.protocol ?? 'TCP';
    if (proto !== 'TCP' && proto !== 'UDP' && proto !== 'SCTP') {
      dropped.push(`ports[${i}] has unknown protocol ${JSON.stringify(proto)}`);
      continue;
    }
    out.push({ name: pool.intern(name), protocol: proto, port: p.port });
  }
  if (out.length === 0) return EMPTY_LIST;
  let digest = out.length;
  for (let i = 0; i < out.length; i++) digest = portDigest(digest, out[i]!.port, out[i]!.name);
  return pool.share(digest, out, samePorts);
}

function samePorts(a: EndpointPortInfo[], b: EndpointPortInfo[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.port !== y.port || x.protocol !== y.protocol || x.name !== y.name) return false;
  }
  return true;
}

function names(list: unknown, pool: StringPool): string[] {
  const out: string[] = [];
  if (!Array.isArray(list)) return out;
  for (const h of list) if (isObject(h) && typeof h.name === 'string' && h.name !== '') out.push(pool.intern(h.name));
  return out;
}

/** Where each endpoint address is read into: checked, then dropped (the model reads the text again). */
const ADDRESS = new Uint8Array(16);

/**
 * Addresses no pod can have: this network (0/8), loopback, link-local,
 * multicast, and the reserved and broadcast space above it. The API server
 * accepts some of these in an EndpointSlice; programming them would send
 * service traffic nowhere useful.
 */
function isUnroutableIPv4(b: Uint8Array): boolean {
  return b[0] === 0 || b[0] === 127 || b[0]! >= 224 || (b[0] === 169 && b[1] === 254);
}

/** Unspecified, loopback, link-local (fe80::/10), multicast (ff00::/8). */
function isUnroutableIPv6(b: Uint8Array): boolean {
  if (b[0] === 0xff || (b[0] === 0xfe && (b[1]! & 0xc0) === 0x80)) return true;
  for (let i = 0; i < 15; i++) if (b[i] !== 0) return false;
  return b[15]! <= 1;
}

/** Returns the endpoint, or a reason it was dropped. */
function projectEndpoint(raw: unknown, i: number, addressType: string, pool: StringPool): EndpointInfo | string {
  if (!isObject(raw)) return `endpoints[${i}] is not an object`;
  const addrs = raw.addresses;
  if (!Array.isArray(addrs) || addrs.length === 0) return `endpoints[${i}] has no addresses`;
  for (let k = 0; k < addrs.length; k++) {
    const a: unknown = addrs[k];
    if (typeof a !== 'string') return `endpoints[${i}] has a non-string address`;
    if (addressType === 'IPv4') {
      if (readIPv4(a, 0, a.length, ADDRESS, 0, 'lenient') !== undefined) return `endpoints[${i}] address ${JSON.stringify(a)} is not IPv4`;
      if (isUnroutableIPv4(ADDRESS)) return `endpoints[${i}] address ${a} is not routable`;
    } else if (addressType === 'IPv6') {
      if (readIPv6(a, 0, a.length, ADDRESS, 'lenient') !== undefined) return `endpoints[${i}] address ${JSON.stringify(a)} is not IPv6`;
      if (isUnroutableIPv6(ADDRESS)) return `endpoints[${i}] address ${a} is not routable`;
    } else if (a === '' || a.length > 253) return `endpoints[${i}] has a bad FQDN`;
  }
  // One literal with every field, in one order: every endpoint shares one
  // hidden class with its fields in-object (adding them one by one would give
  // each endpoint an out-of-object property array, ~60 bytes more, and the
  // model's reads several shapes).
  const c = isObject(raw.conditions) ? raw.conditions : undefined;
  let hints: EndpointHints | undefined;
  if (isObject(raw.hints)) {
    const forZones = names(raw.hints.forZones, pool);
    const forNodes = names(raw.hints.forNodes, pool);
    if (forZones.length > 0 || forNodes.length > 0) hints = { forZones, forNodes };
  }
  const ep: EndpointInfo = {
    address: addrs[0] as string,
    conditions: packConditions(c),
    nodeName: typeof raw.nodeName === 'string' && raw.nodeName !== '' ? pool.intern(raw.nodeName) : undefined,
    zone: typeof raw.zone === 'string' && raw.zone !== '' ? pool.intern(raw.zone) : undefined,
    hints,
  };
  return ep;
}

/** The trigger-time annotation in ms since the epoch; undefined when absent or not a time (kube-proxy skips those). */
function triggerTimeOf(annotations: unknown): number | undefined {
  if (!isObject(annotations)) return undefined;
  const v = annotations[ANNOTATION_LAST_CHANGE_TRIGGER_TIME];
  if (typeof v !== 'string' || !RFC3339.test(v)) return undefined;
  const ms = Date.parse(v);
  return Number.isNaN(ms) ? undefined : ms;
}

function projectSliceUnchecked(raw: unknown, pool: StringPool, dropped: string[]): EndpointSliceInfo {
  const obj = asObject('object', raw);
  const meta = asObject('metadata', obj.metadata);
  const namespace = pool.intern(checkDnsLabel('metadata.namespace', meta.namespace));
  const name = checkDnsSubdomain('metadata.name', meta.name);
  const labels = isObject(meta.labels) ? meta.labels : {};
  const serviceName = labels[LABEL_SERVICE_NAME];
  if (typeof serviceName !== 'string' || serviceName === '') fail(`label ${LABEL_SERVICE_NAME} missing`);
  if (serviceName.length > 63) fail(`label ${LABEL_SERVICE_NAME} longer than 63 characters`);
  const addressType = obj.addressType;
  if (addressType !== 'IPv4' && addressType !== 'IPv6' && addressType !== 'FQDN')
    fail(`addressType unknown: ${JSON.stringify(addressType)}`);

  const ports = projectPorts(obj.ports, pool, dropped);
  const list = asList('endpoints', obj.endpoints);
  const n = list.length;
  // Sized once: a list grown by push keeps up to half its length again as slack.
  const endpoints: EndpointInfo[] = n === 0 ? EMPTY_LIST : new Array<EndpointInfo>(n);
  let kept = 0;
  for (let i = 0; i < n; i++) {
    const ep = projectEndpoint(list[i], i, addressType, pool);
    if (typeof ep === 'string') dropped.push(ep);
    else endpoints[kept++] = ep;
  }
  if (kept < n) endpoints.length = kept;
  const fz = labels[LABEL_FOR_ZONE];
  const fr = labels[LABEL_FOR_REGION];
  // All fields in one literal: one hidden class, no out-of-object properties.
  const info: EndpointSliceInfo = {
    namespace,
    name,
    resourceVersion: resourceVersionOf(meta),
    serviceName: pool.intern(serviceName),
    addressType: addressType as EndpointSliceInfo['addressType'],
    forZone: typeof fz === 'string' && fz !== '' ? pool.intern(fz) : undefined,
    forRegion: typeof fr === 'string' && fr !== '' ? pool.intern(fr) : undefined,
    ports,
    endpoints,
    lastChangeTriggerTime: triggerTimeOf(meta.annotations),
  };
  return info;
}

export function projectEndpointSlice(raw: unknown, pool: StringPool): Projection<EndpointSliceInfo> {
  const dropped: string[] = [];
  return project(() => projectSliceUnchecked(raw, pool, dropped), dropped);
}

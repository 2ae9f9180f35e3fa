// Names of the objects in our table. The static ones are kube-proxy's, so that
// an operator who knows `nft list table ip kube-proxy` can read ours; the
// per-service ones carry a short hash of what they belong to followed by the
// readable identity, e.g. `service-3DAJWQXN-default/web/tcp/http`.
//
// Only per-service objects contain a '/', which is how a listing read back from
// the kernel tells them apart from the skeleton.

import type { Protocol } from '../k8s/types.ts';

export const CHAIN = {
  filterPrerouting: 'filter-prerouting',
  filterInput: 'filter-input',
  filterForward: 'filter-forward',
  filterOutput: 'filter-output',
  filterOutputPostDnat: 'filter-output-post-dnat',
  natPrerouting: 'nat-prerouting',
  natOutput: 'nat-output',
  natPostrouting: 'nat-postrouting',
  services: 'services',
  masquerading: 'masquerading',
  markForMasquerade: 'mark-for-masquerade',
  serviceEndpointsCheck: 'service-endpoints-check',
  nodePortEndpointsCheck: 'nodeport-endpoints-check',
  reject: 'reject-chain',
  firewallCheck: 'firewall-check',
  clusterIPsCheck: 'cluster-ips-check',
} as const;

export const SET = {
  clusterIPs: 'cluster-ips',
  nodePortIPs: 'nodeport-ips',
  /** `ep . ep` for each endpoint of the map-spread service ports: their hairpin traffic is masqueraded. */
  hairpinEndpoints: 'hairpin-endpoints',
} as const;

export const MAP = {
  serviceIPs: 'service-ips',
  serviceNodePorts: 'service-nodeports',
  noEndpointServices: 'no-endpoint-services',
  noEndpointNodePorts: 'no-endpoint-nodeports',
  firewallIPs: 'firewall-ips',
} as const;

/**
 * KEP-4963's flowtable. The KEP calls kube-proxy's `kube-proxy-flowtable`; inside
 * our own table no prefix is needed, so it is named for what it carries.
 */
export const FLOWTABLE = 'service-flowtable';

/** Prefixes of per-service object names, as in kube-proxy. */
export const PREFIX = {
  /** Spreads over the cluster-wide endpoints (the Cluster traffic policy). */
  service: 'service-',
  /** Spreads over this node's endpoints (a Local traffic policy). */
  local: 'local-',
  /** Entry for NodePort, externalIP and LoadBalancer traffic. */
  external: 'external-',
  /** loadBalancerSourceRanges check. */
  firewall: 'firewall-',
  /** The interval set of the sources the firewall chain lets through (see source-ranges.ts). */
  firewallSources: 'firewall-allow-',
  endpoint: 'endpoint-',
  affinity: 'affinity-',
  /**
   * Map from `numgen` results to the cluster-wide endpoints' `address . port`
   * (no session affinity), for a port whose slot range collides in the shared
   * `service-endpoints-<shard>` maps; also the port's label there (see endpoint-slots.ts).
   */
  endpoints: 'endpoints-',
  /** The same for this node's endpoints (a Local traffic policy). */
  localEndpoints: 'local-endpoints-',
} as const;

// The kernel's limit is 256 bytes with the NUL; the longest prefix is 'local-endpoints-'.
const NAME_MAX = 255;
const PREFIX_MAX = 16;
const BASE_MAX = NAME_MAX - PREFIX_MAX;
const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/**
 * 8 base32 characters (40 bits) of a hash of the text: unique in practice, and
 * different at a glance for names that differ in one digit. Not a
 * cryptographic hash: names are not secrets, and a cold sync at 10k services
 * x 10 endpoints names 110k objects, where SHA-256 through node:crypto cost
 * ~5 µs a call (mostly the call) against ~0.2 µs for two multiplicative lanes.
 */
export function shortHash(text: string): string {
  // Two 32-bit FNV-1a-style lanes with different primes (a is fnv1a32's, interleaved here to walk the text once), each finished with an
  // avalanche mix.
  let a = 0x811c9dc5;
  let b = 0x9e3779b9;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
  }
  a = mix(a ^ text.length);
  b = mix(b ^ a);
  // 40 bits: all of a, then 8 bits of b; 5 bits per character.
  let out = '';
  for (let i = 0; i < 6; i++) out += BASE32[(a >>> (27 - 5 * i)) & 31];
  out += BASE32[((a & 3) << 3) | ((b >>> 29) & 7)];
  out += BASE32[(b >>> 24) & 31];
  return out;
}

/** 32-bit FNV-1a, unmixed: its high bits barely depend on the last characters (finish with mix()). */
export function fnv1a32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h;
}

/** A 32-bit avalanche finisher (MurmurHash3's fmix32): every input bit flips about half the output bits. */
export function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * The longest comment the kernel keeps on a rule, set or element (its userdata
 * holds 128 bytes with the NUL... nft refuses longer ones; so do our checks).
 */
export const COMMENT_MAX = 128;

/** Characters nft cannot print inside quotes (NUL, double quote) and other control characters. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point: nft cannot print them.
const UNPRINTABLE = /[\u0000-\u001f"\u007f]/g;

/** `text` with what nft cannot print replaced by '_'. */
function printable(text: string): string {
  UNPRINTABLE.lastIndex = 0;
  return UNPRINTABLE.test(text) ? text.replace(UNPRINTABLE, '_') : text;
}

/**
 * `text` made printable (see UNPRINTABLE) and at most `maxBytes` of UTF-8: a
 * text that does not fit keeps a short hash of the whole text in front of
 * its cut start, so that long texts differing only in their tails stay
 * different. Never splits a character.
 */
export function boundedText(text: string, maxBytes: number): string {
  const clean = printable(text);
  if (clean.length * 3 <= maxBytes || Buffer.byteLength(clean) <= maxBytes) return clean;
  const head = `${shortHash(text)}-`;
  return `${head}${cutBytes(clean, maxBytes - head.length - 3)}...`;
}

/** The longest start of `text` of at most `maxBytes` UTF-8 bytes, whole characters only. */
export function cutBytes(text: string, maxBytes: number): string {
  let bytes = 0;
  let i = 0;
  while (i < text.length) {
    const c = text.codePointAt(i)!;
    const n = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    if (bytes + n > maxBytes) break;
    bytes += n;
    i += c >= 0x10000 ? 2 : 1;
  }
  return text.slice(0, i);
}

/** `HASH-readable`, printable and cut to fit under any of our prefixes; the hash (of the whole text) keeps cut names unique. */
function hashed(readable: string): string {
  const name = `${shortHash(readable)}-${printable(readable)}`;
  if (name.length * 3 <= BASE_MAX || Buffer.byteLength(name) <= BASE_MAX) return name;
  return `${cutBytes(name, BASE_MAX - 3)}...`;
}

/** A comment naming a service port (`ns/svc/proto/port`), cut to the kernel's limit. */
export function servicePortComment(readable: string): string {
  return boundedText(readable, COMMENT_MAX);
}

export interface ServicePortName {
  namespace: string;
  serviceName: string;
  protocol: Protocol;
  portName: string;
}

/** `ns/svc/proto/portName`: one service port in one family (the family is the table's). */
export function servicePortReadable(p: ServicePortName): string {
  return `${p.namespace}/${p.serviceName}/${p.protocol.toLowerCase()}/${p.portName}`;
}

/** Base of the per-service chain names: `HASH-ns/svc/proto/portName`. */
export function servicePortNameBase(p: ServicePortName): string {
  return hashed(servicePortReadable(p));
}

/**
 * Base of the per-endpoint names: `HASH-ns/svc/proto/portName__ip/port`. IPv6
 * colons are not allowed in chain names (nft's grammar), so they become dots.
 * Takes the port's servicePortReadable() text, computed once for all its endpoints.
 */
export function endpointNameBase(port: ServicePortName | string, ip: string, epPort: number): string {
  const readable = typeof port === 'string' ? port : servicePortReadable(port);
  return hashed(`${readable}__${ip.includes(':') ? ip.replaceAll(':', '.') : ip}/${epPort}`);
}

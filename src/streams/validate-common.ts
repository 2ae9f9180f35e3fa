// Shared structural checks used by the projections. They are deliberately
// cheap: they run on every object of every list and watch event.

import { EMPTY_LIST } from './intern.ts';
import { joinKey } from '../k8s/object-key.ts';

export type Projection<T> = { ok: true; value: T; dropped?: string[] } | { ok: false; reason: string };

/** A projection's refusal, thrown by fail() and turned into `{ ok: false }` by project(). */
class InvalidObject extends Error {
  readonly code = 'ERR_INVALID_OBJECT';
  constructor(reason: string) {
    super(reason);
    this.name = 'InvalidObject';
  }
}

export function fail(reason: string): never {
  throw new InvalidObject(reason);
}

// RFC 1123 label (namespaces, port names), RFC 1035 label (Service names: a
// letter first) and subdomain, as the API server's validation checks them.
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

export function checkDnsLabel(what: string, v: unknown): string {
  if (typeof v !== 'string' || v === '') fail(`${what} missing`);
  if (v.length > 63) fail(`${what} longer than 63 characters`);
  if (!DNS_LABEL.test(v)) fail(`${what} is not a DNS label`);
  return v;
}

export function checkDns1035Label(what: string, v: unknown): string {
  if (typeof v !== 'string' || v === '') fail(`${what} missing`);
  if (v.length > 63) fail(`${what} longer than 63 characters`);
  if (!DNS1035_LABEL.test(v)) fail(`${what} is not a DNS-1035 label`);
  return v;
}

export function checkDnsSubdomain(what: string, v: unknown): string {
  if (typeof v !== 'string' || v === '') fail(`${what} missing`);
  if (v.length > 253) fail(`${what} longer than 253 characters`);
  if (!DNS_SUBDOMAIN.test(v)) fail(`${what} is not a DNS subdomain`);
  return v;
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function asObject(what: string, v: unknown): Record<string, unknown> {
  if (!isObject(v)) fail(`${what} is not an object`);
  return v;
}

/** Absent (undefined/null) is the shared empty list (frozen); anything else must be an array. */
export function asList(what: string, v: unknown): unknown[] {
  if (v === undefined || v === null) return EMPTY_LIST;
  if (!Array.isArray(v)) fail(`${what} is not a list`);
  return v;
}

export function isPort(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 65535;
}

export function optionalString(what: string, v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') fail(`${what} is not a string`);
  return v;
}

export function resourceVersionOf(meta: Record<string, unknown>): string {
  const rv = meta.resourceVersion;
  if (rv === undefined || rv === null) return '';
  if (typeof rv !== 'string') fail('metadata.resourceVersion is not a string');
  return rv;
}

/** Runs a projection, turning InvalidObject into a failed result. */
export function project<T>(fn: () => T, dropped?: string[]): Projection<T> {
  try {
    const value = fn();
    return dropped && dropped.length > 0 ? { ok: true, value, dropped } : { ok: true, value };
  } catch (e) {
    if (e instanceof InvalidObject) return { ok: false, reason: e.message };
    throw e;
  }
}

/** The store's key (namespace/name) from raw metadata without validating, for log keys and deletes. */
export function rawKey(raw: unknown): string {
  const meta = isObject(raw) && isObject(raw.metadata) ? raw.metadata : {};
  const ns = typeof meta.namespace === 'string' ? meta.namespace : '';
  const name = typeof meta.name === 'string' ? meta.name : '?';
  return joinKey(ns, name);
}

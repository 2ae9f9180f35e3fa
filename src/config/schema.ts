// Strict decoding of a configuration document, as Kubernetes' strict JSON
// decoder does it for kube-proxy's --config: an unknown field, or a value of the
// wrong type, is an error naming the field's path. `null` means "unset" for
// every field (Go's decoder leaves the zero value in place), so a file written
// by kubeadm, full of nulls and zeros, decodes unchanged.

import { parseDuration } from './duration.ts';

export class ConfigError extends Error {
  readonly code = 'ERR_CONFIG';
  /** The field's path, e.g. `nftables.masqueradeBit` or `conntrack`. */
  readonly path: string;
  constructor(path: string, reason: string) {
    super(path === '' ? reason : `${path}: ${reason}`);
    this.name = 'ConfigError';
    this.path = path;
  }
}

export type Field =
  | { kind: 'string' }
  | { kind: 'bool' }
  | { kind: 'int'; min: number; max: number }
  | { kind: 'float' }
  | { kind: 'duration' }
  /** A Go time.Duration that may also be written as a number of nanoseconds (logs' flushFrequency). */
  | { kind: 'duration-or-ns' }
  /** resource.QuantityValue: a string or a number. */
  | { kind: 'quantity' }
  | { kind: 'string-list' }
  | { kind: 'bool-map' }
  | { kind: 'list'; of: Schema }
  | { kind: 'object'; fields: Schema };

export type Schema = { readonly [name: string]: Field };

export const S = {
  string: { kind: 'string' },
  bool: { kind: 'bool' },
  int32: { kind: 'int', min: -(2 ** 31), max: 2 ** 31 - 1 },
  uint32: { kind: 'int', min: 0, max: 2 ** 32 - 1 },
  float: { kind: 'float' },
  duration: { kind: 'duration' },
  durationOrNs: { kind: 'duration-or-ns' },
  quantity: { kind: 'quantity' },
  stringList: { kind: 'string-list' },
  boolMap: { kind: 'bool-map' },
  object: (fields: Schema): Field => ({ kind: 'object', fields }),
  list: (of: Schema): Field => ({ kind: 'list', of }),
} as const satisfies Record<string, Field | ((s: Schema) => Field)>;

/** A decoded document: what was written, with `undefined` for null or absent fields; durations in ms. */
export type Decoded = { [name: string]: DecodedValue };
export type DecodedValue = string | number | boolean | string[] | Record<string, boolean> | Decoded | Decoded[] | undefined;

function join(path: string, name: string): string {
  return path === '' ? name : `${path}.${name}`;
}

function typeName(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'a list' : typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

function decodeField(field: Field, value: unknown, path: string): DecodedValue {
  if (value === null || value === undefined) return undefined;
  const wrong = (want: string): never => {
    throw new ConfigError(path, `expected ${want}, got ${typeName(value)} ${JSON.stringify(value)}`);
  };
  switch (field.kind) {
    case 'string':
      return typeof value === 'string' ? value : wrong('a string');
    case 'bool':
      return typeof value === 'boolean' ? value : wrong('true or false');
    case 'int':
      if (typeof value !== 'number' || !Number.isInteger(value)) return wrong('a whole number');
      if (value < field.min || value > field.max) throw new ConfigError(path, `${value} is out of range`);
      return value;
    case 'float':
      return typeof value === 'number' && Number.isFinite(value) ? value : wrong('a number');
    case 'duration':
      return typeof value === 'string' ? durationMs(value, path) : wrong('a duration such as "30s"');
    case 'duration-or-ns':
      if (typeof value === 'number' && Number.isInteger(value)) return value / 1e6;
      return typeof value === 'string' ? durationMs(value, path) : wrong('a duration such as "5s" or nanoseconds');
    case 'quantity':
      if (typeof value === 'number' && Number.isFinite(value)) return String(value);
      return typeof value === 'string' && /^[0-9.]+([KMGTPE]i?|[munkMGTPE]|e[0-9]+)?$/.test(value)
        ? value
        : wrong('a quantity such as "0" or "1Mi"');
    case 'string-list':
      if (!Array.isArray(value)) return wrong('a list of strings');
      return value.map((v, i) => (typeof v === 'string' ? v : (decodeField(S.string, v, `${path}[${i}]`) as string)));
    case 'bool-map': {
      if (typeof value !== 'object' || Array.isArray(value)) return wrong('a map of names to true/false');
      const out: Record<string, boolean> = {};
      for (const [k, v] of Object.entries(value)) {
        if (typeof v !== 'boolean') throw new ConfigError(join(path, k), `expected true or false, got ${typeName(v)} ${JSON.stringify(v)}`);
        out[k] = v;
      }
      return out;
    }
    case 'list':
      if (!Array.isArray(value)) return wrong('a list');
      return value.map((v, i) => decodeObject(field.of, v, `${path}[${i}]`));
    case 'object':
      return decodeObject(field.fields, value, path);
    default:
      return field satisfies never;
  }
}

function durationMs(text: string, path: string): number {
  const negative = text.startsWith('-');
  try {
    const ms = parseDuration(negative ? text.slice(1) : text);
    return negative ? -ms : ms;
  } catch (e) {
    throw new ConfigError(path, (e as Error).message);
  }
}

/** Decodes `value` against `schema`; throws ConfigError naming the first unknown or mistyped field. */
export function decodeObject(schema: Schema, value: unknown, path = ''): Decoded {
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new ConfigError(path, `expected an object, got ${typeName(value)}`);
  }
  const out: Decoded = {};
  for (const [name, v] of Object.entries(value)) {
    const field = Object.hasOwn(schema, name) ? schema[name] : undefined;
    if (!field) throw new ConfigError(join(path, name), 'unknown field');
    out[name] = decodeField(field, v, join(path, name));
  }
  return out;
}

// Problems the model found in its input and worked around (by dropping the bad
// entry). They are values, not log lines: the model is pure, the shell logs.

export type ModelWarningCode =
  | 'INVALID_IP'
  | 'SPECIAL_IP'
  | 'INVALID_CIDR'
  | 'INVALID_PORT'
  | 'DUPLICATE_PORT'
  | 'DUPLICATE_FAMILY'
  | 'FAMILY_MISMATCH'
  | 'MISSING_ADDRESS'
  | 'IPMODE_WITHOUT_IP'
  | 'INVALID_TIMEOUT'
  | 'IGNORED_FIELD'
  | 'FOREIGN_SLICE';

export interface ModelWarning {
  code: ModelWarningCode;
  /** "Service ns/name" or "EndpointSlice ns/name". */
  object: string;
  /** JSON-path-like field, e.g. "spec.externalIPs[1]" or "endpoints[3].addresses[0]". */
  field: string;
  /** The offending value as received, when there is one. */
  value?: string;
  message: string;
}

/** Collects warnings once per (object, field, code): a slice is read for every port of its service. */
export class WarningSink {
  readonly warnings: ModelWarning[] = [];
  private readonly seen = new Set<string>();

  add(code: ModelWarningCode, object: string, field: string, message: string, value?: string): void {
    const key = `${object}\u0000${field}\u0000${code}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    const w: ModelWarning = { code, object, field, message };
    if (value !== undefined) w.value = value;
    this.warnings.push(w);
  }
}

export function serviceObject(namespace: string, name: string): string {
  return `Service ${namespace}/${name}`;
}

export function sliceObject(namespace: string, name: string): string {
  return `EndpointSlice ${namespace}/${name}`;
}

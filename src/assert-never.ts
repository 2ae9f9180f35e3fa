// The end of every switch over a union: `default: return assertNever(x)`.
// At compile time a missing case makes `x` something other than `never`, an
// error; at run time a value outside the type (untyped input, a cast) throws
// instead of falling through silently.

/** A value its union type rules out arrived anyway. */
export class UnreachableError extends Error {
  readonly code = 'ERR_UNREACHABLE';
  readonly value: unknown;
  constructor(value: unknown) {
    super(`unexpected value ${describe(value)}`);
    this.name = 'UnreachableError';
    this.value = value;
  }
}

function describe(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * Checks at compile time that every member of a union was handled; throws
 * UnreachableError at run time, or what `fail` throws (a caller that reports
 * bad input with its own error class passes it).
 */
export function assertNever(value: never, fail?: (value: unknown) => never): never {
  if (fail) return fail(value);
  throw new UnreachableError(value);
}

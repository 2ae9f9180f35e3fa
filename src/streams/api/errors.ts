// Errors of the list/watch machinery. Each has a stable `code`; the reflector
// decides what to do (relist, back off, honour Retry-After) from the class.

export class ApiStatusError extends Error {
  readonly code = 'ERR_API_STATUS';
  readonly status: number;
  /** Milliseconds from a Retry-After header, if the server sent one. */
  readonly retryAfterMs: number | undefined;
  constructor(status: number, message: string, retryAfterMs?: number) {
    super(`API server answered ${status}: ${message}`);
    this.name = 'ApiStatusError';
    this.status = status;
    this.retryAfterMs = retryAfterMs;
  }
}

/** The resourceVersion we asked for is compacted away (410 Gone): relist. */
export class ResourceExpiredError extends Error {
  readonly code = 'ERR_RESOURCE_EXPIRED';
  constructor(message: string) {
    super(message);
    this.name = 'ResourceExpiredError';
  }
}

/** A watch line that is not a JSON watch event. The watch is restarted. */
export class MalformedWatchEventError extends Error {
  readonly code = 'ERR_MALFORMED_WATCH_EVENT';
  readonly sample: string;
  constructor(reason: string, line: string) {
    super(`malformed watch event: ${reason}`);
    this.name = 'MalformedWatchEventError';
    this.sample = line.length > 200 ? `${line.slice(0, 200)}…` : line;
  }
}

/** The watch sent an ERROR event with a Status other than 410. */
export class WatchErrorEventError extends Error {
  readonly code = 'ERR_WATCH_ERROR_EVENT';
  readonly status: number;
  constructor(status: number, message: string) {
    super(`watch ERROR event ${status}: ${message}`);
    this.name = 'WatchErrorEventError';
    this.status = status;
  }
}

/** The WatchList stream ended before its initial-events-end bookmark. */
export class WatchListIncompleteError extends Error {
  readonly code = 'ERR_WATCHLIST_INCOMPLETE';
  constructor() {
    super('watch-list stream ended before the initial-events-end bookmark');
    this.name = 'WatchListIncompleteError';
  }
}

/** An API server that does not answer in time; the reflector retries as after any network error. */
export class HttpTimeoutError extends Error {
  readonly code: 'ERR_API_HEADERS_TIMEOUT' | 'ERR_API_BODY_TIMEOUT';
  constructor(what: 'headers' | 'body', ms: number) {
    super(what === 'headers' ? `no response headers within ${ms} ms` : `no response body bytes for ${ms} ms`);
    this.name = 'HttpTimeoutError';
    this.code = what === 'headers' ? 'ERR_API_HEADERS_TIMEOUT' : 'ERR_API_BODY_TIMEOUT';
  }
}

export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined) return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

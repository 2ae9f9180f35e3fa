// One list page and one watch stream: the HTTP half of a reflector.
// Policy (what to do on which error) lives in src/streams/reflector.ts.

import { LineSplitter } from './line-splitter.ts';
import { ApiStatusError, MalformedWatchEventError, parseRetryAfter, ResourceExpiredError } from './errors.ts';
import type { ApiConnection } from './api-connection.ts';
import type { HttpRequest } from './http-client.ts';

export type Query = Record<string, string | number | boolean | undefined>;

function buildUrl(conn: ApiConnection, path: string, query: Query): string {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') qs.set(k, String(v));
  const s = qs.toString();
  return `${conn.baseUrl}${path}${s ? `?${s}` : ''}`;
}

export type RequestTimeouts = Pick<HttpRequest, 'headersTimeoutMs' | 'bodyTimeoutMs'>;

/**
 * An error body is read up to this much: a Status is a few hundred bytes, and a server (or proxy) answering with megabytes must not cost
 * them.
 */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;

/**
 * A list page larger than this is refused. Pages are asked for with a limit
 * (500 items): at the largest EndpointSlices the API allows that is well under
 * this, so only a broken or hostile server reaches it.
 */
export const MAX_LIST_PAGE_BYTES = 256 * 2 ** 20;

async function cappedText(body: AsyncIterable<unknown> & { destroy(): unknown }, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const c of body) {
    const chunk = c as Buffer;
    chunks.push(chunk.subarray(0, max - bytes));
    bytes += Math.min(chunk.length, max - bytes);
    if (bytes >= max) break;
  }
  body.destroy();
  return Buffer.concat(chunks, bytes).toString('utf8');
}

async function failure(
  statusCode: number,
  headers: Record<string, string | string[] | undefined>,
  body: AsyncIterable<unknown> & { destroy(): unknown },
): Promise<Error> {
  let message = '';
  try {
    const text = await cappedText(body, MAX_ERROR_BODY_BYTES);
    try {
      const st = JSON.parse(text) as { message?: string; reason?: string };
      message = st.message ?? st.reason ?? text.slice(0, 200);
    } catch {
      message = text.slice(0, 200);
    }
  } catch {
    // The body may be cut; the status is what matters.
  }
  if (statusCode === 410) return new ResourceExpiredError(message || 'resource version expired');
  return new ApiStatusError(statusCode, message, parseRetryAfter(headers['retry-after'], Date.now()));
}

export interface ListPage {
  items: unknown[];
  resourceVersion: string;
  continueToken: string;
  /** Items after this page, when the server says (metadata.remainingItemCount; an estimate). */
  remainingItemCount?: number;
  bytes: number;
}

/** A growable byte buffer a paged list reuses for each page's body. */
export class ScratchBuffer {
  buffer: Buffer = Buffer.allocUnsafeSlow(0);

  /** Makes room for `size` bytes, keeping the first `keep`. */
  reserve(size: number, keep: number): void {
    if (size <= this.buffer.length) return;
    const next = Buffer.allocUnsafeSlow(Math.max(size, this.buffer.length * 2, 64 * 1024));
    this.buffer.copy(next, 0, 0, keep);
    this.buffer = next;
  }
}

/** A GET whose answer must be 200; any other status is thrown as the API server's error. */
async function get(conn: ApiConnection, path: string, query: Query, t: RequestTimeouts, signal: AbortSignal) {
  // headers() first: it may wait for the rate limit and switch to a client with rotated TLS material.
  const headers = await conn.headers();
  const res = await conn.client.request(buildUrl(conn, path, query), { headers, signal, ...t });
  if (res.statusCode !== 200) throw await failure(res.statusCode, res.headers, res.body);
  return res;
}

export async function listPage(
  conn: ApiConnection,
  path: string,
  query: Query,
  t: RequestTimeouts,
  signal: AbortSignal,
  scratch?: ScratchBuffer,
  maxBytes = MAX_LIST_PAGE_BYTES,
): Promise<ListPage> {
  const res = await get(conn, path, query, t, signal);
  const declared = Number(res.headers['content-length']);
  const tooLarge = () => {
    res.body.destroy();
    return new ApiStatusError(200, `list page larger than ${maxBytes} bytes refused`);
  };
  if (declared > maxBytes) throw tooLarge();
  let bytes = 0;
  let body: Buffer;
  if (scratch) {
    // Copy into one buffer reused for every page of the list: no per-page
    // concatenation buffer for malloc to keep around after the list.
    for await (const c of res.body) {
      const chunk = c as Buffer;
      if (bytes + chunk.length > maxBytes) throw tooLarge();
      scratch.reserve(bytes + chunk.length, bytes);
      chunk.copy(scratch.buffer, bytes);
      bytes += chunk.length;
    }
    body = scratch.buffer;
  } else {
    const chunks: Buffer[] = [];
    for await (const c of res.body) {
      if (bytes + (c as Buffer).length > maxBytes) throw tooLarge();
      chunks.push(c as Buffer);
      bytes += (c as Buffer).length;
    }
    body = Buffer.concat(chunks, bytes);
  }
  return parseListBody(body, bytes);
}

/**
 * A list response's first `length` bytes → its items and list metadata: one
 * decode and one JSON.parse, nothing else (bench/streams.ts measures the
 * ingest through this very function).
 */
export function parseListBody(body: Buffer, length: number): ListPage {
  let parsed: { items?: unknown; metadata?: { resourceVersion?: unknown; continue?: unknown; remainingItemCount?: unknown } };
  try {
    parsed = JSON.parse(body.toString('utf8', 0, length));
  } catch (e) {
    throw new ApiStatusError(200, `list response is not JSON: ${(e as Error).message}`);
  }
  if (!Array.isArray(parsed.items) && parsed.items !== null && parsed.items !== undefined) {
    throw new ApiStatusError(200, 'list response has no items array');
  }
  const meta = parsed.metadata ?? {};
  return {
    items: (parsed.items as unknown[] | null) ?? [],
    resourceVersion: typeof meta.resourceVersion === 'string' ? meta.resourceVersion : '',
    continueToken: typeof meta.continue === 'string' ? meta.continue : '',
    ...(typeof meta.remainingItemCount === 'number' ? { remainingItemCount: meta.remainingItemCount } : {}),
    bytes: length,
  };
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
const EVENT_TYPES = new Set<string>(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']);

export interface WatchEvent {
  type: WatchEventType;
  object: Record<string, unknown>;
}

/**
 * Streams a watch, calling `onEvent` synchronously for each event in order.
 * Resolves when the server ends the stream cleanly (timeoutSeconds), rejects
 * on HTTP errors, timeouts, cut or malformed lines, or whatever `onEvent`
 * throws (the stream is torn down first).
 */
export async function watchStream(
  conn: ApiConnection,
  path: string,
  query: Query,
  t: RequestTimeouts,
  signal: AbortSignal,
  onEvent: (ev: WatchEvent) => void,
): Promise<void> {
  const res = await get(conn, path, { ...query, watch: 1 }, t, signal);
  const splitter = new LineSplitter();
  const onLine = (line: string) => {
    let ev: unknown;
    try {
      ev = JSON.parse(line);
    } catch (e) {
      throw new MalformedWatchEventError(`not JSON (${(e as Error).message})`, line);
    }
    const o = ev as { type?: unknown; object?: unknown };
    if (typeof o !== 'object' || o === null || typeof o.type !== 'string' || !EVENT_TYPES.has(o.type)) {
      throw new MalformedWatchEventError('no known event type', line);
    }
    if (typeof o.object !== 'object' || o.object === null || Array.isArray(o.object)) {
      throw new MalformedWatchEventError('no object', line);
    }
    onEvent(o as WatchEvent);
  };
  try {
    for await (const chunk of res.body) splitter.push(chunk as Buffer, onLine);
  } finally {
    if (!res.body.destroyed) res.body.destroy();
  }
  if (splitter.remainder > 0) throw new MalformedWatchEventError('stream ended inside a line', '');
}

// Creating an events.k8s.io/v1 Event: one POST, nothing else. Rate limits,
// deduplication and what to do when it fails live with the caller
// (src/agent/event-recorder.ts); this only speaks HTTP.

import type { ApiConnection } from './api-connection.ts';
import { ApiStatusError, parseRetryAfter } from './errors.ts';

/** An Event's answer is a few hundred bytes; anything past this is not read. */
const MAX_ERROR_BODY = 4 * 1024;
const TIMEOUT_MS = 10_000;

/** The Event object as events.k8s.io/v1 takes it (the fields we set). */
export interface EventObject {
  apiVersion: 'events.k8s.io/v1';
  kind: 'Event';
  metadata: { name: string; namespace: string };
  eventTime: string;
  reportingController: string;
  reportingInstance: string;
  action: string;
  reason: string;
  type: 'Normal' | 'Warning';
  note: string;
  regarding: { apiVersion: string; kind: string; name: string; namespace?: string; uid?: string };
}

async function messageOf(body: AsyncIterable<Buffer>): Promise<string> {
  let text = '';
  for await (const chunk of body) {
    text += chunk.toString('utf8');
    if (text.length > MAX_ERROR_BODY) break;
  }
  try {
    const st = JSON.parse(text) as { message?: string };
    return st.message ?? text.slice(0, 200);
  } catch {
    return text.slice(0, 200);
  }
}

/** Creates the Event; throws ApiStatusError when the API server refuses it, or a network error. */
export async function postEvent(conn: ApiConnection, event: EventObject, signal?: AbortSignal): Promise<void> {
  const url = `${conn.baseUrl}/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(event.metadata.namespace)}/events`;
  const headers = { ...(await conn.headers()), 'content-type': 'application/json' };
  const res = await conn.client.request(url, {
    method: 'POST',
    headers,
    body: JSON.stringify(event),
    signal,
    headersTimeoutMs: TIMEOUT_MS,
    bodyTimeoutMs: TIMEOUT_MS,
  });
  if (res.statusCode === 201 || res.statusCode === 200) {
    // Read to its end, so that the connection is kept for the next request.
    for await (const _ of res.body);
    return;
  }
  const message = await messageOf(res.body).catch(() => '');
  res.body.destroy();
  throw new ApiStatusError(res.statusCode, message, parseRetryAfter(res.headers['retry-after'], Date.now()));
}

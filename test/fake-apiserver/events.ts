// events.k8s.io/v1 Event creation for the fake API server: checks what the
// real one checks for the fields we send, and records each accepted Event so
// tests can assert them.

import type { IncomingMessage } from 'node:http';

export interface RecordedEvent {
  namespace: string;
  object: Record<string, any>;
  at: number;
}

const EVENTS_PATH = /^\/apis\/events\.k8s\.io\/v1\/namespaces\/([^/]+)\/events$/;

/** The namespace of an events POST path, or undefined for any other path. */
export function eventsNamespace(pathname: string): string | undefined {
  return EVENTS_PATH.exec(pathname)?.[1];
}

const MAX_BODY = 64 * 1024;

export async function readBody(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) {
    text += chunk;
    if (text.length > MAX_BODY) throw new Error('body too large');
  }
  return text;
}

/** Why the real API server would refuse this Event (validation of events.k8s.io/v1), or undefined. */
export function invalidEvent(namespace: string, ev: Record<string, any>): string | undefined {
  if (ev.apiVersion !== 'events.k8s.io/v1' || ev.kind !== 'Event') return 'apiVersion/kind must be events.k8s.io/v1 Event';
  if (typeof ev.metadata?.name !== 'string' || ev.metadata.name === '') return 'metadata.name: Required value';
  if ((ev.metadata.namespace ?? namespace) !== namespace) return 'metadata.namespace does not match the request';
  if (typeof ev.eventTime !== 'string' || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/.test(ev.eventTime))
    return 'eventTime: Required value (MicroTime)';
  for (const f of ['reportingController', 'reportingInstance', 'action', 'reason'] as const) {
    if (typeof ev[f] !== 'string' || ev[f] === '') return `${f}: Required value`;
    if (ev[f].length > 128) return `${f}: Too long`;
  }
  if (ev.type !== 'Normal' && ev.type !== 'Warning') return 'type: Unsupported value';
  if (typeof ev.note === 'string' && Buffer.byteLength(ev.note) > 1024) return 'note: Too long: must have at most 1024 bytes';
  if (typeof ev.regarding?.kind !== 'string' || typeof ev.regarding?.name !== 'string') return 'regarding: Required value';
  return undefined;
}

function status(code: number, reason: string, message: string): string {
  return JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
}

/** The answer to an Event POST; accepted ones are appended to `into`. */
export async function answerEventPost(
  req: IncomingMessage,
  namespace: string,
  refuse: number | undefined,
  into: RecordedEvent[],
): Promise<{ status: number; body: string }> {
  let ev: Record<string, any>;
  try {
    ev = JSON.parse(await readBody(req)) as Record<string, any>;
  } catch (e) {
    return { status: 400, body: status(400, 'BadRequest', (e as Error).message) };
  }
  if (refuse !== undefined) return { status: refuse, body: status(refuse, 'Forbidden', 'events.events.k8s.io is forbidden') };
  const why = invalidEvent(namespace, ev);
  if (why) return { status: 422, body: status(422, 'Invalid', why) };
  into.push({ namespace, object: ev, at: Date.now() });
  return { status: 201, body: JSON.stringify(ev) };
}

// Events through the fake API server over real HTTP: what is posted, and that
// repeats are folded, floods limited and refusals harmless.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventRecorder, type EventOutcome } from '../../src/agent/event-recorder.ts';
import { connectionFromAccess, type ApiConnection } from '../../src/streams/api/api-connection.ts';
import { postEvent } from '../../src/streams/api/post-event.ts';
import { FakeApiServer } from '../fake-apiserver/index.ts';
import { recordingLogger, type RecordingLogger } from '../streams/helpers.ts';

describe('EventRecorder', () => {
  let api: FakeApiServer;
  let conn: ApiConnection;
  let log: RecordingLogger;
  let now: number;
  let outcomes: string[];
  const recorder = (o: { burst?: number; refillMs?: number } = {}) =>
    new EventRecorder({
      post: (ev) => postEvent(conn, ev),
      logger: log.logger,
      reportingController: 'kube-nft-proxy',
      reportingInstance: 'kube-nft-proxy-host1',
      now: () => now,
      onOutcome: (type, outcome: EventOutcome) => outcomes.push(`${type} ${outcome}`),
      ...o,
    });

  beforeEach(async () => {
    api = await FakeApiServer.start();
    conn = connectionFromAccess({ server: api.url, source: 'test', insecureSkipTLSVerify: false, credentials: { kind: 'none' } });
    log = recordingLogger();
    now = Date.UTC(2026, 10, 25, 12, 0, 0, 250);
    outcomes = [];
  });
  afterEach(async () => {
    await conn.close();
    await api.close();
  });

  it("posts kube-proxy's start-up event on the Node", async () => {
    const r = recorder();
    r.recordStartup('node-a');
    expect(api.events).toHaveLength(0); // record() does not wait for the API
    await r.flush();
    expect(api.events).toHaveLength(1);
    const { namespace, object } = api.events[0]!;
    expect(namespace).toBe('default');
    expect(object).toMatchObject({
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { namespace: 'default' },
      eventTime: '2026-11-25T12:00:00.250000Z',
      type: 'Normal',
      reason: 'Starting',
      action: 'StartKubeProxy',
      reportingController: 'kube-nft-proxy',
      reportingInstance: 'kube-nft-proxy-host1',
      regarding: { apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'node-a' },
    });
    expect(object.metadata.name).toMatch(/^node-a\.[0-9a-f]+$/);
    expect(outcomes).toEqual(['Normal sent']);
  });

  it('posts a Warning on a Service once per dedupe window', async () => {
    const r = recorder();
    r.recordServiceWarning({ namespace: 'shop', name: 'web' }, 'RulesRefused', 'the kernel refused: EINVAL');
    r.recordServiceWarning({ namespace: 'shop', name: 'web' }, 'RulesRefused', 'the kernel refused: EINVAL');
    r.recordServiceWarning({ namespace: 'shop', name: 'web' }, 'RulesRefused', 'the kernel refused: E2BIG');
    await r.flush();
    expect(api.events.map((e) => [e.namespace, e.object.type, e.object.regarding.kind, e.object.regarding.name, e.object.note])).toEqual([
      ['shop', 'Warning', 'Service', 'web', 'the kernel refused: EINVAL'],
      ['shop', 'Warning', 'Service', 'web', 'the kernel refused: E2BIG'],
    ]);
    expect(outcomes).toEqual(['Warning deduplicated', 'Warning sent', 'Warning sent']);
    now += 6 * 60_000; // past the window: the same event again is news
    r.recordServiceWarning({ namespace: 'shop', name: 'web' }, 'RulesRefused', 'the kernel refused: EINVAL');
    await r.flush();
    expect(api.events).toHaveLength(3);
  });

  it('limits each object to a burst, then one per refill period', async () => {
    const r = recorder({ burst: 3, refillMs: 60_000 });
    for (let i = 0; i < 5; i++) r.recordServiceWarning({ namespace: 'shop', name: 'web' }, 'R', `m${i}`);
    r.recordServiceWarning({ namespace: 'shop', name: 'other' }, 'R', 'm0'); // another object has its own bucket
    await r.flush();
    expect(api.events.map((e) => `${e.object.regarding.name} ${e.object.note}`)).toEqual(['web m0', 'web m1', 'web m2', 'other m0']);
    expect(outcomes.filter((o) => o.endsWith('rate_limited'))).toHaveLength(2);
    now += 60_000;
    r.recordServiceWarning({ namespace: 'shop', name: 'web' }, 'R', 'm5');
    r.recordServiceWarning({ namespace: 'shop', name: 'web' }, 'R', 'm6');
    await r.flush();
    expect(api.events.map((e) => e.object.note).slice(4)).toEqual(['m5']);
  });

  it('survives an API server that refuses events, warning once', async () => {
    api.refuseEvents = 403;
    const r = recorder();
    r.recordServiceWarning({ namespace: 'shop', name: 'web' }, 'R', 'one');
    r.recordServiceWarning({ namespace: 'shop', name: 'web' }, 'R', 'two');
    await r.flush();
    expect(api.events).toHaveLength(0);
    expect(outcomes).toEqual(['Warning failed', 'Warning failed']);
    expect(log.lines.filter((l) => l.level === 40 && String(l.msg).startsWith('could not post an event'))).toHaveLength(1);
    api.refuseEvents = undefined;
    r.recordServiceWarning({ namespace: 'shop', name: 'web' }, 'R', 'three');
    await r.flush();
    expect(api.events).toHaveLength(1);
  });

  it('truncates a note to the 1 KiB the API takes', async () => {
    const r = recorder();
    r.recordServiceWarning({ namespace: 'shop', name: 'web' }, 'R', 'é'.repeat(2000));
    await r.flush();
    expect(api.events).toHaveLength(1);
    expect(Buffer.byteLength(api.events[0]!.object.note)).toBeLessThanOrEqual(1024);
  });
});

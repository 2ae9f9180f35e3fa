// A failed link monitor is replaced after a backoff, its successor's first
// state taking over; the backoff doubles while monitors keep failing and
// starts over once one delivers; stop() ends it all.

import { Subject, VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { LinkMap } from '../../src/links/link-state.ts';
import { restartingLinkSource } from '../../src/links/restarting-link-source.ts';
import type { LinkSource } from '../../src/links/sysfs-links.ts';
import type { Logger } from '../../src/observability/logger.ts';

class FakeMonitor implements LinkSource {
  readonly subject = new Subject<LinkMap>();
  readonly links$ = this.subject.asObservable();
  started = false;
  stopped = false;
  start(): void {
    this.started = true;
  }
  stop(): void {
    this.stopped = true;
  }
}

const state = (...names: string[]): LinkMap => new Map(names.map((name, i) => [i + 1, { name } as never]));

function harness(failToOpen: (n: number) => boolean = () => false) {
  const scheduler = new VirtualTimeScheduler();
  const made: FakeMonitor[] = [];
  const errors: Array<{ restartInMs: number }> = [];
  let restarts = 0;
  const logger = { error: (fields: { restartInMs: number }) => errors.push(fields) } as unknown as Logger;
  const source = restartingLinkSource(
    () => {
      if (failToOpen(made.length + 1)) {
        made.push(new FakeMonitor());
        throw new Error('LinkMonitor: socket: EMFILE');
      }
      const m = new FakeMonitor();
      made.push(m);
      return m;
    },
    { logger, scheduler, initialDelayMs: 1_000, maxDelayMs: 8_000, onRestart: () => restarts++ },
  );
  const seen: string[][] = [];
  let completed = false;
  source.links$.subscribe({ next: (m) => seen.push([...m.values()].map((l) => l.name)), complete: () => (completed = true) });
  // Virtual time: the scheduler's clock moves only to the actions it runs, so the test keeps its own.
  let now = 0;
  const advance = (ms: number) => {
    now += ms;
    scheduler.maxFrames = now;
    scheduler.flush();
  };
  return { source, made, errors, seen, advance, restarts: () => restarts, completed: () => completed };
}

describe('restartingLinkSource', () => {
  it('replaces a monitor that fails after a backoff; the new one starts from its own dump', () => {
    const h = harness();
    h.source.start();
    expect(h.made).toHaveLength(1);
    expect(h.made[0]!.started).toBe(true);
    h.made[0]!.subject.next(state('lo', 'eth0'));
    h.made[0]!.subject.error(new Error('LinkMonitor: recvmsg: EIO'));
    expect(h.made[0]!.stopped).toBe(true);
    expect(h.errors).toEqual([expect.objectContaining({ restartInMs: 1_000 })]);
    expect(h.restarts()).toBe(1);
    h.advance(999);
    expect(h.made).toHaveLength(1);
    h.advance(1);
    expect(h.made).toHaveLength(2);
    expect(h.made[1]!.started).toBe(true);
    h.made[1]!.subject.next(state('lo', 'eth0', 'veth1'));
    expect(h.seen).toEqual([
      ['lo', 'eth0'],
      ['lo', 'eth0', 'veth1'],
    ]);
    expect(h.completed()).toBe(false);
  });

  it('waits twice as long after each failure in a row, up to the maximum, and from the start again once one delivered', () => {
    // Monitors 2 to 5 cannot be opened.
    const h = harness((n) => n >= 2 && n <= 5);
    h.source.start();
    h.made[0]!.subject.error(new Error('first'));
    h.advance(1_000 + 2_000 + 4_000 + 8_000 + 8_000);
    expect(h.made).toHaveLength(6);
    expect(h.errors.map((e) => e.restartInMs)).toEqual([1_000, 2_000, 4_000, 8_000, 8_000]);
    h.made[5]!.subject.next(state('lo'));
    h.made[5]!.subject.error(new Error('again'));
    expect(h.errors.at(-1)!.restartInMs).toBe(1_000);
    expect(h.restarts()).toBe(6);
  });

  it('stop() stops the running monitor, completes the links and starts no other', () => {
    const h = harness();
    h.source.start();
    h.made[0]!.subject.error(new Error('failed'));
    h.advance(1_000);
    h.source.stop();
    expect(h.made[1]!.stopped).toBe(true);
    expect(h.completed()).toBe(true);
    h.advance(60_000);
    expect(h.made).toHaveLength(2);
  });
});

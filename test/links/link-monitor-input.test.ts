// Bad input from JS is a thrown error with a stable code, never a crash.

import { describe, expect, it } from 'vitest';
import { loadAddon } from '../../src/native/addon.ts';
import { LinkMonitor } from '../../src/links/link-monitor.ts';
import { LinkMonitorError } from '../../src/links/link-monitor-error.ts';
import { withNetns } from '../helpers/netns.ts';

const noop = () => {};

describe('LinkMonitor input', () => {
  it.each([
    { opts: { netns: 5 }, code: 'ERR_INVALID_ARG_TYPE' },
    { opts: { netns: '' }, code: 'ERR_INVALID_ARG_VALUE' },
    { opts: { netns: '/var/run/netns/a\0b' }, code: 'ERR_INVALID_ARG_VALUE' },
    { opts: { netns: `/${'x'.repeat(5000)}` }, code: 'ERR_INVALID_ARG_VALUE' },
    { opts: { receiveBufferBytes: -1 }, code: 'ERR_INVALID_ARG_VALUE' },
    { opts: { receiveBufferBytes: 1.5 }, code: 'ERR_INVALID_ARG_VALUE' },
    { opts: { receiveBufferBytes: Number.NaN }, code: 'ERR_INVALID_ARG_VALUE' },
    { opts: { receiveBufferBytes: Number.POSITIVE_INFINITY }, code: 'ERR_INVALID_ARG_VALUE' },
    { opts: { receiveBufferBytes: 2 ** 31 }, code: 'ERR_INVALID_ARG_VALUE' },
    { opts: { receiveBufferBytes: '1024' }, code: 'ERR_INVALID_ARG_TYPE' },
    { opts: { keepAlive: 'yes' }, code: 'ERR_INVALID_ARG_TYPE' },
  ])('rejects options $opts', ({ opts, code }) => {
    expect(() => new LinkMonitor(opts as never)).toThrow(expect.objectContaining({ name: 'TypeError', code }));
  });

  it('a namespace path that does not exist fails start() with ERR_LINK_MONITOR_OPEN / ENOENT', () => {
    const mon = new LinkMonitor({ netns: '/var/run/netns/knp-does-not-exist' });
    let error: unknown;
    try {
      mon.start();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(LinkMonitorError);
    expect(error).toMatchObject({ code: 'ERR_LINK_MONITOR_OPEN', errno: 2 });
    expect(mon.running).toBe(false);
  });

  it('a path that is not a namespace fails start() with ERR_LINK_MONITOR_OPEN / EINVAL', () => {
    const mon = new LinkMonitor({ netns: '/proc/self/status' });
    expect(() => mon.start()).toThrow(expect.objectContaining({ code: 'ERR_LINK_MONITOR_OPEN', errno: 22 }));
  });

  it('start() twice is an error', async () => {
    await withNetns((ns) => {
      const mon = new LinkMonitor({ netns: ns.path });
      try {
        mon.start();
        expect(() => mon.start()).toThrow(expect.objectContaining({ code: 'ERR_LINK_MONITOR_STATE' }));
      } finally {
        mon.stop();
      }
    });
  });
});

describe('native LinkMonitor input', () => {
  const Native = loadAddon().LinkMonitor;

  it.each([123, 'netns', [], () => {}, null])('rejects options %p', (opts) => {
    expect(() => new Native(opts as never)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
  });

  it('is a class, not a function', () => {
    expect(() => (Native as unknown as () => unknown)()).toThrow(TypeError);
  });

  it.each([[], [noop], [1, 2], [noop, 'x'], ['x', noop]])('start(%p) is a TypeError', (...args) => {
    const mon = new Native({});
    expect(() => (mon.start as (...a: unknown[]) => void)(...args)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
    expect(mon.running).toBe(false);
  });

  it('start twice, stop twice, stats when idle', async () => {
    await withNetns((ns) => {
      const mon = new Native({ netns: ns.path });
      expect(mon.stats()).toEqual({ overruns: 0, dumps: 0, stalledDumps: 0, receiveBufferBytes: 0 });
      try {
        mon.start(noop, noop);
        expect(() => mon.start(noop, noop)).toThrow(expect.objectContaining({ code: 'ERR_LINK_MONITOR_RUNNING' }));
        expect(mon.running).toBe(true);
      } finally {
        mon.stop();
        mon.stop();
      }
      expect(mon.running).toBe(false);
      expect(mon.stats().dumps).toBe(1);
    });
  });

  it('methods called on a foreign receiver throw instead of crashing', () => {
    const mon = new Native({});
    expect(() => mon.start.call({} as never, noop, noop)).toThrow();
    expect(() => mon.stop.call({} as never)).toThrow();
    expect(() => mon.stats.call(Object.create(null) as never)).toThrow();
  });
});

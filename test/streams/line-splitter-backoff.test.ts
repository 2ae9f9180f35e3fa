import { describe, expect, it } from 'vitest';
import { Backoff } from '../../src/streams/backoff.ts';
import type { Clock } from '../../src/streams/clock.ts';
import { parseRetryAfter } from '../../src/streams/api/errors.ts';
import { LineSplitter } from '../../src/streams/api/line-splitter.ts';

describe('LineSplitter', () => {
  it('splits at every byte boundary, multi-byte characters intact', () => {
    const text = '{"a":"zürich ✓"}\n{"b":2}\n\n{"c":"🚀"}\n';
    const bytes = Buffer.from(text);
    for (let cut = 1; cut < bytes.length; cut++) {
      const s = new LineSplitter();
      const out: string[] = [];
      s.push(bytes.subarray(0, cut), (l) => out.push(l));
      s.push(bytes.subarray(cut), (l) => out.push(l));
      expect(out).toEqual(['{"a":"zürich ✓"}', '{"b":2}', '{"c":"🚀"}']);
      expect(s.remainder).toBe(0);
    }
  });

  it('reports an unterminated remainder and refuses endless lines', () => {
    const s = new LineSplitter(10);
    s.push(Buffer.from('abc'), () => {});
    expect(s.remainder).toBe(3);
    expect(() => s.push(Buffer.from('0123456789'), () => {})).toThrow(RangeError);
  });
});

describe('Backoff', () => {
  const clock = (r: number): Clock => ({ now: () => 0, setTimeout: () => ({ cancel() {} }), random: () => r });

  it('grows exponentially to the cap, with jitter, and resets', () => {
    const b = new Backoff({ initialMs: 100, maxMs: 1000, factor: 2, jitter: 0.5 }, clock(0));
    expect([b.next(), b.next(), b.next(), b.next(), b.next()]).toEqual([100, 200, 400, 800, 1000]);
    b.reset();
    expect(b.next()).toBe(100);
    const j = new Backoff({ initialMs: 100, maxMs: 1000, factor: 2, jitter: 0.5 }, clock(0.999));
    expect(j.next()).toBe(50);
  });

  it('never goes below a Retry-After floor', () => {
    const b = new Backoff({ initialMs: 100, maxMs: 1000, factor: 2, jitter: 0.5 }, clock(0.5));
    expect(b.next(3000)).toBe(3000);
  });

  it('parses Retry-After seconds and dates', () => {
    expect(parseRetryAfter('2', 0)).toBe(2000);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4000)).toBe(6000);
    expect(parseRetryAfter(undefined, 0)).toBeUndefined();
  });
});

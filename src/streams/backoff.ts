// Exponential backoff with jitter for reconnecting list/watch, forever.

import type { Clock } from './clock.ts';

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  factor: number;
  /** Fraction of the delay that is randomised: delay * (1 - jitter * random). */
  jitter: number;
}

export const defaultBackoff: BackoffOptions = { initialMs: 800, maxMs: 30_000, factor: 2, jitter: 0.5 };

export class Backoff {
  private attempt = 0;
  private readonly opts: BackoffOptions;
  private readonly clock: Clock;

  constructor(opts: BackoffOptions, clock: Clock) {
    this.opts = opts;
    this.clock = clock;
  }

  /** The delay before the next attempt; at least `floorMs` (a server's Retry-After). */
  next(floorMs = 0): number {
    const { initialMs, maxMs, factor, jitter } = this.opts;
    const base = Math.min(maxMs, initialMs * factor ** this.attempt);
    this.attempt++;
    const delay = base * (1 - jitter * this.clock.random());
    return Math.max(Math.round(delay), floorMs);
  }

  get failures(): number {
    return this.attempt;
  }

  reset(): void {
    this.attempt = 0;
  }
}

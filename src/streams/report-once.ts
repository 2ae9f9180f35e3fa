// Logs each (key, reason) once, so an invalid object that keeps arriving on
// every relist or watch event does not flood the log. Forgetting a key (it
// became valid or was deleted) lets a later recurrence be reported again.

import type { Logger } from 'pino';

export class ReportOnce {
  private readonly seen = new Map<string, Set<string>>();
  private readonly logger: Logger;
  #reported = 0;

  constructor(logger: Logger) {
    this.logger = logger;
  }

  report(key: string, reason: string, fields: Record<string, unknown> = {}, msg = 'invalid object left out'): void {
    let reasons = this.seen.get(key);
    if (!reasons) {
      reasons = new Set();
      this.seen.set(key, reasons);
    }
    if (reasons.has(reason)) return;
    reasons.add(reason);
    this.#reported++;
    this.logger.warn({ ...fields, key, reason }, msg);
  }

  forget(key: string): void {
    // Called for every valid object: skip hashing the key when nothing is remembered.
    if (this.seen.size !== 0) this.seen.delete(key);
  }

  get size(): number {
    return this.seen.size;
  }

  /** Reports logged since the start: each (key, reason) once while it lasts. */
  get reported(): number {
    return this.#reported;
  }
}

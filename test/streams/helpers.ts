// Shared test helpers: a pino logger that records, and polling waits.

import { pino, type Logger } from 'pino';

export interface RecordingLogger {
  logger: Logger;
  lines: Record<string, unknown>[];
  find(msg: string): Record<string, unknown>[];
}

export function recordingLogger(level = 'debug'): RecordingLogger {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { logger, lines, find: (msg) => lines.filter((l) => l.msg === msg) };
}

export async function waitFor(cond: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

// The agent's pino lines, parsed as it writes them: for tests that assert what it logged.
import { Writable } from 'node:stream';

export function jsonLogLines(): { lines: Array<Record<string, unknown>>; sink: Writable } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l.startsWith('{')) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { lines, sink };
}

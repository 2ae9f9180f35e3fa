// --logging-format: json (one object per line) or text (one klog-shaped line
// per event with the same fields).
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, textLine } from '../../src/observability/logger.ts';

function capture(): { stream: Writable; lines: () => string[] } {
  let out = '';
  const stream = new Writable({
    write(chunk, _enc, done) {
      out += String(chunk);
      done();
    },
  });
  return { stream, lines: () => out.split('\n').filter((l) => l !== '') };
}

describe('logger', () => {
  it('json: one object per event, with its fields', () => {
    const c = capture();
    const log = createLogger('info', c.stream, 'json');
    log.info({ kind: 'partial', ops: 3 }, 'synced nftables rules');
    log.debug('not at info');
    expect(c.lines()).toHaveLength(1);
    expect(JSON.parse(c.lines()[0]!)).toMatchObject({
      level: 30,
      name: 'kube-nft-proxy',
      msg: 'synced nftables rules',
      kind: 'partial',
      ops: 3,
    });
  });

  it('text: one readable line per event, level letter and time as klog prints them, the same fields', () => {
    const c = capture();
    const log = createLogger('debug', c.stream, 'text');
    log.warn({ nodeName: 'ghost', nested: { a: [1, 2] } }, 'node not found');
    log.error({ err: new Error('boom\nsecond line') }, 'sync failed');
    log.debug({ n: 1 }, 'detail');
    const [warn, error, debug] = c.lines();
    expect(c.lines()).toHaveLength(3);
    expect(warn).toMatch(
      new RegExp(
        `^W\\d{4} \\d\\d:\\d\\d:\\d\\d\\.\\d{6} ${process.pid} kube-nft-proxy\\] "node not found" nodeName="ghost" ` +
          `nested=\\{"a":\\[1,2\\]\\}$`,
      ),
    );
    expect(error).toMatch(/^E\d{4} .*\] "sync failed" err=\{"type":"Error","message":"boom\\nsecond line",.*\}$/);
    expect(debug).toMatch(/^I\d{4} .*\] "detail" n=1$/);
  });

  it('formats a JSON line at a known time exactly', () => {
    const line = textLine(
      JSON.stringify({
        level: 30,
        time: Date.UTC(2026, 10, 25, 16, 28, 17, 123),
        pid: 42,
        name: 'kube-nft-proxy',
        msg: 'hello "you"',
        ok: true,
      }),
    );
    expect(line).toBe('I1125 16:28:17.123000 42 kube-nft-proxy] "hello \\"you\\"" ok=true\n');
  });
});

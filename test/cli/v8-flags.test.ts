// The V8 flags the command sets on itself (src/cli/v8-flags.ts) rather than
// on node's command line: they must take effect although set once V8 runs.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const V8_FLAGS = fileURLToPath(new URL('../../src/cli/v8-flags.ts', import.meta.url));

/**
 * V8's pretenuring decisions in a child that keeps every object of one
 * allocation site alive across young collections (1 MiB semi-spaces: many of
 * them), the pattern V8 tenures; --trace-pretenuring-statistics prints each
 * decision. Without the flags it made at least 2 in each of 52 runs.
 */
function tenuringDecisions(setFlags: boolean): number {
  const script = `
    ${setFlags ? `(await import(${JSON.stringify(V8_FLAGS)})).setAgentV8Flags();` : ''}
    const kept = [];
    const make = (i) => ({ i, pair: [i, i + 1], name: 'x' + i });
    for (let i = 0; i < 400_000; i++) kept.push(make(i));
  `;
  const r = spawnSync(
    process.execPath,
    ['--max-semi-space-size=1', '--trace-pretenuring-statistics', '--input-type=module', '-e', script],
    { encoding: 'utf8', timeout: 60_000 },
  );
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.split('\n').filter((l) => l.includes('=> tenure')).length;
}

describe("the agent's own V8 flags", () => {
  it('leave V8 making no pretenuring decision once set', () => {
    expect(tenuringDecisions(true)).toBe(0);
  });

  it('are what stops them: the same child without them tenures (so the check above can fail)', () => {
    expect(tenuringDecisions(false)).toBeGreaterThan(0);
  });
});

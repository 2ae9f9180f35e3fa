// The image's ENTRYPOINT runs node with flags of its own (a bounded young
// generation, see deploy/Containerfile); bench:sync reads them from there to run
// the agent as the image does. A flag node does not know would stop the
// container at once, so each is checked against this node; one V8 hashes would
// cost every start-up node's built-in code cache.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { imageEnv, imageNodeFlags } from '../../bench/agent-child.ts';

/** V8's code cache tag (its version, CPU features and the hash of its flags) in a node given `flags`. */
function cachedDataVersionTag(flags: string[]): string {
  const r = spawnSync(process.execPath, [...flags, '-p', 'require("node:v8").cachedDataVersionTag()'], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  expect(r.stderr).toBe('');
  return r.stdout.trim();
}

describe("the image's node flags", () => {
  it('are read from the ENTRYPOINT and accepted by node', () => {
    const flags = imageNodeFlags();
    expect(flags.length).toBeGreaterThan(0);
    for (const f of flags) expect(f).toMatch(/^--[a-z0-9-]+(=\S+)?$/);
    const r = spawnSync(
      process.execPath,
      [...flags, '-e', 'process.stdout.write(String(require("node:v8").getHeapStatistics().total_heap_size > 0))'],
      { encoding: 'utf8', timeout: 20_000 },
    );
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('true');
  });

  it('refuses a flag node does not know (so the check above can fail)', () => {
    const r = spawnSync(process.execPath, ['--max-semi-space-sise=8', '-e', '0'], { encoding: 'utf8', timeout: 20_000 });
    expect(r.status).not.toBe(0);
  });

  // V8 takes the code cache node's own modules come with only when its flags
  // hash as at node's build (deploy/Containerfile says what that costs).
  it("leave V8's flag hash as node's own, so that node's built-in code cache is used", () => {
    expect(cachedDataVersionTag(imageNodeFlags())).toBe(cachedDataVersionTag([]));
  });

  it('would change that hash with a flag V8 hashes (so the check above can fail)', () => {
    expect(cachedDataVersionTag(['--no-allocation-site-pretenuring'])).not.toBe(cachedDataVersionTag([]));
  });

  it('come with the image’s environment, read from its ENV lines', () => {
    const env = imageEnv();
    expect(env).toMatchObject({ NODE_ENV: 'production' });
    for (const [k, v] of Object.entries(env)) expect(`${k}=${v}`).toMatch(/^[A-Z_][A-Z0-9_]*=\S*$/);
  });
});

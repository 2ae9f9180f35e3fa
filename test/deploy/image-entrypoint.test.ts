// The image's ENTRYPOINT runs node with flags of its own (a bounded young
// generation, see deploy/Containerfile); bench:sync reads them from there to run
// the agent as the image does. A flag node does not know would stop the
// container at once, so each is checked against this node; one V8 hashes would
// cost every start-up node's built-in code cache.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { imageEnv, imageNodeFlags } from '../../bench/agent-child.ts';

/** This node run with `args` (its flags, then what to run). */
function node(args: string[]) {
  return spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 20_000 });
}

/** V8's code cache tag (its version, CPU features and the hash of its flags) in a node given `flags`. */
function cachedDataVersionTag(flags: string[]): string {
  const r = node([...flags, '-p', 'require("node:v8").cachedDataVersionTag()']);
  expect(r.stderr).toBe('');
  return r.stdout.trim();
}

let unflaggedTag: string | undefined;
/** The tag of node run without flags: one spawn for both tests that compare with it. */
function nodesOwnTag(): string {
  unflaggedTag ??= cachedDataVersionTag([]);
  return unflaggedTag;
}

describe("the image's node flags", () => {
  it('are read from the ENTRYPOINT and accepted by node', () => {
    const flags = imageNodeFlags();
    expect(flags.length).toBeGreaterThan(0);
    for (const f of flags) expect(f).toMatch(/^--[a-z0-9-]+(=\S+)?$/);
    const r = node([...flags, '-e', 'process.stdout.write(String(require("node:v8").getHeapStatistics().total_heap_size > 0))']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('true');
  });

  it('refuses a flag node does not know (so the check above can fail)', () => {
    const r = node(['--max-semi-space-sise=8', '-e', '0']);
    expect(r.status).not.toBe(0);
  });

  // V8 takes the code cache node's own modules come with only when its flags
  // hash as at node's build (deploy/Containerfile says what that costs).
  it("leave V8's flag hash as node's own, so that node's built-in code cache is used", () => {
    expect(cachedDataVersionTag(imageNodeFlags())).toBe(nodesOwnTag());
  });

  it('would change that hash with a flag V8 hashes (so the check above can fail)', () => {
    expect(cachedDataVersionTag(['--no-allocation-site-pretenuring'])).not.toBe(nodesOwnTag());
  });

  it('come with the image’s environment, read from its ENV lines', () => {
    const env = imageEnv();
    expect(env).toMatchObject({ NODE_ENV: 'production' });
    for (const [k, v] of Object.entries(env)) expect(`${k}=${v}`).toMatch(/^[A-Z_][A-Z0-9_]*=\S*$/);
  });
});

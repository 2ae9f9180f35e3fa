// The agent loads the parts of undici it uses by their own paths
// (src/streams/api/undici-parts.ts), never undici's index, which would load
// all of it and keep its source for the life of the process.

import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-root.ts';

describe("the agent's undici", () => {
  it('is its dispatchers and request API, not the whole package', () => {
    const script = `
      import { createRequire } from 'node:module';
      await import(${JSON.stringify(join(packageRoot, 'src/agent/agent.ts'))});
      const loaded = Object.keys(createRequire(import.meta.url).cache).filter((k) => k.includes('/node_modules/undici/'));
      process.stdout.write(JSON.stringify(loaded.map((k) => k.slice(k.indexOf('/node_modules/undici/') + 21))));`;
    const loaded = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as string[];
    expect(loaded).toContain('lib/dispatcher/agent.js');
    expect(loaded).toContain('lib/api/api-request.js');
    expect(loaded).not.toContain('index.js');
    expect(loaded.filter((f) => f.startsWith('lib/web/'))).toEqual([]);
  });
});

// The agent loads the parts of prom-client it uses by their own paths
// (src/observability/prom-parts.ts), never its index, which loads the default
// metrics (and through them @opentelemetry/api), the Pushgateway and the
// cluster aggregator at start-up; the default metrics come after the first sync.

import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-root.ts';

describe("the agent's prom-client", () => {
  it('is its registry and metric types at import, not the whole package', () => {
    const script = `
      import { createRequire } from 'node:module';
      await import(${JSON.stringify(join(packageRoot, 'src/agent/agent.ts'))});
      const loaded = Object.keys(createRequire(import.meta.url).cache).filter((k) => k.includes('/node_modules/'));
      process.stdout.write(JSON.stringify(loaded.map((k) => k.slice(k.lastIndexOf('/node_modules/') + 14))));`;
    const loaded = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as string[];
    expect(loaded).toContain('prom-client/lib/registry.js');
    expect(loaded).toContain('prom-client/lib/histogram.js');
    expect(loaded).not.toContain('prom-client/index.js');
    expect(loaded).not.toContain('prom-client/lib/defaultMetrics.js');
    expect(loaded.filter((f) => f.startsWith('@opentelemetry/'))).toEqual([]);
  });
});

// The agent loads the parts of prom-client it uses by their own paths
// (src/observability/prom-parts.ts), never its index, which loads the default
// metrics (and through them @opentelemetry/api), the Pushgateway and the
// cluster aggregator at start-up; the default metrics come after the first sync.

import { describe, expect, it } from 'vitest';
import { dependencyFilesLoadedBy } from '../helpers/loaded-modules.ts';

describe("the agent's prom-client", () => {
  it('is its registry and metric types at import, not the whole package', () => {
    const loaded = dependencyFilesLoadedBy('src/agent/agent.ts');
    expect(loaded).toContain('prom-client/lib/registry.js');
    expect(loaded).toContain('prom-client/lib/histogram.js');
    expect(loaded).not.toContain('prom-client/index.js');
    expect(loaded).not.toContain('prom-client/lib/defaultMetrics.js');
    expect(loaded.filter((f) => f.startsWith('@opentelemetry/'))).toEqual([]);
  });
});

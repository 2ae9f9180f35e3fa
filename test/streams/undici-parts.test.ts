// The agent loads the parts of undici it uses by their own paths
// (src/streams/api/undici-parts.ts), never undici's index, which would load
// all of it and keep its source for the life of the process.

import { describe, expect, it } from 'vitest';
import { dependencyFilesLoadedBy } from '../helpers/loaded-modules.ts';

describe("the agent's undici", () => {
  it('is its dispatchers and request API, not the whole package', () => {
    const loaded = dependencyFilesLoadedBy('src/agent/agent.ts').filter((f) => f.startsWith('undici/'));
    expect(loaded).toContain('undici/lib/dispatcher/agent.js');
    expect(loaded).toContain('undici/lib/api/api-request.js');
    expect(loaded).not.toContain('undici/index.js');
    expect(loaded.filter((f) => f.startsWith('undici/lib/web/'))).toEqual([]);
  });
});

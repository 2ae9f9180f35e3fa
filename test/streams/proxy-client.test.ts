// Direct connections to the API server go over Node's own http and https;
// undici is loaded only for a proxy, and then only the parts a proxy needs
// (src/streams/api/proxy-client.ts), never undici's index, which would load
// all of it and keep its source for the life of the process.

import { describe, expect, it } from 'vitest';
import { dependencyFilesLoadedBy } from '../helpers/loaded-modules.ts';

const undiciFiles = (files: string[]) => files.filter((f) => f.startsWith('undici/'));

describe("the agent's undici", () => {
  it('is not loaded at start-up', () => {
    expect(undiciFiles(dependencyFilesLoadedBy('src/agent/agent.ts'))).toEqual([]);
  });

  it('is loaded for a proxy: its proxy agents and request API, not the whole package', () => {
    const loaded = undiciFiles(
      dependencyFilesLoadedBy(
        'src/streams/api/proxy-client.ts',
        "m.proxyClient({ rejectUnauthorized: true }, { kind: 'url', uri: 'http://192.0.2.1:3128' }, 1000)",
      ),
    );
    expect(loaded).toContain('undici/lib/dispatcher/proxy-agent.js');
    expect(loaded).toContain('undici/lib/dispatcher/env-http-proxy-agent.js');
    expect(loaded).toContain('undici/lib/api/api-request.js');
    expect(loaded).not.toContain('undici/index.js');
    expect(loaded.filter((f) => f.startsWith('undici/lib/web/'))).toEqual([]);
  });
});

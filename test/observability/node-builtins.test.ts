// An ES module import of node:http reads every one of its exports, and its
// WebSocket, MessageEvent and CloseEvent getters load Node's own bundled undici,
// which the agent never uses and whose source and code it would keep for life.

import { describe, expect, it } from 'vitest';
import { builtinsLoadedBy } from '../helpers/loaded-modules.ts';

describe("the agent's Node built-ins", () => {
  it("do not include Node's bundled undici", () => {
    const loaded = builtinsLoadedBy('src/agent/agent.ts');
    expect(loaded).toContain('NativeModule http');
    expect(loaded).not.toContain('NativeModule internal/deps/undici/undici');
  });
});

// An ES module import of node:http reads every one of its exports, and its
// WebSocket, MessageEvent and CloseEvent getters load Node's own bundled undici,
// which the agent never uses and whose source and code it would keep for life.

import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-root.ts';

function builtinsLoadedBy(entry: string): string[] {
  const script = `
    await import(${JSON.stringify(join(packageRoot, entry))});
    process.stdout.write(JSON.stringify(process.moduleLoadList));`;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as string[];
}

describe("the agent's Node built-ins", () => {
  it("do not include Node's bundled undici", () => {
    const loaded = builtinsLoadedBy('src/agent/agent.ts');
    expect(loaded).toContain('NativeModule http');
    expect(loaded).not.toContain('NativeModule internal/deps/undici/undici');
  });
});

// The addon's exit watchdog, in child processes: it ends a process whose JS
// thread is stuck (as in Node's exit deadlock, nodejs/node#54918) with the
// code it was given, and leaves a process that exits on its own alone.

import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ADDON = fileURLToPath(new URL('../../src/native/addon.ts', import.meta.url));

/** Runs `body` in a node child that has loaded the addon as `addon`; its exit status and time. */
function child(body: string): { status: number | null; signal: string | null; ms: number } {
  const script = `import { loadAddon } from ${JSON.stringify(ADDON)};\nconst addon = loadAddon();\n${body}`;
  const t0 = Date.now();
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { timeout: 20_000 });
  return { status: r.status, signal: r.signal, ms: Date.now() - t0 };
}

describe('exitWatchdog', () => {
  it('ends a process whose JS thread never returns, with the code it was given', () => {
    // Atomics.wait on a value nobody changes: the main thread blocked for good, as in the deadlock.
    const r = child('addon.exitWatchdog(7, 300);\nAtomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);');
    expect(r).toMatchObject({ status: 7, signal: null });
    expect(r.ms).toBeGreaterThanOrEqual(300);
    expect(r.ms).toBeLessThan(15_000);
  });

  it('leaves a process that exits on its own to exit with its own code, at once', () => {
    const r = child('addon.exitWatchdog(7, 10_000);\nprocess.exit(3);');
    expect(r).toMatchObject({ status: 3, signal: null });
    expect(r.ms).toBeLessThan(8_000);
  });

  it('refuses arguments that are not two numbers', () => {
    expect(child("try { addon.exitWatchdog('7'); } catch (e) { console.error(e.message); process.exit(5); }").status).toBe(5);
  });
});

// Lifetime of a monitor in a real process: never keeps it alive unless asked,
// survives garbage collection and worker teardown without crashing.

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { withNetns, type NetNs } from '../helpers/netns.ts';

const child = fileURLToPath(new URL('./fixtures/monitor-child.ts', import.meta.url));

interface Run {
  stdout: string;
  stderr: string;
  /** Resolves with the exit code (or the signal) of the child; rejects after ms. */
  exited(ms: number): Promise<{ code: number | null; signal: string | null }>;
  waitFor(text: string, ms: number): Promise<void>;
  running(): boolean;
}

function run(ns: NetNs, mode: string, nodeArgs: string[] = []): Run {
  const proc = spawn(process.execPath, [...nodeArgs, child, mode, ns.name], { stdio: ['ignore', 'pipe', 'pipe'] });
  const r: Run = {
    stdout: '',
    stderr: '',
    running: () => proc.exitCode === null && proc.signalCode === null,
    exited: (ms) =>
      new Promise((resolve, reject) => {
        const done = () => resolve({ code: proc.exitCode, signal: proc.signalCode });
        if (!r.running()) return done();
        const t = setTimeout(() => {
          proc.kill('SIGKILL');
          reject(new Error(`${mode}: still running after ${ms} ms; stdout: ${r.stdout} stderr: ${r.stderr}`));
        }, ms);
        proc.once('exit', () => {
          clearTimeout(t);
          done();
        });
      }),
    waitFor: (text, ms) =>
      new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`${mode}: no "${text}" after ${ms} ms; stderr: ${r.stderr}`)), ms);
        const check = () => {
          if (r.stdout.includes(text)) {
            clearTimeout(t);
            resolve();
          }
        };
        proc.stdout.on('data', check);
        proc.once('exit', () => {
          clearTimeout(t);
          if (!r.stdout.includes(text)) reject(new Error(`${mode}: exited without "${text}"; stderr: ${r.stderr}`));
        });
        check();
      }),
  };
  proc.stdout.setEncoding('utf8').on('data', (d: string) => (r.stdout += d));
  proc.stderr.setEncoding('utf8').on('data', (d: string) => (r.stderr += d));
  return r;
}

/** Runs `mode` in a namespace of its own to a clean exit (within 20 s), for the test to read what it printed. */
async function ranToEnd(mode: string, nodeArgs: string[] = []): Promise<Run> {
  return withNetns(async (ns) => {
    const r = run(ns, mode, nodeArgs);
    expect(await r.exited(20_000)).toEqual({ code: 0, signal: null });
    return r;
  });
}

describe('LinkMonitor lifetime', () => {
  it('a running monitor does not keep the process alive', async () => {
    await withNetns(async (ns) => {
      const r = run(ns, 'idle-exit');
      await r.waitFor('ready', 10_000);
      expect(await r.exited(5_000)).toEqual({ code: 0, signal: null });
    });
  });

  it('keepAlive holds the process until stop()', async () => {
    await withNetns(async (ns) => {
      const r = run(ns, 'keep-alive');
      await r.waitFor('ready', 10_000);
      await new Promise((res) => setTimeout(res, 700));
      expect(r.running()).toBe(true);
      ns.exec('ip', ['link', 'add', 'knpbye', 'type', 'veth', 'peer', 'name', 'knpbye1']);
      expect(await r.exited(5_000)).toEqual({ code: 0, signal: null });
    });
  });

  it('monitors dropped while running, stopped or never started survive garbage collection', async () => {
    const r = await ranToEnd('gc', ['--expose-gc']);
    expect(r.stdout).toContain('ok');
    expect(r.stderr).toBe('');
  });

  it("a batch callback that throws is the program's uncaught exception", async () => {
    const r = await ranToEnd('throwing-callback');
    expect(r.stdout).toContain('uncaught thrown by the batch callback');
  });

  it('a worker that exits from inside a delivery ends with its own code, and the process goes on', async () => {
    const r = await ranToEnd('worker-exit-in-delivery');
    expect(r.stdout).toContain('worker exit-in-delivery exit 3');
    expect(r.stdout).toContain('ok');
    expect(r.stderr).toBe('');
  });

  it('a worker thread with a running monitor terminates or exits cleanly', async () => {
    const r = await ranToEnd('worker');
    expect(r.stdout).toContain('worker terminate exit 1');
    expect(r.stdout).toContain('worker natural-exit exit 0');
    expect(r.stdout).toContain('ok');
  });
});

// bench:sync's floor: spawn → the agent's three WatchLists read to their end,
// by a child that boots with the agent's node flags and parses nothing
// (bench/list-floor.cjs). Added to the kernel's own time for the cold sync it
// is the least any agent could take from spawn to rules in the kernel on this
// machine at this moment: the ruleset is rendered from every object, so no
// transaction of it (a first start's stages included) can reach the kernel
// before every object has arrived. `cold_over_kernel` cannot go below
// `floor_over_kernel` here; the difference is the agent's own work.

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { serviceProxySelector } from '../src/k8s/well-known.ts';
import { imageNodeFlags } from './agent-child.ts';
import { NODE_NAME } from './sync-cluster.ts';

const CHILD = fileURLToPath(new URL('./list-floor.cjs', import.meta.url));

export interface ListFloor {
  /** Spawn → the child's first line of code (node's own boot), ms. */
  bootMs: number;
  /** Spawn → all three lists read, ms. */
  listedMs: number;
  bytes: number;
  runs: number;
  /** Children stopped at their timeout and started again (each said where it stalled, on stderr). */
  retried: number;
}

/** Times a child is started again after its timeout, per run, before the bench gives up. */
const RETRIES = 2;

/**
 * How long a child that was sent SIGTERM, or that has written its result,
 * gets to exit before it is killed. Node can deadlock in process.exit()
 * (nodejs/node#54918: the main thread joins the platform's workers while one
 * of them, compiling with Maglev, waits for the main thread to collect): the
 * one floor child of ~40 that "stalled" had written its result and sat in
 * exit, SIGTERM's handler never ran, and the bench waited on it for good.
 */
const EXIT_GRACE_MS = 1_000;

type Child = Omit<ListFloor, 'runs' | 'retried'>;

/**
 * One child: its result as soon as it has written it (whether or not it then
 * exits); past `timeoutMs` it is sent SIGTERM, and what it then says of its
 * streams ends the error.
 */
function once(kubeconfig: string, timeoutMs: number, script: string): Promise<Child> {
  const spawnedAt = Date.now();
  // spawn, not execFile: execFile drops a child's output once its timeout kills it.
  const child = spawn(process.execPath, [...imageNodeFlags(), script, kubeconfig, NODE_NAME, serviceProxySelector()]);
  let stdout = '';
  let stderr = '';
  let timedOut = false;
  const killLater = () => setTimeout(() => child.kill('SIGKILL'), EXIT_GRACE_MS).unref();
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGTERM');
    killLater();
  }, timeoutMs);
  return new Promise((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      const end = stdout.indexOf('\n');
      if (end < 0 || timedOut) return;
      clearTimeout(timer);
      const r = JSON.parse(stdout.slice(0, end)) as { startedAt: number; listedAt: number; bytes: number };
      resolve({ bootMs: r.startedAt - spawnedAt, listedMs: r.listedAt - spawnedAt, bytes: r.bytes });
      killLater();
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0 && stdout.includes('\n')) return;
      const how = `exit ${code}, signal ${signal}, after ${Date.now() - spawnedAt} ms${timedOut ? ', stopped at its timeout' : ''}`;
      reject(Object.assign(new Error(`list floor child (${how}): ${stderr.trim()}`), { timedOut }));
    });
  });
}

/**
 * The quickest of `runs` children (a floor: the least the machine allowed).
 * `script` is the child (list-floor.cjs; a test's stand-in). A child stopped
 * at its timeout is started again, up to RETRIES times a run (its stderr says
 * which streams it was waiting on); any other failure ends the measurement.
 */
export async function measureListFloor(kubeconfig: string, runs: number, timeoutMs: number, script = CHILD): Promise<ListFloor> {
  let best: Child | undefined;
  let retried = 0;
  for (let i = 0; i < runs; i++) {
    for (let attempt = 0; ; attempt++) {
      try {
        const r = await once(kubeconfig, timeoutMs, script);
        if (!best || r.listedMs < best.listedMs) best = r;
        break;
      } catch (e) {
        if (!(e as { timedOut?: boolean }).timedOut || attempt === RETRIES) throw e;
        retried++;
        console.error(`  floor child stopped at its timeout, started again: ${(e as Error).message.trim()}`);
      }
    }
  }
  return { ...best!, runs, retried };
}

// bench:sync's floor: spawn → the agent's three WatchLists read to their end,
// by a child that boots with the agent's node flags and parses nothing
// (bench/list-floor.cjs). Added to the kernel's own time for the cold sync it
// is the least any agent could take from spawn to rules in the kernel on this
// machine at this moment: a batch is one sendmsg, so the kernel cannot begin
// before every object has arrived. `cold_over_kernel` cannot go below
// `floor_over_kernel` here; the difference is the agent's own work.

import { execFile } from 'node:child_process';
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
}

function once(kubeconfig: string, timeoutMs: number): Promise<Omit<ListFloor, 'runs'>> {
  const spawnedAt = Date.now();
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [...imageNodeFlags(), CHILD, kubeconfig, NODE_NAME, serviceProxySelector()],
      { timeout: timeoutMs, maxBuffer: 1 << 20 },
      (err, stdout, stderr) => {
        if (err)
          return reject(
            new Error(
              `list floor child (exit ${err.code}, signal ${err.signal}, after ${Date.now() - spawnedAt} ms): ${err.message} ${stderr}`,
            ),
          );
        const r = JSON.parse(stdout) as { startedAt: number; listedAt: number; bytes: number };
        resolve({ bootMs: r.startedAt - spawnedAt, listedMs: r.listedAt - spawnedAt, bytes: r.bytes });
      },
    );
  });
}

/** The quickest of `runs` children (a floor: the least the machine allowed). */
export async function measureListFloor(kubeconfig: string, runs: number, timeoutMs: number): Promise<ListFloor> {
  let best: Omit<ListFloor, 'runs'> | undefined;
  for (let i = 0; i < runs; i++) {
    const r = await once(kubeconfig, timeoutMs);
    if (!best || r.listedMs < best.listedMs) best = r;
  }
  return { ...best!, runs };
}

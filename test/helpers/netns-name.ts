// How createNetns names a namespace: `<prefix>-<pid>-<6 hex>`, after the test
// process that made it, so that the sweep (netns-sweep.ts) can tell whether
// that process is gone. Its own module: the sweep runs in vitest's main
// process, which must not import netns.ts (that installs exit and signal
// handlers on import).

import { randomBytes } from 'node:crypto';

const NAME = /^([a-z0-9-]+)-(\d+)-[0-9a-f]{6}$/;

export function netnsName(prefix: string, pid = process.pid, suffix = randomBytes(3).toString('hex')): string {
  return `${prefix}-${pid}-${suffix}`;
}

/** The prefix and creating pid of a name netnsName made; undefined for any other name. */
export function parseNetnsName(name: string): { prefix: string; pid: number } | undefined {
  const m = NAME.exec(name);
  return m ? { prefix: m[1]!, pid: Number(m[2]) } : undefined;
}

// Namespaces left by test processes that died. createNetns names each
// namespace after the process that made it and deletes it when the test
// ends, also when the test fails; only a process that is killed or crashes
// (a segfault in the addon, an OOM kill) cannot. The test run sweeps those
// before and after itself, and only those: a name from createNetns whose
// process is gone. A running process's namespaces, and anything named
// otherwise, are never touched.

import { execFileSync } from 'node:child_process';
import { parseNetnsName } from './netns-name.ts';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it exists, under another user.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The namespaces `ip netns list` shows. */
export function listNetns(): string[] {
  return execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
    .split('\n')
    .map((l) => l.split(' ')[0]!)
    .filter(Boolean);
}

/** Deletes the namespaces whose creating test process is gone; returns their names. */
export function sweepOrphanNetns(): string[] {
  const swept: string[] = [];
  for (const name of listNetns()) {
    // createNetns's names only, and of its knp prefixes only.
    const ours = parseNetnsName(name);
    if (!ours?.prefix.startsWith('knp') || alive(ours.pid)) continue;
    execFileSync('ip', ['netns', 'del', name]);
    swept.push(name);
  }
  return swept;
}

// Around the whole run: namespaces that crashed test processes left behind
// are deleted (see helpers/netns-sweep.ts), and said so, since each one means
// a test process died.

import { sweepOrphanNetns } from './helpers/netns-sweep.ts';

function sweep(when: string): void {
  if (process.getuid?.() !== 0) return;
  const swept = sweepOrphanNetns();
  if (swept.length > 0)
    console.warn(`${when}: deleted ${swept.length} network namespace(s) left by test processes that died: ${swept.join(', ')}`);
}

export function setup(): void {
  sweep('before the tests');
}

export function teardown(): void {
  sweep('after the tests');
}

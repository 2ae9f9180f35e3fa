// The sweep deletes only namespaces named by createNetns whose process is gone.
import { spawnSync, execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { netnsName } from './netns-name.ts';
import { listNetns, sweepOrphanNetns } from './netns-sweep.ts';

const made: string[] = [];
afterEach(() => {
  for (const n of made.splice(0)) if (listNetns().includes(n)) execFileSync('ip', ['netns', 'del', n]);
});

function add(name: string): string {
  execFileSync('ip', ['netns', 'add', name]);
  made.push(name);
  return name;
}

describe('sweepOrphanNetns', () => {
  it("deletes a test namespace whose process is gone, keeps a live process's and foreign names", () => {
    // A pid that existed and has exited.
    const dead = spawnSync('true').pid!;
    const orphan = add(netnsName('knp-sweep', dead, 'a1b2c3'));
    const live = add(netnsName('knp-sweep', process.pid, 'a1b2c3'));
    const foreign = add(netnsName('other', dead, 'a1b2c3'));
    const swept = sweepOrphanNetns();
    expect(swept).toContain(orphan);
    expect(swept).not.toContain(live);
    expect(swept).not.toContain(foreign);
    const left = listNetns();
    expect(left).not.toContain(orphan);
    expect(left).toContain(live);
    expect(left).toContain(foreign);
  });
});

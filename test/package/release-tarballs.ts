// The release tarballs (npm run release:pack) for the package tests, packed
// once per test run: the release test and the image test both use them, and
// may run at the same time in two workers. A directory made with mkdir is the
// lock (atomic); a marker naming the vitest process says this run packed them.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { packageRoot } from '../../src/package-root.ts';

export const releaseDir = join(packageRoot, 'release');

export interface ReleaseTarballs {
  main: string;
  /** By platform package directory name, e.g. linux-x64-gnu. */
  platforms: Record<string, string>;
}

function listTarballs(): ReleaseTarballs {
  const files = readdirSync(releaseDir).filter((f) => f.endsWith('.tgz'));
  const platforms: Record<string, string> = {};
  let main: string | undefined;
  for (const f of files) {
    const m = /^kube-nft-proxy-(linux-[a-z0-9]+-gnu)-\d/.exec(f);
    if (m) platforms[m[1]!] = join(releaseDir, f);
    else main = join(releaseDir, f);
  }
  if (!main) throw new Error(`no main tarball in ${releaseDir}`);
  return { main, platforms };
}

/** Runs `npm run release:pack` unless this test run already did; returns the tarballs. */
export async function ensureRelease(): Promise<ReleaseTarballs> {
  mkdirSync(releaseDir, { recursive: true });
  const lock = join(releaseDir, '.lock');
  const marker = join(releaseDir, '.packed-by');
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // A run killed while packing leaves its lock: ten minutes is past any pack.
      if (Date.now() - statSync(lock, { throwIfNoEntry: false })!.mtimeMs > 600_000) rmdirSync(lock);
      await sleep(500);
    }
  }
  try {
    if (!existsSync(marker) || readFileSync(marker, 'utf8') !== String(process.ppid)) {
      execFileSync('npm', ['run', '--silent', 'release:pack'], { cwd: packageRoot, stdio: ['ignore', 'pipe', 'pipe'], timeout: 600_000 });
      writeFileSync(marker, String(process.ppid));
    }
    return listTarballs();
  } finally {
    rmdirSync(lock);
  }
}

/** What the addon exports, sorted: every build of it (local, platform packages, arm64) must show the same. */
export const ADDON_EXPORTS = [
  'BatchStream',
  'LinkMonitor',
  'allocateBatch',
  'check',
  'commit',
  'conntrackClean',
  'conntrackCreate',
  'elementsPerMessage',
  'exitWatchdog',
  'generation',
  'list',
  'tableUserdata',
  'trimMemory',
];

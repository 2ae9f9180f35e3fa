// `npm run release:pack`: every tarball a release publishes, in release/:
// one prebuilt platform package per entry of PLATFORMS (built by
// scripts/build-platform-package.sh), and the main package, whose
// package.json names them as optionalDependencies pinned to its version.
// Prints one line per tarball with its size.
//
// The optionalDependencies are added here, to the packed package.json only:
// in the source tree they would name packages that are not on the registry
// before a release, which npm ci refuses as a lock file out of sync.
//
//   node scripts/release-pack.ts            all platforms
//   node scripts/release-pack.ts x64        only the main package and linux-x64-gnu

import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot as root } from '../src/package-root.ts';

/** The platform packages a release publishes: @kube-nft-proxy/linux-<arch>-gnu. */
export const PLATFORMS = ['x64', 'arm64'] as const;

const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
const only = process.argv.slice(2);
const wanted = only.length ? PLATFORMS.filter((a) => only.includes(a)) : [...PLATFORMS];

const out = join(root, 'release');
const stage = join(out, 'stage');
mkdirSync(out, { recursive: true });
for (const f of readdirSync(out)) if (f.endsWith('.tgz')) rmSync(join(out, f));
rmSync(stage, { recursive: true, force: true });
mkdirSync(stage);

const run = (cmd: string, args: string[], cwd = root) =>
  execFileSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
for (const arch of wanted) {
  run('bash', ['scripts/build-platform-package.sh', arch]);
  run('npm', ['pack', '--silent', '--pack-destination', out, join(out, 'platform', `linux-${arch}-gnu`)]);
}

// The main package: npm pack runs its prepack (the TypeScript build), then the
// packed package.json gains the optionalDependencies and is packed again as is.
const packed = run('npm', ['pack', '--silent', '--pack-destination', stage]).trim().split('\n').pop()!;
run('tar', ['-xzf', join(stage, packed), '-C', stage]);
rmSync(join(stage, packed));
const manifestPath = join(stage, 'package', 'package.json');
const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as Record<string, unknown>;
manifest.optionalDependencies = Object.fromEntries(PLATFORMS.map((a) => [`@kube-nft-proxy/linux-${a}-gnu`, version]));
writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
run('npm', ['pack', '--silent', '--ignore-scripts', '--pack-destination', out, join(stage, 'package')]);
rmSync(stage, { recursive: true, force: true });

for (const f of readdirSync(out)
  .filter((f) => f.endsWith('.tgz'))
  .sort()) {
  console.log(`${f}\t${(statSync(join(out, f)).size / 1024).toFixed(0)} KiB`);
}

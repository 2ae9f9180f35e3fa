// `npm run release:pack`: every tarball a release publishes, in release/:
// the main package (TypeScript compiled by its prepack) and one prebuilt
// platform package per entry of optionalDependencies, each built by
// scripts/build-platform-package.sh. Prints one line per tarball with its size.
//
//   node scripts/release-pack.ts            all platforms
//   node scripts/release-pack.ts x64        only the main package and linux-x64-gnu

import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot as root } from '../src/package-root.ts';

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string; optionalDependencies?: Record<string, string> };
const platforms = Object.keys(pkg.optionalDependencies ?? {}).map((name) => {
  const m = /^@kube-nft-proxy\/linux-(x64|arm64)-gnu$/.exec(name);
  if (!m) throw new Error(`unexpected optional dependency ${name}`);
  if (pkg.optionalDependencies![name] !== pkg.version) throw new Error(`${name} must be pinned to ${pkg.version}`);
  return { name, arch: m[1]! };
});
const only = process.argv.slice(2);
const wanted = only.length ? platforms.filter((p) => only.includes(p.arch)) : platforms;

const out = join(root, 'release');
mkdirSync(out, { recursive: true });
for (const f of readdirSync(out)) if (f.endsWith('.tgz')) rmSync(join(out, f));

const run = (cmd: string, args: string[]) => execFileSync(cmd, args, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
for (const p of wanted) run('bash', ['scripts/build-platform-package.sh', p.arch]);
// The main package: its prepack compiles dist/; then the platform packages as built.
run('npm', ['pack', '--silent', '--pack-destination', out]);
for (const p of wanted) run('npm', ['pack', '--silent', '--pack-destination', out, join(out, 'platform', p.name.split('/')[1]!)]);

for (const f of readdirSync(out).filter((f) => f.endsWith('.tgz')).sort()) {
  console.log(`${f}\t${(statSync(join(out, f)).size / 1024).toFixed(0)} KiB`);
}

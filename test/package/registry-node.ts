// Node binaries for the package tests, from the npm registry's
// node-linux-<arch> packages (the registry is the only download there is
// here), each fetched once into the image cache that scripts/build-image.sh
// keeps its own downloads in.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../src/package-root.ts';

export const imageCache = process.env.KNP_IMAGE_CACHE ?? join(packageRoot, '.image-cache');

/** The path of `node` for that architecture and version, fetched and unpacked on first use. */
export function registryNode(arch: 'x64' | 'arm64', version: string): string {
  const name = `node-linux-${arch}`;
  const dir = join(imageCache, `${name}-${version}`);
  const node = join(dir, 'package/bin/node');
  if (!existsSync(node)) {
    mkdirSync(dir, { recursive: true });
    execFileSync('npm', ['pack', '--silent', `${name}@${version}`], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 });
    execFileSync('tar', ['-xzf', `${name}-${version}.tgz`, 'package/bin/node'], { cwd: dir });
  }
  return node;
}

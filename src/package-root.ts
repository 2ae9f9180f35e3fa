// The package's own directory, wherever this module runs from: src/ under
// node's type stripping (development, tests), dist/src/ once compiled (the
// library) or dist/bundle/ (the installed bin and the container image). Files
// that ship beside package.json (build/, package.json itself) are found from
// here, never by a fixed number of "..", which is right for only one of those
// layouts.

import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findPackageRoot(from: string): string {
  for (let dir = from; ; ) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`kube-nft-proxy: no package.json above ${from}`);
    dir = parent;
  }
}

/** The directory holding kube-nft-proxy's package.json. */
export const packageRoot: string = findPackageRoot(dirname(fileURLToPath(import.meta.url)));

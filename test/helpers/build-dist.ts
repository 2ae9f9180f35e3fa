// `npm run build` (tsc -p tsconfig.build.json), what prepack and the image's
// build run: for tests and benchmarks of the package as shipped (bin/ over
// the compiled dist/).

import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { packageRoot } from '../../src/package-root.ts';

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

/** Compiles src/ into dist/; throws with tsc's diagnostics when it fails. */
export function buildDist(): void {
  try {
    execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], {
      cwd: packageRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 180_000,
    });
  } catch (e) {
    // tsc writes its errors to stdout, which execFileSync's message leaves out.
    const { stdout, stderr } = e as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(`tsc -p tsconfig.build.json failed:\n${String(stdout ?? '')}${String(stderr ?? '')}`, { cause: e });
  }
}

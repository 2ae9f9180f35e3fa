// `npm run build` (tsc, then the command's bundle), what prepack and the
// image's build run: for tests and benchmarks of the package as shipped
// (bin/ over dist/).

import { execFileSync } from 'node:child_process';
import { packageRoot } from '../../src/package-root.ts';

/** Builds dist/ as `npm run build` does; throws with the build's diagnostics when it fails. */
export function buildDist(): void {
  try {
    execFileSync('npm', ['run', '-s', 'build'], {
      cwd: packageRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 180_000,
    });
  } catch (e) {
    // tsc writes its errors to stdout, which execFileSync's message leaves out.
    const { stdout, stderr } = e as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(`npm run build failed:\n${String(stdout ?? '')}${String(stderr ?? '')}`, { cause: e });
  }
}

// What importing one of our modules loads from node_modules, seen from a fresh
// node process (the tests' own process has loaded everything already).

import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { packageRoot } from '../../src/package-root.ts';

/** The CommonJS files of dependencies that importing `entry` (a path in the package) loads, as `<package>/<path>`. */
export function dependencyFilesLoadedBy(entry: string): string[] {
  const script = `
    import { createRequire } from 'node:module';
    await import(${JSON.stringify(join(packageRoot, entry))});
    const loaded = Object.keys(createRequire(import.meta.url).cache).filter((k) => k.includes('/node_modules/'));
    process.stdout.write(JSON.stringify(loaded.map((k) => k.slice(k.lastIndexOf('/node_modules/') + '/node_modules/'.length))));`;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as string[];
}

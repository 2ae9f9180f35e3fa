// What importing one of our modules loads, seen from a fresh node process
// (the tests' own process has loaded everything already).

import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { packageRoot } from '../../src/package-root.ts';

/**
 * Imports `entry` (a path in the package) in a fresh node, runs `use` (a
 * statement with the module as `m`), then returns what `report` (an
 * expression run there) gives, as JSON.
 */
function afterImportIn<T>(entry: string, report: string, use = ''): T {
  const script = `
    const m = await import(${JSON.stringify(join(packageRoot, entry))});
    ${use};
    process.stdout.write(JSON.stringify(${report}));`;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as T;
}

/** The CommonJS files of dependencies that importing `entry` (and running `use`, see afterImportIn) loads, as `<package>/<path>`. */
export function dependencyFilesLoadedBy(entry: string, use = ''): string[] {
  return afterImportIn(
    entry,
    `Object.keys((await import('node:module')).createRequire(import.meta.url).cache).filter((k) => k.includes('/node_modules/'))
      .map((k) => k.slice(k.lastIndexOf('/node_modules/') + '/node_modules/'.length))`,
    use,
  );
}

/** Node's own modules that importing `entry` loads (process.moduleLoadList). */
export function builtinsLoadedBy(entry: string): string[] {
  return afterImportIn(entry, 'process.moduleLoadList');
}

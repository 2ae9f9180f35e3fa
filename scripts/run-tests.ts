// The project's test command: runs vitest with its JSON reporter and prints the
// closing line CI reads, `N passed, N failed`, counted from the report itself.
// Skipped or todo tests are counted separately and never as passes.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dir = mkdtempSync(join(tmpdir(), 'knp-test-'));
const report = join(dir, 'report.json');
const args = ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...process.argv.slice(2)];
const run = spawnSync('npx', args, { stdio: 'inherit' });

let passed = 0;
let failed = 0;
let skipped = 0;
try {
  const json = JSON.parse(readFileSync(report, 'utf8')) as {
    testResults: Array<{ status: string; message?: string; name: string; assertionResults: Array<{ status: string }> }>;
  };
  for (const file of json.testResults) {
    let failedHere = 0;
    for (const t of file.assertionResults) {
      if (t.status === 'passed') passed++;
      else if (t.status === 'failed') failedHere++;
      else skipped++;
    }
    // A file that failed without a failing test (it did not load, or a beforeAll
    // threw and its tests were skipped) must still count as a failure.
    if (file.status === 'failed' && failedHere === 0) {
      failedHere = 1;
      console.error(`file failed outside its tests: ${file.name}\n${file.message ?? ''}`);
    }
    failed += failedHere;
  }
} catch (e) {
  console.error(`could not read the vitest report: ${(e as Error).message}`);
  failed++;
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const code = run.status === 0 && failed === 0 && passed > 0 ? 0 : 1;
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(code);

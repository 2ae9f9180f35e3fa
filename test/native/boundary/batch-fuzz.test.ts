// Fuzzing the native boundary: 10,000 batches with 1-4 random bytes changed
// and 6,000 structure-aware mutations (lengths, counts, ids, types, kinds,
// repeated, dropped, moved and resized attributes, renamed expressions,
// repeated and dropped records) of valid batches from the real encoder, from
// fixed seeds. A child process checks each one (allow-list and libnftnl's message building) and commits
// every 4th that passes into a namespace; it must survive every case. In CI
// the child loads the ASan/UBSan build (KNP_FUZZ_ADDON, see run-batches.ts),
// so a read past a buffer is a death too, not only an abort.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { kernel } from '../kernel-helpers.ts';
import { fuzzSeeds, makeCase } from './fuzz-cases.ts';
import { mapBatch } from './mutate.ts';
import { deathOf, runBatches, sanitizedAddon, sanitizerEnv } from './run-batches.ts';

const RANDOM_CASES = 10_000;
const STRUCTURED_CASES = 6_000;
const BASE_SEED = 0x6b6e70;
const COMMIT_EVERY = 4;
const RUNNER = fileURLToPath(new URL('./fuzz-runner.ts', import.meta.url));

describe('the native boundary under mutated batches', () => {
  const seeds = fuzzSeeds();

  it('every seed is a valid batch: it maps, passes check and builds', () => {
    expect(seeds.length).toBeGreaterThan(80);
    for (const s of seeds) mapBatch(s);
    const { ns } = kernel();
    const run = runBatches(seeds, ns.path, 0);
    expect(deathOf(run, seeds.length)).toBeUndefined();
    expect(run.lines.map((l) => l.check)).toEqual(seeds.map(() => ({ ok: true, failures: [] })));
  });

  it(`${RANDOM_CASES} random and ${STRUCTURED_CASES} structure-aware mutations: the process survives every one`, () => {
    const { ns } = kernel();
    const dir = mkdtempSync(join(tmpdir(), 'knp-fuzz-'));
    try {
      const file = join(dir, 'seeds.bin');
      writeFileSync(file, Buffer.concat(seeds.flatMap((s) => [Buffer.from(Uint32Array.of(s.length).buffer), s])));
      const addon = sanitizedAddon();
      // CI runs this against the sanitizer build (.ci/run sets KNP_FUZZ_ADDON); a plain build there would hide reads past buffers.
      if (process.env.CI) expect(addon, 'KNP_FUZZ_ADDON (the ASan/UBSan addon) in CI').toBeDefined();
      const args = [RUNNER, file, ns.path, String(COMMIT_EVERY), String(RANDOM_CASES), String(STRUCTURED_CASES), String(BASE_SEED)];
      const run = spawnSync(process.execPath, args, {
        env: addon ? sanitizerEnv(addon) : process.env,
        encoding: 'utf8',
        maxBuffer: 1 << 26,
        timeout: 170_000,
      });
      const lines = (run.stdout ?? '').trim().split('\n');
      const summary = lines.at(-1)?.startsWith('{')
        ? (JSON.parse(lines.at(-1)!) as { done: number; tally: Record<string, number> })
        : undefined;
      const total = RANDOM_CASES + STRUCTURED_CASES;
      const report = /ERROR: AddressSanitizer|runtime error:|libnftnl: attribute/.exec(run.stderr ?? '');
      if (run.status !== 0 || summary?.done !== total || report) {
        const last = lines.filter((l) => l.startsWith('case ')).at(-1);
        const i = last ? Number(last.slice(5)) : -1;
        const what = i >= 0 ? makeCase(seeds, seeds.map(mapBatch), RANDOM_CASES, BASE_SEED, i).what : 'before the first case';
        expect.fail(
          `the child ${run.signal ? `died of ${run.signal}` : `exited with ${run.status}`} at case ${i} ` +
            `(${what})${addon ? ' under ASan/UBSan' : ''}:\n${(run.stderr ?? '').slice(-4000)}`,
        );
      }
      const tally = summary!.tally;
      console.log(`fuzz${addon ? ' (ASan/UBSan)' : ''}: ${total} cases, ${JSON.stringify(tally)}`);
      const sum = (prefix: string) =>
        Object.entries(tally)
          .filter(([k]) => k.startsWith(prefix))
          .reduce((n, [, v]) => n + v, 0);
      expect(sum('check: ')).toBe(total);
      expect(tally['check: malformed failure'] ?? 0).toBe(0);
      expect(tally['check: malformed refusal'] ?? 0).toBe(0);
      // The campaign reaches every stage: refusals, batches that pass, commits the kernel takes and refuses.
      expect(tally['check: refused ERR_NFT_BATCH_INVALID']).toBeGreaterThan(1000);
      expect(tally['check: passed']).toBeGreaterThan(1000);
      expect(tally['commit: applied']).toBeGreaterThan(50);
      expect(tally['commit: kernel failure']).toBeGreaterThan(50);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});

// Runs batches through the addon in a child process (batch-runner.ts), so
// that an abort, a crash or a sanitizer report is a failed test, not a dead
// test worker. With KNP_FUZZ_ADDON naming the ASan/UBSan build of the addon
// (npm run build:native:asan), the child loads that one with the sanitizer
// runtimes preloaded and stops at the first report.

import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type Outcome =
  | { ok: true; failures: Array<{ index: number; errno: number; origin: string }> }
  | { ok: false; code: string; index: number | undefined; message: string };

export interface BatchLine {
  i: number;
  check: Outcome;
  commit?: Outcome;
}

export interface RunResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  lines: BatchLine[];
  /** Batches the child finished (its last line), or -1 when it did not get to the end. */
  done: number;
  sanitized: boolean;
}

const RUNNER = fileURLToPath(new URL('./batch-runner.ts', import.meta.url));

/** The sanitizer build named by KNP_FUZZ_ADDON, checked to exist; undefined when the variable is unset. */
export function sanitizedAddon(): string | undefined {
  const path = process.env.KNP_FUZZ_ADDON;
  if (!path) return undefined;
  if (!existsSync(path)) throw new Error(`KNP_FUZZ_ADDON names ${path}, which does not exist (npm run build:native:asan)`);
  return path;
}

export function sanitizerEnv(addon: string): NodeJS.ProcessEnv {
  const lib = (name: string) => execFileSync('gcc', [`-print-file-name=${name}`], { encoding: 'utf8' }).trim();
  return {
    ...process.env,
    KUBE_NFT_PROXY_ADDON: addon,
    LD_PRELOAD: `${lib('libasan.so')} ${lib('libubsan.so')}`,
    // Leaks are not what this looks for (V8 keeps memory to the end); every other report stops the child.
    ASAN_OPTIONS: 'detect_leaks=0:verify_asan_link_order=0:halt_on_error=1:abort_on_error=0:exitcode=86',
    UBSAN_OPTIONS: 'print_stacktrace=1:halt_on_error=1:exitcode=87',
  };
}

/**
 * Checks every batch (addon.check) and commits every `commitEvery`th one
 * that passes into the namespace at `netns` (0: none).
 */
export function runBatches(batches: readonly Uint8Array[], netns: string, commitEvery: number, timeoutMs = 120_000): RunResult {
  const dir = mkdtempSync(join(tmpdir(), 'knp-batches-'));
  try {
    const file = join(dir, 'batches.bin');
    const parts: Uint8Array[] = [];
    for (const b of batches) {
      const len = Buffer.alloc(4);
      len.writeUInt32LE(b.length);
      parts.push(len, b);
    }
    writeFileSync(file, Buffer.concat(parts));
    const addon = sanitizedAddon();
    const run = spawnSync(process.execPath, [RUNNER, file, netns, String(commitEvery)], {
      env: addon ? sanitizerEnv(addon) : process.env,
      encoding: 'utf8',
      maxBuffer: 1 << 28,
      timeout: timeoutMs,
    });
    const lines: BatchLine[] = [];
    let done = -1;
    for (const text of (run.stdout ?? '').split('\n')) {
      if (!text) continue;
      const parsed = JSON.parse(text) as BatchLine | { done: number };
      if ('done' in parsed) done = parsed.done;
      else lines.push(parsed);
    }
    return { status: run.status, signal: run.signal, stderr: run.stderr ?? '', lines, done, sanitized: addon !== undefined };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Why a run did not survive, or undefined when it did (exit 0, every batch answered, no sanitizer report). */
export function deathOf(run: RunResult, expected: number): string | undefined {
  const report = /ERROR: AddressSanitizer|runtime error:|libnftnl: attribute/.exec(run.stderr);
  if (run.status === 0 && run.done === expected && !report) return undefined;
  const last = run.lines.at(-1)?.i ?? -1;
  return (
    `the child ${run.signal ? `died of ${run.signal}` : `exited with ${run.status}`} after batch ${last} of ` +
    `${expected}:\n${run.stderr.slice(-4000)}`
  );
}

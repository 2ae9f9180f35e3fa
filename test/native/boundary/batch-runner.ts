// A child process that hands batches to the addon, so that a batch which
// aborts or corrupts the process fails a test instead of killing vitest.
//
//   node batch-runner.ts <batches file> <netns path> <commit every Nth accepted batch (0: never)>
//
// The batches file is a sequence of { u32 length (LE), bytes }. Each batch is
// checked (addon.check, no kernel); every Nth one that passes is also
// committed into the namespace. One JSON line per batch goes to stdout:
//   { i, check: outcome, commit?: outcome }, outcome = { ok: true, failures } | { ok: false, code, index, message }
// and a last line { done: n }. The addon is loaded the usual way, so
// KUBE_NFT_PROXY_ADDON may name the sanitizer build.

import { readFileSync, writeSync } from 'node:fs';
import { loadAddon, type NativeCommitResult } from '../../../src/native/addon.ts';

type Outcome =
  | { ok: true; failures: Array<{ index: number; errno: number; origin: string }> }
  | { ok: false; code: string; index: number | undefined; message: string };

function summarize(r: Pick<NativeCommitResult, 'failures'>): Outcome {
  return { ok: true, failures: r.failures.map((f) => ({ index: f.index, errno: f.errno, origin: f.origin })) };
}

function refusal(e: unknown): Outcome {
  const err = e as { code?: string; index?: number; message?: string };
  return { ok: false, code: String(err.code), index: err.index, message: String(err.message) };
}

const [file, netns, every] = process.argv.slice(2);
if (!file || !netns) throw new Error('usage: batch-runner.ts <batches file> <netns path> <commit every N>');
const commitEvery = Number(every ?? 0);
const addon = loadAddon();
const all = readFileSync(file);
let accepted = 0;
let i = 0;
for (let at = 0; at < all.length; i++) {
  const len = all.readUInt32LE(at);
  const batch = new Uint8Array(all.buffer, all.byteOffset + at + 4, len);
  at += 4 + len;
  const line: { i: number; check: Outcome; commit?: Outcome } = { i, check: { ok: false, code: '', index: undefined, message: '' } };
  try {
    line.check = summarize(addon.check(batch));
  } catch (e) {
    line.check = refusal(e);
  }
  if (line.check.ok && commitEvery > 0 && accepted++ % commitEvery === 0) {
    try {
      line.commit = summarize(await addon.commit(batch, { netns }));
    } catch (e) {
      line.commit = refusal(e);
    }
  }
  writeSync(1, `${JSON.stringify(line)}\n`);
}
writeSync(1, `${JSON.stringify({ done: i })}\n`);

// The fuzz test's child process: mutates seed batches (mutate.ts) and hands
// each to the addon; every Nth one that passes addon.check is committed into
// the namespace too, so that the kernel path and its answers are exercised.
//
//   node fuzz-runner.ts <seeds file> <netns path> <commit every N> <random cases> <structured cases> <base seed>
//
// Case i uses prng(base + i): any case can be made again alone. Before each
// case its index goes to stdout ("case i"), so that a death names the case;
// the last line is a JSON summary of the outcomes.

import { readFileSync, writeSync } from 'node:fs';
import { loadAddon } from '../../../src/native/addon.ts';
import { makeCase } from './fuzz-cases.ts';
import { mapBatch } from './mutate.ts';

const [file, netns, every, randomArg, structuredArg, baseArg] = process.argv.slice(2);
if (!file || !netns) throw new Error('usage: fuzz-runner.ts <seeds> <netns> <commit every> <random> <structured> <base seed>');
const commitEvery = Number(every);
const total = Number(randomArg) + Number(structuredArg);
const all = readFileSync(file);
const seeds: Uint8Array[] = [];
for (let at = 0; at < all.length; ) {
  const len = all.readUInt32LE(at);
  seeds.push(new Uint8Array(all.buffer, all.byteOffset + at + 4, len).slice());
  at += 4 + len;
}
const maps = seeds.map(mapBatch);
const addon = loadAddon();
const tally = new Map<string, number>();
const count = (key: string) => tally.set(key, (tally.get(key) ?? 0) + 1);
let passed = 0;

for (let i = 0; i < total; i++) {
  writeSync(1, `case ${i}\n`);
  const { bytes } = makeCase(seeds, maps, Number(randomArg), Number(baseArg), i);
  let ok = false;
  try {
    const r = addon.check(bytes);
    ok = r.failures.length === 0;
    count(ok ? 'check: passed' : 'check: builder failure');
    for (const f of r.failures) if (f.origin !== 'builder' || !(f.index >= 0)) count('check: malformed failure');
  } catch (e) {
    const err = e as { code?: string; index?: unknown };
    count(`check: refused ${err.code}`);
    if (err.index !== undefined && typeof err.index !== 'number') count('check: malformed refusal');
  }
  if (!ok || passed++ % commitEvery !== 0) continue;
  try {
    const r = await addon.commit(bytes, { netns });
    count(r.failures.length === 0 ? 'commit: applied' : `commit: ${r.failures[0]!.origin} failure`);
  } catch (e) {
    count(`commit: rejected ${(e as { code?: string }).code}`);
  }
}
writeSync(1, `${JSON.stringify({ done: total, tally: Object.fromEntries(tally) })}\n`);

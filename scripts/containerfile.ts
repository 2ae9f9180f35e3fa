// deploy/Containerfile's ENTRYPOINT and ENV, read in one place for the other
// ways the image is made or imitated: scripts/build-image.sh (umoci) and
// bench:sync's agent child (bench/agent-child.ts).
//
//   node scripts/containerfile.ts entrypoint    its argv, one per line
//   node scripts/containerfile.ts env           its KEY=value words, one per line

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageRoot } from '../src/package-root.ts';

const CONTAINERFILE = join(packageRoot, 'deploy', 'Containerfile');

function text(): string {
  return readFileSync(CONTAINERFILE, 'utf8');
}

/** The ENTRYPOINT's argv (exec form). */
export function containerfileEntrypoint(): string[] {
  const m = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(text());
  if (!m) throw new Error('deploy/Containerfile: no ENTRYPOINT in exec form');
  return JSON.parse(m[1]!) as string[];
}

/** The ENV lines' KEY=value words as [KEY, value], in order. */
export function containerfileEnv(): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const m of text().matchAll(/^ENV\s+(.+)$/gm)) {
    for (const kv of m[1]!.trim().split(/\s+/)) {
      const word = /^([A-Z_][A-Z0-9_]*)=(\S*)$/.exec(kv);
      if (!word) throw new Error(`deploy/Containerfile: ENV ${kv} is not KEY=value`);
      out.push([word[1]!, word[2]!]);
    }
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const what = process.argv[2];
  if (what !== 'entrypoint' && what !== 'env') {
    process.stderr.write('usage: node scripts/containerfile.ts entrypoint|env\n');
    process.exit(2);
  }
  const lines = what === 'entrypoint' ? containerfileEntrypoint() : containerfileEnv().map(([key, value]) => `${key}=${value}`);
  for (const line of lines) process.stdout.write(`${line}\n`);
}

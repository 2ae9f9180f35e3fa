// Reads a manifest file or directory into raw Kubernetes objects.
//
// A directory is read flat, as Kubernetes mounts a ConfigMap: entries whose
// names start with '.' (including the `..data` symlink and the timestamped
// `..2024_…` directories behind it) are skipped, and symlinked files are
// followed, so a symlink swap is seen as a change of content. A document that
// does not parse is reported and skipped; the rest of the file still loads.

import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

export interface ManifestProblem {
  file: string;
  /** 0-based document index in the file; -1 for the file itself. */
  document: number;
  reason: string;
}

export interface ManifestRead {
  objects: Record<string, unknown>[];
  problems: ManifestProblem[];
  files: string[];
}

const MANIFEST_EXT = /\.(ya?ml|json)$/i;

async function manifestFiles(path: string): Promise<string[]> {
  const st = await stat(path);
  if (!st.isDirectory()) return [path];
  const names = (await readdir(path)).filter((n) => !n.startsWith('.') && MANIFEST_EXT.test(n)).sort();
  const files: string[] = [];
  for (const n of names) {
    const full = join(path, n);
    try {
      if ((await stat(full)).isFile()) files.push(full);
    } catch {
      // A dangling symlink in the middle of a swap: it is gone or comes back with the next event.
    }
  }
  return files;
}

/** Parses multi-document YAML (JSON is YAML); expands `kind: List`. Pure. */
export function parseManifestText(file: string, text: string): { objects: Record<string, unknown>[]; problems: ManifestProblem[] } {
  const objects: Record<string, unknown>[] = [];
  const problems: ManifestProblem[] = [];
  const docs = parseAllDocuments(text);
  if (!Array.isArray(docs)) return { objects, problems };
  docs.forEach((doc, i) => {
    if (doc.errors.length > 0) {
      problems.push({ file, document: i, reason: doc.errors[0]!.message.split('\n')[0]! });
      return;
    }
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (e) {
      problems.push({ file, document: i, reason: (e as Error).message });
      return;
    }
    if (value === null || value === undefined) return;
    if (typeof value !== 'object' || Array.isArray(value)) {
      problems.push({ file, document: i, reason: 'document is not an object' });
      return;
    }
    const o = value as Record<string, unknown>;
    if (o.kind === 'List' || (typeof o.kind === 'string' && o.kind.endsWith('List') && Array.isArray(o.items))) {
      for (const item of (o.items as unknown[]) ?? []) {
        if (typeof item === 'object' && item !== null && !Array.isArray(item)) objects.push(item as Record<string, unknown>);
      }
    } else {
      objects.push(o);
    }
  });
  return { objects, problems };
}

export async function readManifests(path: string): Promise<ManifestRead> {
  const files = await manifestFiles(path);
  const objects: Record<string, unknown>[] = [];
  const problems: ManifestProblem[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (e) {
      problems.push({ file, document: -1, reason: (e as Error).message });
      continue;
    }
    const r = parseManifestText(file, text);
    objects.push(...r.objects);
    problems.push(...r.problems);
  }
  return { objects, problems, files };
}

// Checks the shape of src/: no import cycles (type-only imports included: a
// cycle of types is a cycle of layers all the same), and no source file past
// the line limit; and, over every source folder, no line past the formatter's
// width (the formatter cannot break a long string or comment, so it is
// checked here). Prints every finding; exits 1 if any.
//
//   node scripts/check-imports.ts [--max-lines 450] [--max-width 140]

import { type Dirent, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { packageRoot } from '../src/package-root.ts';

const maxLinesFlag = process.argv.indexOf('--max-lines');
const MAX_LINES = maxLinesFlag > 0 ? Number(process.argv[maxLinesFlag + 1]) : 450;
const maxWidthFlag = process.argv.indexOf('--max-width');
// The formatter's lineWidth in biome.jsonc.
const MAX_WIDTH = maxWidthFlag > 0 ? Number(process.argv[maxWidthFlag + 1]) : 140;
const WIDTH_DIRS = ['src', 'test', 'bench', 'scripts', 'bin', 'examples'];
const WIDTH_EXT = /\.(ts|js|mjs)$/;

const configPath = path.join(packageRoot, 'tsconfig.json');
const parsed = ts.getParsedCommandLineOfConfigFile(
  configPath,
  {},
  { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => console.error(d.messageText) },
);
if (!parsed) process.exit(2);
const srcDir = path.join(packageRoot, 'src') + path.sep;
const files = parsed.fileNames.filter((f) => f.startsWith(srcDir));

/** The src/ modules a file imports: static imports, re-exports and import() with a literal path. */
function importsOf(file: string): string[] {
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const specs: string[] = [];
  const visit = (n: ts.Node): void => {
    if ((ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier))
      specs.push(n.moduleSpecifier.text);
    else if (
      ts.isCallExpression(n) &&
      n.expression.kind === ts.SyntaxKind.ImportKeyword &&
      n.arguments[0] &&
      ts.isStringLiteral(n.arguments[0])
    )
      specs.push(n.arguments[0].text);
    ts.forEachChild(n, visit);
  };
  visit(sf);
  const out: string[] = [];
  for (const spec of specs) {
    const r = ts.resolveModuleName(spec, file, parsed!.options, ts.sys).resolvedModule;
    if (r?.resolvedFileName.startsWith(srcDir) && !r.isExternalLibraryImport) out.push(r.resolvedFileName);
  }
  return out;
}

const graph = new Map<string, string[]>();
for (const f of files) graph.set(f, importsOf(f));

// Tarjan's strongly connected components: every component of more than one
// module (or one importing itself) is a cycle.
let counter = 0;
const index = new Map<string, number>();
const low = new Map<string, number>();
const stack: string[] = [];
const onStack = new Set<string>();
const cycles: string[][] = [];
function connect(v: string): void {
  index.set(v, counter);
  low.set(v, counter);
  counter++;
  stack.push(v);
  onStack.add(v);
  for (const w of graph.get(v) ?? []) {
    if (!index.has(w)) {
      connect(w);
      low.set(v, Math.min(low.get(v)!, low.get(w)!));
    } else if (onStack.has(w)) {
      low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
  }
  if (low.get(v) === index.get(v)) {
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(component);
  }
}
for (const f of graph.keys()) if (!index.has(f)) connect(f);

const rel = (f: string): string => path.relative(packageRoot, f);
for (const c of cycles) console.log(`import cycle: ${c.map(rel).sort().join(', ')}`);

const long: [string, number][] = [];
for (const f of files) {
  const text = readFileSync(f, 'utf8');
  const lines = text.endsWith('\n') ? text.split('\n').length - 1 : text.split('\n').length;
  if (lines > MAX_LINES) long.push([rel(f), lines]);
}
for (const [f, n] of long) console.log(`over ${MAX_LINES} lines: ${f} (${n})`);

/** Every .ts/.js/.mjs file under dir, recursively (node_modules and build output skipped). */
function sourcesUnder(dir: string): string[] {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory() && e.name !== 'node_modules' && e.name !== 'build') out.push(...sourcesUnder(p));
    else if (e.isFile() && WIDTH_EXT.test(e.name)) out.push(p);
  }
  return out;
}

// Width in characters (code points), as the formatter counts them.
let wide = 0;
for (const f of WIDTH_DIRS.flatMap((d) => sourcesUnder(path.join(packageRoot, d))).sort()) {
  readFileSync(f, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      const width = [...line].length;
      if (width <= MAX_WIDTH) return;
      console.log(`over ${MAX_WIDTH} characters: ${rel(f)}:${i + 1} (${width})`);
      wide++;
    });
}

const modules = `${files.length} modules, ${[...graph.values()].reduce((n, l) => n + l.length, 0)} imports`;
console.log(
  `${modules}: ${cycles.length} cycles, ${long.length} files over ${MAX_LINES} lines, ${wide} lines over ${MAX_WIDTH} characters`,
);
process.exit(cycles.length > 0 || long.length > 0 || wide > 0 ? 1 : 0);

// The second half of `npm run build`: the command's modules, compiled by tsc
// into dist/src/, bundled into dist/bundle/ for bin/kube-nft-proxy.js to run.
// Node loads each module by itself (resolve, stat, read, compile, link): our
// ~130 ES modules and RxJS's 69 CommonJS files were ~120 ms of a start-up's
// 322-345 ms of module loading on the slowest of these machines (198-215 ms
// with the bundle). The library's exports stay dist/src/, module by module,
// for those who embed it.
//
// What the bundle leaves to node_modules, loaded as the package lays it out:
// - the dependencies but RxJS and pino: undici's and prom-client's parts are
//   required by path (src/streams/api/proxy-client.ts,
//   src/observability/prom-parts.ts), and client-node and yaml are imported
//   only by the runs that need them. pino is bundled although its transports
//   find their worker files beside its own modules (`__dirname`, which a
//   bundle has not): the command's logger writes to a stream and starts no
//   transport (src/observability/logger.ts). Loaded from node_modules, its ~20
//   files took 31-35 ms to require (bench/RESULTS.md has what bundling
//   it saved);
// - the modules the command imports when a run needs them (`import()`):
//   their own chunks, loaded then, as before.

import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, join, sep } from 'node:path';
import { build, type Plugin } from 'esbuild';
import { packageRoot } from '../src/package-root.ts';

/** Bundled rather than loaded from node_modules: no files of their own found at run time by what the command uses. */
const BUNDLED_DEPENDENCIES = new Set(['rxjs', 'pino']);

// The bundle is an ES module, and the CommonJS code bundled into it requires
// Node's built-ins: each file gets a `require` of its own.
const REQUIRE_BANNER = "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);";

// RxJS as ES modules: resolved for Node, RxJS is CommonJS, each of its files
// a function the bundle wraps and calls at import; its ES2015 build (the same
// code, in the same package) is hoisted into the bundle's own scope and
// shaken of what the agent never calls (bench/RESULTS.md has what it saved).
// Every path into RxJS is taken there, so that the bundle never holds two
// copies of a class it checks with instanceof.
const requireHere = createRequire(import.meta.url);
const rxjsAsModules: Plugin = {
  name: 'rxjs-as-modules',
  setup(b) {
    b.onResolve({ filter: /^rxjs(\/|$)/ }, (args) => {
      const commonJs = requireHere.resolve(args.path);
      const module = commonJs.replace(`${sep}dist${sep}cjs${sep}`, `${sep}dist${sep}esm${sep}`);
      if (module === commonJs || !existsSync(module)) throw new Error(`${args.path}: no ES module build beside ${commonJs}`);
      return { path: module };
    });
  },
};

const manifest = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
const outdir = join(packageRoot, 'dist', 'bundle');
const entry = join(outdir, 'cli.js');
const { outputFiles } = await build({
  entryPoints: [join(packageRoot, 'dist', 'src', 'cli.js')],
  outdir,
  write: false,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  banner: { js: REQUIRE_BANNER },
  external: Object.keys(manifest.dependencies).filter((d) => !BUNDLED_DEPENDENCIES.has(d)),
  plugins: [rxjsAsModules],
  logLevel: 'warning',
});

// Builds run side by side (the tests' own and a release's pack): each file is
// written in a directory of this build's own beside dist/bundle/ and renamed
// into it whole, the entry last, so that whatever reads dist/bundle/ meanwhile
// finds every chunk the entry it reads imports, and nothing half written (nor
// left by a build that died) is ever in it to be packed.
const staging = mkdtempSync(join(packageRoot, 'dist', '.bundle-'));
mkdirSync(outdir, { recursive: true });
try {
  for (const f of outputFiles.sort((a, b) => Number(a.path === entry) - Number(b.path === entry))) {
    const partial = join(staging, basename(f.path));
    writeFileSync(partial, f.contents);
    renameSync(partial, f.path);
  }
} finally {
  rmSync(staging, { recursive: true, force: true });
}
const built = new Set(outputFiles.map((f) => f.path));
for (const name of readdirSync(outdir)) {
  const path = join(outdir, name);
  // force: a build beside this one may have removed it first.
  if (!built.has(path)) rmSync(path, { force: true });
}

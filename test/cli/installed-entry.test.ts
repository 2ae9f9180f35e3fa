// The entry point an installed package and the container image run:
// bin/kube-nft-proxy.js over the bundle of dist/bundle/, not src/ under type
// stripping. Built modules sit one directory deeper (dist/src/, dist/bundle/),
// so anything found relative to a module (package.json, a local build of the
// addon under build/) must still be found from there.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { packageRoot as root } from '../../src/package-root.ts';
import { buildDist } from '../helpers/build-dist.ts';
import { createNetns } from '../helpers/netns.ts';

function bin(args: string[], cwd = root): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, ['bin/kube-nft-proxy.js', ...args], { cwd, encoding: 'utf8', timeout: 30_000 });
}

/** A copy of the package with bin/ and the bundle but neither dist/src/ nor src/: what runs must be the bundle. */
function bundleOnlyPackage(): string {
  const copy = mkdtempSync(join(tmpdir(), 'knp-bundle-only-'));
  for (const f of ['package.json', 'bin', 'dist/bundle']) cpSync(join(root, f), join(copy, f), { recursive: true });
  for (const d of ['node_modules', 'build']) symlinkSync(join(root, d), join(copy, d));
  return copy;
}

describe('the installed entry point (bin/ over dist/)', () => {
  beforeAll(() => {
    // What `npm run build` (prepack) does before the package is packed or the image is built.
    buildDist();
  }, 200_000);

  it('prints the version from package.json', () => {
    const { version } = JSON.parse(readFileSync(`${root}/package.json`, 'utf8')) as { version: string };
    const r = bin(['--version']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`kube-nft-proxy ${version}\n`);
  });

  it('carries RxJS once, from its ES module build (no CommonJS wrappers to run at import)', () => {
    const bundled = readdirSync(join(root, 'dist/bundle'))
      .map((f) => readFileSync(join(root, 'dist/bundle', f), 'utf8'))
      .join('\n');
    // esbuild names each module it takes in a comment (ES modules) or its __commonJS wrapper's key.
    expect(bundled).toContain('node_modules/rxjs/dist/esm/internal/Subject.js');
    expect(bundled).not.toContain('node_modules/rxjs/dist/cjs/');
  });

  it.each([
    ['the bundle', 'dist/bundle/cli.js'],
    ['the source', 'src/cli.ts'],
  ])('runs nothing when %s of the command is imported, and is the command when run', (_, module) => {
    const dir = mkdtempSync(join(tmpdir(), 'knp-import-cli-'));
    try {
      // Given `--version` as its own arguments, so that a module that ran the command on import says so.
      const importer = join(dir, 'importer.mjs');
      const imports = `const cli = await import(${JSON.stringify(join(root, module))});\n`;
      writeFileSync(importer, `${imports}process.stdout.write('imported: ' + typeof cli.runCommandLine + '\\n');\n`);
      const imported = spawnSync(process.execPath, [importer, '--version'], { encoding: 'utf8', timeout: 30_000 });
      expect(imported.stderr).toBe('');
      expect(imported.stdout).toBe('imported: function\n');
      const run = spawnSync(process.execPath, [module, '--version'], { cwd: root, encoding: 'utf8', timeout: 30_000 });
      expect(run.stdout).toMatch(/^kube-nft-proxy \S+\n$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    ['json', /^\{"level":30,"time":\d+,"pid":\d+,"name":"kube-nft-proxy",.*"msg":"starting kube-nft-proxy"\}$/],
    ['text', /^I\d{4} \d{2}:\d{2}:\d{2}\.\d{6} \d+ kube-nft-proxy\] "starting kube-nft-proxy" dryRun=true /],
  ])('logs in the %s format with the logger bundled into it', (format, firstLine) => {
    const r = bin(['--manifests', 'examples/', '--dry-run', '--hostname-override', 'node-a', `--logging-format=${format}`]);
    expect(r.status).toBe(0);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines[0]).toMatch(firstLine);
    expect(lines.some((l) => l.includes('synced nftables rules'))).toBe(true);
  });

  it('keeps no compiled code on disk (a corrupt code cache crashes V8 at start-up)', () => {
    // Node's default place, under the temporary directory (NODE_COMPILE_CACHE would switch the cache on by itself).
    const tmp = mkdtempSync(join(tmpdir(), 'knp-compile-cache-'));
    const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: tmp };
    delete env.NODE_COMPILE_CACHE;
    try {
      const r = spawnSync(process.execPath, ['bin/kube-nft-proxy.js', '--version'], { cwd: root, encoding: 'utf8', timeout: 30_000, env });
      expect(r.status).toBe(0);
      expect(readdirSync(tmp)).toEqual([]);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('is what the npm package carries, with the license, the native sources and no tests', () => {
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 60_000,
    });
    const files = new Set((JSON.parse(out) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path));
    const sources = JSON.parse(readFileSync(`${root}/native/sources.json`, 'utf8')) as {
      addon: string[];
      netlink: string[];
      glue: string[];
    };
    const needed = [
      'LICENSE',
      'README.md',
      'package.json',
      'bin/kube-nft-proxy.js',
      'dist/bundle/cli.js',
      'dist/src/index.js',
      'dist/src/index.d.ts',
      'dist/src/native/addon.js',
      'dist/src/package-root.js',
    ];
    needed.push(
      'binding.gyp',
      'native/sources.json',
      ...sources.addon,
      ...sources.netlink,
      ...sources.glue,
      'examples/services.yaml',
      'examples/library/render-text.mjs',
      'examples/library/run-agent.mjs',
      'examples/library/transaction.mjs',
    );
    expect(needed.filter((f) => !files.has(f))).toEqual([]);
    expect([...files].filter((f) => /^(test|bench|scripts|src)\//.test(f) || (f.endsWith('.ts') && !f.endsWith('.d.ts')))).toEqual([]);
  });

  it.each([
    ['the checkout', false],
    ['a package of the bundle alone', true],
  ])('loads the addon and removes our table from a namespace (cleanup), from %s', (_, bundleOnly) => {
    const cwd = bundleOnly ? bundleOnlyPackage() : root;
    const ns = createNetns('knp-bin');
    try {
      ns.exec('nft', ['-f', '-'], {
        input:
          'table ip kube-nft-proxy {\n  comment "managed by kube-nft-proxy (table format 1)"\n  chain services {\n  ' +
          '}\n}\ntable ip other {\n}\n',
      });
      const r = bin(['cleanup', `--netns=${ns.name}`], cwd);
      expect(r.stderr).not.toMatch(/addon|ERR_|missing/);
      expect(r.status).toBe(0);
      const tables = ns.nftJson().nftables.flatMap((o) => (o.table ? [`${o.table.family} ${o.table.name}`] : []));
      expect(tables).toEqual(['ip other']);
    } finally {
      ns.destroy();
      if (bundleOnly) rmSync(cwd, { recursive: true, force: true });
    }
  });
});

// What a release publishes (npm run release:pack) and what a user gets from it:
// the main tarball and one prebuilt platform package per optionalDependency,
// no install scripts anywhere; binaries that need no newer glibc than README
// states; both builds resolving their libraries beside themselves through
// their own architecture's loader (arm64 under qemu-user); and `npm install --ignore-scripts` of the tarballs into an empty
// project on a machine view without libnftnl and libmnl (hidden in a private
// mount namespace) giving a `npx kube-nft-proxy` that programs a namespace.

import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-root.ts';
import { eventually } from '../e2e/agent-process.ts';
import { createNetns, type NetNs } from '../helpers/netns.ts';
import { ensureRelease, releaseDir, type ReleaseTarballs } from './release-tarballs.ts';

/** The newest glibc symbol version the binaries may need; README's "Installing" states it. */
const GLIBC_MINIMUM = [2, 33];
/**
 * libstdc++ of GCC 11 (std::__throw_bad_array_new_length, which GCC 11+ emits
 * for array allocations): every distribution with glibc 2.33 ships it or newer.
 */
const GLIBCXX_MAXIMUM = [3, 4, 29];

const pkg = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string; scripts: Record<string, string> };

/** package.json as packed in a tarball. */
function packedManifest(tarball: string): Record<string, any> {
  return JSON.parse(execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' })) as Record<string, any>;
}

function compareVersions(a: number[], b: number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) - (b[i] ?? 0);
  return 0;
}

/** The newest version of each symbol-version namespace (GLIBC, GLIBCXX) an ELF file requires. */
function newestVersions(file: string): Record<string, number[]> {
  const out = execFileSync('readelf', ['-W', '--dyn-syms', file], { encoding: 'utf8' });
  const newest: Record<string, number[]> = {};
  for (const m of out.matchAll(/ UND .*@(GLIBC|GLIBCXX)_([0-9.]+)/g)) {
    const v = m[2]!.split('.').map(Number);
    if (!newest[m[1]!] || compareVersions(v, newest[m[1]!]!) > 0) newest[m[1]!] = v;
  }
  return newest;
}

const platformDir = (name: string) => join(releaseDir, 'platform', name);

describe('the release tarballs', () => {
  let tarballs: ReleaseTarballs;
  beforeAll(async () => {
    tarballs = await ensureRelease();
  }, 600_000);

  it('are the main package and one platform package per optionalDependency, pinned to the same version', () => {
    const optional = packedManifest(tarballs.main).optionalDependencies as Record<string, string>;
    expect(optional).toEqual({ '@kube-nft-proxy/linux-x64-gnu': pkg.version, '@kube-nft-proxy/linux-arm64-gnu': pkg.version });
    expect(Object.keys(tarballs.platforms).sort()).toEqual(['linux-arm64-gnu', 'linux-x64-gnu']);
    // Everything else in the packed package.json is the source tree's.
    expect(packedManifest(tarballs.main).scripts).toEqual(pkg.scripts);
    for (const f of [tarballs.main, ...Object.values(tarballs.platforms)]) {
      console.log(`${f.split('/').pop()}: ${(statSync(f).size / 1024).toFixed(0)} KiB`);
    }
  });

  it('carry no install script; the platform packages declare os, cpu and libc and ship the licences and where the sources are', () => {
    const main = packedManifest(tarballs.main);
    expect(Object.keys(main.scripts ?? {}).filter((s) => /^(pre|post)?install$/.test(s))).toEqual([]);
    // binding.gyp ships for builds from source; without this npm would run node-gyp on install.
    expect(main.gypfile).toBe(false);
    for (const [name, arch] of [
      ['linux-x64-gnu', 'x64'],
      ['linux-arm64-gnu', 'arm64'],
    ] as const) {
      const files = execFileSync('tar', ['-tzf', tarballs.platforms[name]!], { encoding: 'utf8' }).split('\n').filter(Boolean).sort();
      expect(files).toEqual(
        [
          'COPYING.libmnl',
          'COPYING.libnftnl',
          'LICENSE',
          'LICENSE.LGPL-2.1',
          'SOURCES.md',
          'kube_nft_proxy.node',
          'libmnl.so.0',
          'libnftnl.so.11',
          'package.json',
        ].map((f) => `package/${f}`),
      );
      const p = packedManifest(tarballs.platforms[name]!);
      expect({ name: p.name, version: p.version, os: p.os, cpu: p.cpu, libc: p.libc, scripts: p.scripts }).toEqual({
        name: `@kube-nft-proxy/${name}`,
        version: pkg.version,
        os: ['linux'],
        cpu: [arch],
        libc: ['glibc'],
        scripts: undefined,
      });
      const sources = readFileSync(join(platformDir(name), 'SOURCES.md'), 'utf8');
      expect(sources).toMatch(/snapshot\.debian\.org\/package\/libnftnl\/\d/);
      expect(sources).toMatch(/snapshot\.debian\.org\/package\/libmnl\/\d/);
      const rpath = execFileSync('readelf', ['-d', join(platformDir(name), 'kube_nft_proxy.node')], { encoding: 'utf8' });
      expect(rpath).toMatch(/\(RPATH\)\s+Library rpath: \[\$ORIGIN\]/);
    }
  });

  it(`need glibc ${GLIBC_MINIMUM.join('.')} at most, and libstdc++ of GCC 6`, () => {
    for (const name of Object.keys(tarballs.platforms)) {
      for (const f of readdirSync(platformDir(name)).filter((f) => /\.(node|so\.\d+)$/.test(f))) {
        const v = newestVersions(join(platformDir(name), f));
        console.log(`${name}/${f}: GLIBC_${v.GLIBC?.join('.')}${v.GLIBCXX ? `, GLIBCXX_${v.GLIBCXX.join('.')}` : ''}`);
        expect(v.GLIBC, f).toBeDefined();
        expect(compareVersions(v.GLIBC!, GLIBC_MINIMUM), `${name}/${f} GLIBC_${v.GLIBC!.join('.')}`).toBeLessThanOrEqual(0);
        if (v.GLIBCXX) expect(compareVersions(v.GLIBCXX, GLIBCXX_MAXIMUM), `${name}/${f}`).toBeLessThanOrEqual(0);
      }
    }
  });

  // What the dynamic loader does when Node dlopens the addon, done by the target's own ld.so
  // (arm64 under qemu-user): every library found, every symbol bound but N-API's, which Node provides.
  // (Loading, probing and committing on arm64: arm64-vm.test.ts, in a full VM; Node does not
  // start under Debian's qemu-user 7.2 here, and qemu-user refuses NETLINK_NETFILTER sockets.)
  it.each([
    ['linux-x64-gnu', [], '/lib64/ld-linux-x86-64.so.2'],
    [
      'linux-arm64-gnu',
      ['qemu-aarch64-static', '-E', 'LD_TRACE_LOADED_OBJECTS=1', '-E', 'LD_WARN=yes', '-E', 'LD_BIND_NOW=yes'],
      '/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1',
    ],
  ] as const)("%s: the loader finds libnftnl and libmnl beside the addon and binds every symbol but N-API's", (name, emulator, loader) => {
    const dir = platformDir(name);
    const node = join(dir, 'kube_nft_proxy.node');
    expect(execFileSync('file', ['-b', node], { encoding: 'utf8' })).toMatch(name.includes('arm64') ? /ARM aarch64/ : /x86-64/);
    const [cmd, ...args] = [...emulator, loader, node];
    const r = spawnSync(cmd!, args, {
      encoding: 'utf8',
      env: { ...process.env, QEMU_LD_PREFIX: '/usr/aarch64-linux-gnu', LD_TRACE_LOADED_OBJECTS: '1', LD_WARN: 'yes', LD_BIND_NOW: 'yes' },
      timeout: 60_000,
    });
    const out = r.stdout + r.stderr;
    expect(out).toContain(`libnftnl.so.11 => ${dir}/libnftnl.so.11`);
    expect(out).toContain(`libmnl.so.0 => ${dir}/libmnl.so.0`);
    expect(out).not.toMatch(/not found/);
    const undefinedSymbols = [...out.matchAll(/undefined symbol: (\S+)/g)].map((m) => m[1]!);
    expect(undefinedSymbols.length).toBeGreaterThan(20);
    expect(undefinedSymbols.filter((s) => !s.startsWith('napi_'))).toEqual([]);
  });
});

// Hides the system's libnftnl and libmnl in a private mount namespace (each
// file bind-mounted over by /dev/null), shows that they are gone, then runs the command.
const HIDE_LIBS = `set -e
for f in /usr/lib/*-linux-gnu/libnftnl.so* /usr/lib/*-linux-gnu/libmnl.so* /lib/*-linux-gnu/libnftnl.so* /lib/*-linux-gnu/libmnl.so*; do
  [ -e "$f" ] && [ ! -L "$f" ] && mount --bind /dev/null "$f"
done
echo "hidden libnftnl: $(cat /usr/lib/*-linux-gnu/libnftnl.so.11 2>/dev/null | wc -c) bytes" >&2
exec "$@"`;

describe('npm install --ignore-scripts of the release tarballs, on a machine without libnftnl and libmnl', () => {
  let project: string;
  let ns: NetNs | undefined;
  beforeAll(async () => {
    const tarballs = await ensureRelease();
    project = mkdtempSync(join(tmpdir(), 'knp-install-'));
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'empty-project', version: '1.0.0', private: true }));
    // The main package's dependencies come from the registry or npm's cache; ours from the tarballs.
    execFileSync(
      'npm',
      ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', tarballs.main, tarballs.platforms['linux-x64-gnu']!],
      {
        cwd: project,
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: 300_000,
      },
    );
  }, 900_000);
  afterAll(() => {
    ns?.destroy();
    if (project) rmSync(project, { recursive: true, force: true });
  });

  it('gives a working npx kube-nft-proxy that programs a namespace', async () => {
    ns = createNetns('knp-inst');
    const examples = join(project, 'node_modules/kube-nft-proxy/examples');
    const child = spawn(
      'unshare',
      [
        '--mount',
        '--propagation',
        'private',
        'sh',
        '-c',
        HIDE_LIBS,
        'hide-libs',
        'npx',
        '--no-install',
        'kube-nft-proxy',
        `--manifests=${examples}`,
        '--hostname-override=node-a',
        `--netns=${ns.name}`,
        '--metrics-bind-address=127.0.0.1:0',
        '--healthz-bind-address=127.0.0.1:0',
      ],
      {
        cwd: project,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH}` },
      },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    try {
      const text = await eventually(
        async () => ns!.tryExec('nft', ['list', 'table', 'ip', 'kube-nft-proxy']).stdout,
        (t) => t.includes('10.96.0.10 . tcp . 80'),
        30_000,
        `the table in ${ns.name}; agent output:\n${out}`,
      );
      expect(text).toContain('10.96.0.53 . udp . 53');
      expect(out).toMatch(/hidden libnftnl: 0 bytes/);
      // The rules are in the kernel a moment before the agent logs the sync that put them there.
      await eventually(
        async () => out,
        (o) => o.includes('synced nftables rules'),
        10_000,
        'the agent logging its sync',
      );
      expect(out).not.toMatch(/ERR_NATIVE_LOAD|"level":50/);
    } finally {
      child.kill('SIGTERM');
      if (child.exitCode === null) await once(child, 'exit');
    }
  });
});

// The arm64 platform package on an arm64 machine: a Debian 6.1 arm64 kernel
// booted under qemu-system-aarch64 (TCG) with an initramfs holding Node's arm64
// binary from the npm registry, arm64 glibc and libstdc++ (the cross
// toolchain's), busybox and the release tarballs' packages. Inside, in a fresh
// network namespace, the loader finds the addon in the platform package, the
// flowtable probe runs and a transaction commits and lists back.
//
// Not qemu-user: Node 22/24 do not start under Debian's qemu-user 7.2 here, and
// qemu-user refuses NETLINK_NETFILTER sockets (EPROTONOSUPPORT) in any case.
// The whole boot takes ~7 s.

import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-root.ts';
import { loadOrder } from '../vm/guest-image.ts';
import { imageCache, registryNode } from './registry-node.ts';
import { ADDON_EXPORTS, ensureRelease, type ReleaseTarballs } from './release-tarballs.ts';

const cache = join(imageCache, 'arm64-vm');
const CROSS_LIB = '/usr/aarch64-linux-gnu/lib';
// crc32c_generic first: libcrc32c (nf_tables needs it) asks the crypto API for
// crc32c at load, and the guest has no modprobe to load it on demand.
const MODULES = ['crc32c_generic', 'nf_tables', 'nf_flow_table_inet', 'nft_flow_offload'];

const INIT = `#!/bin/sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev
for m in $(/bin/busybox cat /modules.list); do /bin/busybox insmod /modules/$m || echo "insmod $m failed"; done
/bin/busybox unshare -n /usr/local/bin/node /smoke.mjs
echo "SMOKE-EXIT $?"
/bin/busybox poweroff -f
`;

const SMOKE = `const base = '/app/kube-nft-proxy/dist/src';
const { loadAddon } = await import(base + '/native/addon.js');
const { NetlinkDataplane } = await import(base + '/nft/netlink/netlink-dataplane.js');
const { probeFlowtables } = await import(base + '/nft/capabilities.js');
const addon = loadAddon();
const dp = new NetlinkDataplane();
const probe = await probeFlowtables(dp);
const t = { family: 'inet', table: 'smoke' };
await dp.commit(dp.begin()
  .add({ kind: 'table', family: 'inet', name: 'smoke' })
  .add({ kind: 'set', ...t, name: 'blocked', keyType: ['ipv4_addr'] })
  .add({ kind: 'chain', ...t, name: 'input', base: { type: 'filter', hook: 'input', priority: 0, policy: 'accept' } })
  .add({ kind: 'rule', ...t, chain: 'input', exprs: [
    { kind: 'lookup', keys: [{ kind: 'payload', field: 'ip saddr' }], set: 'blocked' },
    { kind: 'counter' },
    { kind: 'verdict', verdict: 'drop' },
  ] })
  .add({ kind: 'element', ...t, set: 'blocked', key: ['192.0.2.1'] }));
const listing = await dp.list('inet', 'smoke');
console.log('SMOKE ' + JSON.stringify({ arch: process.arch, exports: Object.keys(addon).sort(), probe: probe.status,
  chains: listing.chains.map((c) => c.name), rules: listing.rules.length, elements: listing.elements.map((e) => e.key.join('.')) }));
`;

/** Downloads one .deb of the given package (never installs it) into the cache; returns its path. */
function debFor(pkg: string): string {
  const prefix = `${pkg.split(':')[0]}_`;
  const have = readdirSync(cache).find((f) => f.startsWith(prefix) && f.endsWith('.deb'));
  if (have) return join(cache, have);
  execFileSync('apt-get', ['download', pkg], { cwd: cache, stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 });
  return join(cache, readdirSync(cache).find((f) => f.startsWith(prefix) && f.endsWith('.deb'))!);
}

/** The kernel package linux-image-arm64 currently depends on. */
function kernelPackage(): string {
  const deps = execFileSync('apt-cache', ['depends', 'linux-image-arm64:arm64'], { encoding: 'utf8' });
  const name = /Depends:\s*(linux-image-[0-9]\S*-arm64)/.exec(deps)?.[1];
  if (!name) throw new Error(`linux-image-arm64:arm64 names no kernel package (dpkg --add-architecture arm64; apt-get update):\n${deps}`);
  return `${name}:arm64`;
}

describe('the arm64 platform package on an arm64 machine (qemu-system-aarch64)', { timeout: 300_000 }, () => {
  const work = mkdtempSync(join(tmpdir(), 'knp-arm64-'));
  let tarballs: ReleaseTarballs;
  let kernel: string;
  let initramfs: string;

  beforeAll(async () => {
    tarballs = await ensureRelease();
    mkdirSync(cache, { recursive: true });
    const kernelTree = join(cache, 'kernel');
    if (!existsSync(join(kernelTree, 'boot'))) {
      rmSync(kernelTree, { recursive: true, force: true });
      execFileSync('dpkg-deb', ['-x', debFor(kernelPackage()), kernelTree]);
      const release = readdirSync(join(kernelTree, 'lib/modules'))[0]!;
      // The package leaves modules.dep to its postinst.
      execFileSync('depmod', ['-b', kernelTree, release]);
    }
    const release = readdirSync(join(kernelTree, 'lib/modules'))[0]!;
    kernel = join(kernelTree, 'boot', `vmlinuz-${release}`);
    const busybox = join(work, 'busybox');
    execFileSync('dpkg-deb', ['-x', debFor('busybox-static:arm64'), busybox]);
    const lock = JSON.parse(readFileSync(join(packageRoot, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { version: string }>;
    };
    const nodeVersion = lock.packages['node_modules/node']!.version;
    const node = registryNode('arm64', nodeVersion);

    const root = join(work, 'root');
    for (const d of ['bin', 'lib/aarch64-linux-gnu', 'usr/local/bin', 'modules', 'proc', 'sys', 'dev', 'tmp', 'app/kube-nft-proxy'])
      mkdirSync(join(root, d), { recursive: true });
    cpSync(join(busybox, 'bin/busybox'), join(root, 'bin/busybox'));
    execFileSync('ln', ['-s', 'busybox', join(root, 'bin/sh')]);
    cpSync(node, join(root, 'usr/local/bin/node'));
    writeFileSync(join(root, 'lib/ld-linux-aarch64.so.1'), readFileSync(join(CROSS_LIB, 'ld-linux-aarch64.so.1')), { mode: 0o755 });
    for (const l of ['libc.so.6', 'libm.so.6', 'libstdc++.so.6', 'libgcc_s.so.1', 'libdl.so.2', 'libpthread.so.0']) {
      // Read through the symlink: the file, not the link, goes into the initramfs.
      writeFileSync(join(root, 'lib/aarch64-linux-gnu', l), readFileSync(join(CROSS_LIB, l)), { mode: 0o755 });
    }
    // The main package and, where npm would put it, the arm64 platform package.
    const app = join(root, 'app/kube-nft-proxy');
    execFileSync('tar', ['-xzf', tarballs.main, '-C', app, '--strip-components=1']);
    const platform = join(app, 'node_modules/@kube-nft-proxy/linux-arm64-gnu');
    mkdirSync(platform, { recursive: true });
    execFileSync('tar', ['-xzf', tarballs.platforms['linux-arm64-gnu']!, '-C', platform, '--strip-components=1']);
    const modulesDir = join(kernelTree, 'lib/modules', release);
    const modules = loadOrder(modulesDir, MODULES);
    for (const m of modules) cpSync(join(modulesDir, m), join(root, 'modules', basename(m)));
    writeFileSync(join(root, 'modules.list'), `${modules.map((m) => basename(m)).join('\n')}\n`);
    writeFileSync(join(root, 'init'), INIT);
    chmodSync(join(root, 'init'), 0o755);
    writeFileSync(join(root, 'smoke.mjs'), SMOKE);
    initramfs = join(work, 'initramfs.cpio.gz');
    execFileSync('sh', ['-c', `cd "${root}" && find . | cpio -o -H newc --quiet | gzip -1 > "${initramfs}"`]);
  }, 900_000);

  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('loads the addon from the platform package, probes flowtables and commits a table in a network namespace', () => {
    const r = spawnSync(
      'qemu-system-aarch64',
      [
        '-M',
        'virt',
        '-cpu',
        'cortex-a72',
        '-smp',
        '2',
        '-m',
        '1536',
        '-nographic',
        '-no-reboot',
        '-kernel',
        kernel,
        '-initrd',
        initramfs,
        '-append',
        'console=ttyAMA0 rdinit=/init panic=-1 quiet',
      ],
      { encoding: 'utf8', timeout: 240_000 },
    );
    const out = r.stdout + r.stderr;
    const line = /^SMOKE (\{.*\})\s*$/m.exec(out)?.[1];
    expect(line, out).toBeDefined();
    expect(JSON.parse(line!)).toEqual({
      arch: 'arm64',
      exports: ADDON_EXPORTS,
      // Debian's arm64 kernel has flowtables (the modules are loaded above).
      probe: 'supported',
      chains: ['input'],
      rules: 1,
      elements: ['192.0.2.1'],
    });
    expect(out).toMatch(/SMOKE-EXIT 0/);
    expect(out).not.toMatch(/insmod .* failed/);
  });
});

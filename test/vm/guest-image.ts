// The guest kernel and initramfs for the flowtable VM, prepared once and cached.
//
// This machine's kernel has no flowtables; Debian's stock kernel package
// (linux-image-amd64 → linux-image-6.1.*-amd64) has them as modules. We unpack
// that package with dpkg -x (nothing is installed on the host), generate its
// modules.dep (the .deb ships none), and build a small initramfs of
// busybox-static plus the virtio/9p/overlay modules that mount the host's root.
//
// Cache layout, under $KNP_VM_CACHE (default /var/cache/kube-nft-proxy-vm, which
// survives between CI runs on the same machine):
//   <package>_<version>/boot/vmlinuz-<kver>            unpacked package
//   <package>_<version>/lib/modules/<kver>/...          + modules.dep (depmod)
//   <package>_<version>/initramfs-<hash>.cpio           hash of everything in it
// Each entry is built in a temporary name and renamed into place, so a run
// that dies halfway (or a concurrent one) never sees half an entry.

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeCpio, type CpioEntry } from './cpio.ts';

export interface GuestImage {
  /** Kernel release, e.g. '6.1.0-56-amd64'. */
  kernelVersion: string;
  /** Debian package and version it came from. */
  packageName: string;
  packageVersion: string;
  /** The bzImage as packaged. */
  vmlinuz: string;
  /** The same kernel uncompressed (ELF, PVH entry): what qemu boots. */
  vmlinux: string;
  initramfs: string;
  /** The guest's lib/modules/<kver>, bound onto /lib/modules/<kver> inside the VM. */
  modulesDir: string;
}

export class GuestImageError extends Error {
  readonly code = 'ERR_VM_IMAGE';
  constructor(message: string) {
    super(message);
    this.name = 'GuestImageError';
  }
}

const META_PACKAGE = 'linux-image-amd64';
const GUEST_DIR = join(dirname(fileURLToPath(import.meta.url)), 'guest');
const BUSYBOX = '/bin/busybox';

/** Modules the initramfs loads to reach the host's root; their dependencies are added. */
const INITRAMFS_MODULES = ['virtio_pci', '9pnet_virtio', '9p', 'overlay'];
/** What the flowtable tests need from the guest kernel; checked at preparation. */
const REQUIRED_MODULES = ['nf_flow_table', 'nf_flow_table_inet', 'nft_flow_offload', 'nf_conntrack', 'nf_tables', 'veth'];

export function cacheRoot(): string {
  return process.env.KNP_VM_CACHE || '/var/cache/kube-nft-proxy-vm';
}

function run(cmd: string, args: string[], cwd?: string): string {
  try {
    return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20 });
  } catch (e: any) {
    throw new GuestImageError(`${cmd} ${args.join(' ')} failed: ${String(e.stderr ?? '') || e.message}`);
  }
}

/** The real kernel package behind the meta package, and its candidate version (apt-cache is local). */
function resolvePackage(): { name: string; version: string } {
  const deps = run('apt-cache', ['depends', META_PACKAGE]);
  const name = /Depends:\s*(linux-image-[0-9][^\s]*-amd64)/.exec(deps)?.[1];
  if (!name) throw new GuestImageError(`apt-cache depends ${META_PACKAGE} names no linux-image-*-amd64 package:\n${deps}`);
  const policy = run('apt-cache', ['policy', name]);
  const version = /Candidate:\s*(\S+)/.exec(policy)?.[1];
  if (!version || version === '(none)') throw new GuestImageError(`no candidate version of ${name} (run apt-get update?)`);
  return { name, version };
}

/** Parses modules.dep into name → path and path → dependency paths. */
function readModulesDep(modulesDir: string): { byName: Map<string, string>; deps: Map<string, string[]> } {
  const byName = new Map<string, string>();
  const deps = new Map<string, string[]>();
  for (const line of readFileSync(join(modulesDir, 'modules.dep'), 'utf8').split('\n')) {
    const [path, rest] = line.split(':');
    if (!path || rest === undefined) continue;
    const base = path.slice(path.lastIndexOf('/') + 1).replace(/\.ko(\.(xz|zst|gz))?$/, '');
    // modprobe treats '-' and '_' in module names alike.
    byName.set(base.replace(/-/g, '_'), path);
    deps.set(path, rest.trim() ? rest.trim().split(/\s+/) : []);
  }
  return { byName, deps };
}

/** Module paths in load order (dependencies first) for the given module names. */
export function loadOrder(modulesDir: string, names: readonly string[]): string[] {
  const { byName, deps } = readModulesDep(modulesDir);
  const order: string[] = [];
  const seen = new Set<string>();
  const visit = (path: string) => {
    if (seen.has(path)) return;
    seen.add(path);
    for (const d of deps.get(path) ?? []) visit(d);
    order.push(path);
  };
  for (const n of names) {
    const path = byName.get(n.replace(/-/g, '_'));
    if (!path) throw new GuestImageError(`module ${n} is not in ${modulesDir}/modules.dep`);
    visit(path);
  }
  return order;
}

function unpackKernel(dir: string, pkg: { name: string; version: string }): void {
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  const dl = mkdtempSync(join(cacheRoot(), 'download-'));
  try {
    // apt-get download writes into the current directory; as root it warns
    // that _apt cannot read the directory, which is harmless.
    run('apt-get', ['download', '-q', `${pkg.name}=${pkg.version}`], dl);
    const deb = readdirSync(dl).find((f) => f.endsWith('.deb'));
    if (!deb) throw new GuestImageError(`apt-get download ${pkg.name} produced no .deb`);
    run('dpkg', ['-x', join(dl, deb), tmp]);
    const kver = readdirSync(join(tmp, 'lib/modules'))[0];
    if (!kver) throw new GuestImageError(`${deb} has no lib/modules/<version>`);
    run('depmod', ['-b', tmp, kver]);
    // Drop what the VM never uses (firmware-heavy drivers stay; only docs go).
    rmSync(join(tmp, 'usr'), { recursive: true, force: true });
    try {
      renameSync(tmp, dir);
    } catch (e) {
      // Another test worker unpacked the same version first: theirs is as good.
      if (!existsSync(dir)) throw e;
    }
  } finally {
    rmSync(dl, { recursive: true, force: true });
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * The uncompressed ELF kernel inside Debian's bzImage. qemu boots it directly
 * through its PVH entry (CONFIG_PVH=y), which skips the xz decompression that
 * costs several seconds under TCG.
 */
function extractVmlinux(vmlinuz: string, out: string): void {
  const image = readFileSync(vmlinuz);
  const xzMagic = Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]);
  const at = image.indexOf(xzMagic);
  if (at < 0) throw new GuestImageError(`${vmlinuz} holds no xz-compressed kernel`);
  // From a file, not a pipe: xz stops reading at the end of the stream and
  // the writer of a pipe would get EPIPE.
  const payload = `${out}.xz-${process.pid}`;
  writeFileSync(payload, image.subarray(at));
  let elf: Buffer;
  try {
    // The payload is followed by the decompressor's trailer, which xz would
    // call corrupt data; --single-stream stops at the end of the stream.
    elf = execFileSync('xz', ['-dc', '--single-stream', payload], { maxBuffer: 512 << 20, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e: any) {
    throw new GuestImageError(`decompressing the kernel in ${vmlinuz}: ${String(e.stderr || e.message)}`);
  } finally {
    rmSync(payload, { force: true });
  }
  if (elf.subarray(0, 4).toString('latin1') !== '\x7fELF') throw new GuestImageError(`${vmlinuz} does not decompress to an ELF kernel`);
  const tmp = `${out}.tmp-${process.pid}`;
  writeFileSync(tmp, elf);
  renameSync(tmp, out);
}

function buildInitramfs(modulesDir: string, out: string): void {
  const modules = loadOrder(modulesDir, INITRAMFS_MODULES);
  const entries: CpioEntry[] = [
    { path: 'bin', type: 'dir', mode: 0o755 },
    { path: 'bin/busybox', type: 'file', mode: 0o755, data: readFileSync(BUSYBOX) },
    { path: 'bin/sh', type: 'symlink', mode: 0o777, data: 'busybox' },
    { path: 'init', type: 'file', mode: 0o755, data: readFileSync(join(GUEST_DIR, 'init.sh')) },
    { path: 'stage2.sh', type: 'file', mode: 0o755, data: readFileSync(join(GUEST_DIR, 'stage2.sh')) },
    { path: 'modules', type: 'dir', mode: 0o755 },
    { path: 'modules.list', type: 'file', mode: 0o644, data: `${modules.map((m) => m.slice(m.lastIndexOf('/') + 1)).join('\n')}\n` },
  ];
  for (const m of modules) {
    entries.push({
      path: `modules/${m.slice(m.lastIndexOf('/') + 1)}`,
      type: 'file',
      mode: 0o644,
      data: readFileSync(join(modulesDir, m)),
    });
  }
  const tmp = `${out}.tmp-${process.pid}`;
  writeFileSync(tmp, writeCpio(entries));
  renameSync(tmp, out);
}

function initramfsKey(kernelDir: string): string {
  const h = createHash('sha256');
  h.update(readFileSync(join(GUEST_DIR, 'init.sh')));
  h.update(readFileSync(join(GUEST_DIR, 'stage2.sh')));
  h.update(readFileSync(BUSYBOX));
  h.update(readFileSync(fileURLToPath(import.meta.url)));
  h.update(readFileSync(join(dirname(fileURLToPath(import.meta.url)), 'cpio.ts')));
  h.update(kernelDir);
  return h.digest('hex').slice(0, 16);
}

const prepared = new Map<string, GuestImage>();

/**
 * Returns the cached guest image, preparing what is missing. Idempotent; the
 * only network use is one `apt-get download` when the package version changes.
 * Checked once per process and cache root (apt-cache alone takes seconds).
 */
export function prepareGuestImage(): GuestImage {
  const root = cacheRoot();
  const known = prepared.get(root);
  if (known && existsSync(known.vmlinux) && existsSync(known.initramfs)) return known;
  const image = prepareUncached(root);
  prepared.set(root, image);
  return image;
}

function prepareUncached(root: string): GuestImage {
  mkdirSync(root, { recursive: true });
  if (!existsSync(BUSYBOX)) throw new GuestImageError(`${BUSYBOX} is missing: install busybox-static`);
  let pkg: { name: string; version: string };
  let kernelDir: string;
  try {
    try {
      pkg = resolvePackage();
    } catch {
      // A fresh machine may never have fetched the package lists.
      run('apt-get', ['update', '-qq']);
      pkg = resolvePackage();
    }
    kernelDir = join(root, `${pkg.name}_${pkg.version}`);
    if (!existsSync(kernelDir)) unpackKernel(kernelDir, pkg);
  } catch (e) {
    // Offline or stale apt lists: an older cached kernel still proves the same thing.
    const cached = readdirSync(root)
      .filter((f) => /^linux-image-.*_[^.]/.test(f) && !f.includes('.tmp-'))
      .sort()
      .at(-1);
    if (!cached) throw e;
    console.warn(`guest kernel: ${(e as Error).message}; using the cached ${cached}`);
    const [name = '', version = ''] = cached.split('_');
    pkg = { name, version };
    kernelDir = join(root, cached);
  }

  const kver = readdirSync(join(kernelDir, 'lib/modules'))[0]!;
  const modulesDir = join(kernelDir, 'lib/modules', kver);
  const vmlinuz = join(kernelDir, 'boot', `vmlinuz-${kver}`);
  if (!existsSync(vmlinuz)) throw new GuestImageError(`${vmlinuz} is missing from the unpacked package`);
  const vmlinux = join(kernelDir, `vmlinux-${kver}`);
  if (!existsSync(vmlinux)) extractVmlinux(vmlinuz, vmlinux);
  // Throws, naming the module, if the kernel lacks any of them.
  loadOrder(modulesDir, REQUIRED_MODULES);

  const initramfs = join(kernelDir, `initramfs-${initramfsKey(kernelDir)}.cpio`);
  if (!existsSync(initramfs)) {
    // Earlier keys' images only; a '.tmp-' file may be another worker's build in progress.
    for (const old of readdirSync(kernelDir).filter((f) => /^initramfs-[0-9a-f]+\.cpio$/.test(f)))
      rmSync(join(kernelDir, old), { force: true });
    buildInitramfs(modulesDir, initramfs);
  }
  return { kernelVersion: kver, packageName: pkg.name, packageVersion: pkg.version, vmlinuz, vmlinux, initramfs, modulesDir };
}

// `node test/vm/guest-image.ts` prepares the cache and prints where it is.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  console.log(JSON.stringify(prepareGuestImage(), null, 2));
}

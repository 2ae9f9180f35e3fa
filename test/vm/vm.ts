// Runs one command in a throwaway VM whose kernel has flowtables.
//
// qemu (TCG: KVM does not work on these machines) boots Debian's stock kernel
// with our small initramfs (guest-image.ts); the guest mounts the host's `/`
// read-only under a tmpfs overlay, so it sees the same Node, the same repo at
// the same absolute path and the same tools (nft, conntrack, socat, ip), and
// can write anywhere without touching the host. The command's output and exit
// code come back through a second, writable 9p share.
//
// A VM that does not boot or does not report back is an error carrying the
// console log: the flowtable tests never skip.

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, watch, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { prepareGuestImage } from './guest-image.ts';

/** The repository root, wherever this clone lives (the guest sees the same path). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export interface VmRunOptions {
  /** argv of the command; exactly one of command and script. */
  command?: string[];
  /** A shell script (run by /bin/sh -e). */
  script?: string;
  /** Whole-VM budget, boot included; qemu is killed past it. Default 120 s. */
  timeoutMs?: number;
  /** Working directory inside the guest; default the repo root. */
  cwd?: string;
  env?: Record<string, string>;
  memoryMb?: number;
  cpus?: number;
}

export interface VmRunResult {
  /** The command's exit code inside the guest. */
  exitCode: number;
  stdout: string;
  stderr: string;
  /** The guest's serial console: kernel log and the init stages' lines. */
  consoleLog: string;
  /** Wall-clock time from starting qemu until the command started (boot). */
  bootMs: number;
  /** The command's own run time, by the guest's clock. */
  commandMs: number;
  /** Wall-clock time of the whole VM, qemu start to exit. */
  totalMs: number;
}

export class VmError extends Error {
  readonly code: 'ERR_VM_BOOT' | 'ERR_VM_TIMEOUT';
  readonly consoleLog: string;
  constructor(code: 'ERR_VM_BOOT' | 'ERR_VM_TIMEOUT', message: string, consoleLog: string) {
    // The tail of the console is what explains a failed boot; put it in the message
    // so that a test failure shows it without extra plumbing.
    super(`${message}\n--- guest console (tail) ---\n${consoleLog.slice(-6000)}`);
    this.name = 'VmError';
    this.code = code;
    this.consoleLog = consoleLog;
  }
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The script the guest's stage 2 runs: environment, directory, then the command. */
export function renderRunScript(opts: VmRunOptions): string {
  if ((opts.command === undefined) === (opts.script === undefined)) {
    throw new TypeError('runInVm: give exactly one of command and script');
  }
  const lines = ['set -e'];
  for (const [k, v] of Object.entries(opts.env ?? {})) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw new TypeError(`runInVm: bad environment name ${k}`);
    lines.push(`export ${k}=${shellQuote(v)}`);
  }
  lines.push(`cd ${shellQuote(opts.cwd ?? REPO_ROOT)}`);
  if (opts.command) lines.push(`exec ${opts.command.map(shellQuote).join(' ')}`);
  else lines.push(opts.script!);
  return `${lines.join('\n')}\n`;
}

function readIf(path: string): string | undefined {
  return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
}

export async function runInVm(opts: VmRunOptions): Promise<VmRunResult> {
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const script = renderRunScript(opts);
  const image = prepareGuestImage();
  const share = mkdtempSync(join(tmpdir(), 'knp-vm-'));
  const consolePath = join(share, 'console.log');
  writeFileSync(join(share, 'run.sh'), script);

  const args = [
    '-accel',
    'tcg,thread=multi',
    '-cpu',
    'max',
    '-m',
    String(opts.memoryMb ?? 1024),
    '-smp',
    String(opts.cpus ?? 2),
    '-nographic',
    '-no-reboot',
    '-nodefaults',
    '-monitor',
    'none',
    '-serial',
    `file:${consolePath}`,
    '-nic',
    'none',
    '-kernel',
    image.vmlinux,
    '-initrd',
    image.initramfs,
    // panic=-1: a guest that panics reboots at once, which -no-reboot turns into an exit.
    '-append',
    `console=ttyS0 panic=-1 quiet loglevel=4 knp.modules=${image.modulesDir}`,
    '-virtfs',
    'local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap',
    '-virtfs',
    `local,path=${share},mount_tag=knpshare,security_model=none`,
  ];

  const started = Date.now();
  try {
    const qemu = spawn('qemu-system-x86_64', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let qemuOut = '';
    qemu.stdout.on('data', (d: Buffer) => (qemuOut += d.toString()));
    qemu.stderr.on('data', (d: Buffer) => (qemuOut += d.toString()));
    // Stage 2 creates `started` just before the command: the host sees it
    // through inotify on the share, which gives the boot time by the host's clock.
    let bootedAt: number | undefined;
    const watcher = watch(share, (_event, name) => {
      if (name === 'started' && bootedAt === undefined) bootedAt = Date.now();
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      qemu.kill('SIGKILL');
    }, timeoutMs);
    const status = await new Promise<number | string>((res, rej) => {
      qemu.once('error', rej);
      qemu.once('close', (code, signal) => res(code ?? signal ?? 'unknown'));
    }).finally(() => {
      clearTimeout(timer);
      watcher.close();
    });
    const totalMs = Date.now() - started;

    const consoleLog = (readIf(consolePath) ?? '') + (qemuOut ? `\n--- qemu ---\n${qemuOut}` : '');
    if (timedOut) throw new VmError('ERR_VM_TIMEOUT', `VM did not finish within ${timeoutMs} ms`, consoleLog);
    const exitText = readIf(join(share, 'exit-code'));
    if (exitText === undefined) {
      throw new VmError('ERR_VM_BOOT', `VM exited (qemu status ${status}) without running the command`, consoleLog);
    }
    const [startS = 0, endS = 0] = (readIf(join(share, 'uptime')) ?? '').trim().split(/\s+/).map(Number);
    const commandMs = Math.round((endS - startS) * 1000);
    return {
      exitCode: Number(exitText.trim()),
      stdout: readIf(join(share, 'stdout')) ?? '',
      stderr: readIf(join(share, 'stderr')) ?? '',
      consoleLog,
      bootMs: bootedAt === undefined ? totalMs - commandMs : bootedAt - started,
      commandMs,
      totalMs,
    };
  } finally {
    rmSync(share, { recursive: true, force: true });
  }
}

// `node test/vm/vm.ts <argv...>` runs a command in the VM, for debugging.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const argv = process.argv.slice(2);
  const r = await runInVm(argv.length ? { command: argv } : { script: 'uname -a; cat /proc/uptime' });
  process.stdout.write(r.stdout);
  process.stderr.write(r.stderr);
  console.error(`exit ${r.exitCode}, boot ${r.bootMs} ms, command ${r.commandMs} ms, total ${r.totalMs} ms`);
  process.exit(r.exitCode);
}

// The agent as bench:sync runs it: bin/kube-nft-proxy.js over the built
// dist/ in a child process, its pino lines parsed as they come, its memory
// read from /proc. A preload prints the moment node hands over to user code,
// so that start-up splits into node's own boot and loading our modules. Node
// gets the flags the image's ENTRYPOINT gives it and the image's environment
// (deploy/Containerfile), so that memory is measured as the image runs the agent.

import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { containerfileEntrypoint, containerfileEnv } from '../scripts/containerfile.ts';
import { packageRoot } from '../src/package-root.ts';

const BIN = join(packageRoot, 'bin', 'kube-nft-proxy.js');
const BOOT_PRELOAD = fileURLToPath(new URL('./boot-mark.cjs', import.meta.url));
const BOOT_MARK = 'knp-bench-boot';

/** The node flags of the image's ENTRYPOINT: what comes between `node` and the script. */
export function imageNodeFlags(): string[] {
  const argv = containerfileEntrypoint();
  const script = argv.findIndex((a) => a.endsWith('/bin/kube-nft-proxy.js'));
  if (!argv[0]?.endsWith('node') || script < 1)
    throw new Error(`deploy/Containerfile: ENTRYPOINT ${JSON.stringify(argv)} does not run node on bin/kube-nft-proxy.js`);
  return argv.slice(1, script);
}

/** The environment of the image (deploy/Containerfile's ENV lines). */
export function imageEnv(): Record<string, string> {
  return Object.fromEntries(containerfileEnv());
}

export interface LogRecord {
  msg: string;
  time: number;
  [k: string]: unknown;
}

/** The agent child and its pino lines, with a way to wait for one. */
export class AgentChild {
  readonly child: ChildProcess;
  readonly records: LogRecord[] = [];
  #waiters: Array<() => void> = [];
  #partial = '';
  #stderr = '';

  /** When node printed BOOT_MARK from the preload (epoch ms): our first line of code ran. */
  bootedAt: number | undefined;

  /** Runs bin/kube-nft-proxy.js with these flags, node with the image's flags and `nodeFlags`. */
  constructor(flags: readonly string[], nodeFlags: readonly string[] = []) {
    this.child = spawn(process.execPath, [...imageNodeFlags(), ...nodeFlags, '--require', BOOT_PRELOAD, BIN, ...flags], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...imageEnv() },
    });
    this.child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      const lines = (this.#partial + d).split('\n');
      this.#partial = lines.pop()!;
      for (const l of lines) if (l.startsWith('{')) this.records.push(JSON.parse(l) as LogRecord);
      for (const w of this.#waiters.splice(0)) w();
    });
    this.child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      this.#stderr += d;
      const boot = new RegExp(`${BOOT_MARK} (\\d+)`).exec(this.#stderr);
      if (boot && this.bootedAt === undefined) this.bootedAt = Number(boot[1]);
    });
    this.child.on('exit', () => {
      for (const w of this.#waiters.splice(0)) w();
    });
  }

  /** The first record at index >= from that matches, waiting for it. */
  async waitFor(
    from: number,
    match: (r: LogRecord) => boolean,
    timeoutMs: number,
    what: string,
  ): Promise<{ record: LogRecord; index: number }> {
    const deadline = Date.now() + timeoutMs;
    for (let i = from; ; ) {
      for (; i < this.records.length; i++) {
        const r = this.records[i]!;
        if (r.msg === 'nftables sync failed; will retry') throw new Error(`agent sync failed: ${JSON.stringify(r)}`);
        if (match(r)) return { record: r, index: i };
      }
      if (this.child.exitCode !== null)
        throw new Error(`agent exited (${this.child.exitCode}) waiting for ${what}: ${this.#stderr.slice(-2000)}`);
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(
          `timed out waiting for ${what}; last records: ${this.records
            .slice(-5)
            .map((r) => JSON.stringify(r))
            .join('\n')}`,
        );
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** VmRSS and VmHWM in MiB. */
  memory(): { rss: number; hwm: number } {
    const status = readFileSync(`/proc/${this.child.pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
  }

  /**
   * Where the RSS is, from /proc/PID/smaps (MiB): `[heap]` is glibc's main
   * malloc arena (the addon's batch buffers and libnftnl objects built on the
   * JS thread); anonymous maps are V8's heap pages, large malloc blocks and the
   * worker threads' malloc arenas; file maps are node, libraries and code.
   */
  smaps(): { brkHeap: number; anonymous: number; files: number } {
    const out = { brkHeap: 0, anonymous: 0, files: 0 };
    let into: keyof typeof out = 'anonymous';
    for (const line of readFileSync(`/proc/${this.child.pid}/smaps`, 'utf8').split('\n')) {
      const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
      if (header) {
        const name = header[1]!;
        into = name === '[heap]' ? 'brkHeap' : name === '' || name.startsWith('[anon') ? 'anonymous' : 'files';
        continue;
      }
      const rss = /^Rss:\s+(\d+) kB/.exec(line);
      if (rss) out[into] += Number(rss[1]) / 1024;
    }
    return out;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    const t = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await once(this.child, 'exit');
    clearTimeout(t);
  }
}

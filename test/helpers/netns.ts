// Network namespaces for tests that touch the kernel. Every namespace a test
// creates is deleted again, also when the test fails, so that the host's own
// ruleset and links are never touched and nothing is left behind.

import { execFileSync, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { netnsName } from './netns-name.ts';

export interface NetNs {
  /** Name under /var/run/netns. */
  name: string;
  /** Path the addon's `netns` option takes. */
  path: string;
  /** Runs a command inside the namespace and returns its stdout; throws on a non-zero exit. */
  exec(cmd: string, args: string[], opts?: { input?: string; timeoutMs?: number }): string;
  /** Like exec but returns the exit status instead of throwing. */
  tryExec(cmd: string, args: string[], opts?: { input?: string; timeoutMs?: number }): { status: number; stdout: string; stderr: string };
  /** Starts a long-running process inside the namespace. */
  spawn(cmd: string, args: string[], opts?: SpawnOptions): ChildProcess;
  /** `nft -j list ruleset` inside the namespace, parsed (the CLI is a test oracle only). */
  nftJson(): NftJson;
  destroy(): void;
}

export interface NftJson {
  nftables: Array<Record<string, any>>;
}

const live = new Set<NetNs>();

export function createNetns(prefix = 'knp'): NetNs {
  const name = netnsName(prefix);
  execFileSync('ip', ['netns', 'add', name]);
  // Loopback up so that local sockets inside work; no other link, so no route out.
  execFileSync('ip', ['-n', name, 'link', 'set', 'lo', 'up']);
  const run = (cmd: string, args: string[], opts: { input?: string; timeoutMs?: number } = {}) =>
    execFileSync('ip', ['netns', 'exec', name, cmd, ...args], {
      input: opts.input,
      timeout: opts.timeoutMs ?? 20_000,
      encoding: 'utf8',
      stdio: ['pipe', 'pipe', 'pipe'],
      maxBuffer: 1 << 30,
    });
  const ns: NetNs = {
    name,
    path: `/var/run/netns/${name}`,
    exec: run,
    tryExec(cmd, args, opts = {}) {
      try {
        return { status: 0, stdout: run(cmd, args, opts), stderr: '' };
      } catch (e: any) {
        return { status: e.status ?? -1, stdout: String(e.stdout ?? ''), stderr: String(e.stderr ?? '') };
      }
    },
    spawn(cmd, args, opts = {}) {
      return spawn('ip', ['netns', 'exec', name, cmd, ...args], { stdio: 'pipe', ...opts });
    },
    nftJson() {
      return JSON.parse(run('nft', ['-j', 'list', 'ruleset'])) as NftJson;
    },
    destroy() {
      if (!live.delete(ns)) return;
      try {
        execFileSync('ip', ['netns', 'del', name], { stdio: 'ignore' });
      } catch {
        // Already gone.
      }
    },
  };
  live.add(ns);
  return ns;
}

/** Runs fn with a fresh namespace and always deletes it. */
export async function withNetns<T>(fn: (ns: NetNs) => Promise<T> | T, prefix?: string): Promise<T> {
  const ns = createNetns(prefix);
  try {
    return await fn(ns);
  } finally {
    ns.destroy();
  }
}

// A test process that dies halfway still removes what it made.
for (const sig of ['exit', 'SIGINT', 'SIGTERM'] as const) {
  process.once(sig as any, () => {
    for (const ns of [...live]) ns.destroy();
    if (sig !== 'exit') process.exit(130);
  });
}

// The only module that loads the native addon, and only when asked to
// (loadAddon): importing this module, or the package, loads nothing. Where the
// .node comes from, in order (sharp's way: one loader, every path listed when
// all fail):
//   1. KUBE_NFT_PROXY_ADDON, when set: that file and nothing else (an explicit
//      choice, e.g. the ASan build, must not fall back silently);
//   2. the platform package, an optionalDependency npm installs only on its
//      os/cpu/libc: @kube-nft-proxy/linux-<arch>-gnu, whose .node carries
//      libnftnl and libmnl beside it (no system libraries, no install script);
//   3. a local build from source (npm run build:native): build/Release, then
//      build/Debug.

import { createRequire } from 'node:module';
import type { NativeConntrack } from './conntrack-types.ts';
import type { NativeLinkMonitorConstructor } from './link-monitor-types.ts';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { packageRoot } from '../package-root.ts';

/**
 * One operation that failed. `origin` says where: the kernel refused it
 * (errno from its answer), or the addon could not build its message (libnftnl
 * refused a value: EINVAL; it outgrew netlink's 16-bit lengths, e.g. a rule
 * whose expressions exceed 64 KiB: EMSGSIZE). Either way the shape is the
 * same, the index names the operation (for an element, its own), and nothing
 * of the batch applied; builder failures are all reported, and then nothing
 * was sent.
 */
export interface NativeCommitFailure {
  /** Index of the failing operation; -1 when the kernel's answer names none. */
  index: number;
  errno: number;
  message: string;
  origin: 'kernel' | 'builder';
}

export interface NativeCommitResult {
  /** Empty when the transaction applied. */
  failures: NativeCommitFailure[];
  /** Netlink messages and bytes the batch took. */
  messages: number;
  bytes: number;
  /** Bytes of a taken batch (one from allocateBatch) given back to the OS while its messages were built. */
  releasedBytes: number;
  /** The batches the transaction came in: 1 for commit(), the pushed ones for a NativeBatchStream. */
  pieces: number;
  /** The transactions sent: 1 for commit(), a NativeBatchStream's cuts and its last (none when nothing was sent). */
  transactions: number;
  /** Where the worker thread's time went, in milliseconds. */
  timing: NativeCommitTiming;
}

export interface NativeCommitTiming {
  /** Checking the batch buffer. */
  parseMs: number;
  /** Opening the netlink socket (in the target namespace). */
  openMs: number;
  /** Building the netlink messages (wall and thread CPU time). */
  buildMs: number;
  buildCpuMs: number;
  /** The one send(): the kernel checks and commits the transaction inside it. */
  sendMs: number;
  sendCpuMs: number;
  /** Reading the kernel's answers. */
  receiveMs: number;
  /** A stream's commit(): waiting for the pieces' building (and sending, cut) once the last was pushed (0 for commit()). */
  waitMs: number;
}

/**
 * One transaction from several batches (the addon's BatchStream): each pushed
 * batch is taken or copied as commit() takes one, then checked and its
 * messages built on a thread of the stream's own while JS encodes the next.
 * Each is a complete batch, its operations' indexes those of the whole
 * transaction. commit() sends them as one transaction once all are built and
 * settles as NativeAddon.commit does (a refused piece rejects, and nothing is
 * sent); abort() sends nothing. Either ends the stream; one dropped
 * unfinished is aborted when collected. Cut into several transactions
 * (cut()), each is sent as soon as it is built, and those before a refusal
 * or an abort stay sent.
 */
export interface NativeBatchStream {
  push(batch: Uint8Array): void;
  /**
   * Ends a transaction after the pieces pushed so far: the stream's thread
   * sends it once they are built, the transaction before it landed, and
   * builds those after into the next. The kernel refusing one ends the
   * sending; commit() settles with its failures.
   */
  cut(): void;
  commit(): Promise<NativeCommitResult>;
  abort(): void;
}

export type NativeBatchStreamConstructor = new (options?: NativeOptions, expectedBytes?: number) => NativeBatchStream;

/** What check() found: builder failures, or the messages and bytes the batch would take. */
export interface NativeCheckResult {
  failures: NativeCommitFailure[];
  messages: number;
  bytes: number;
}

/**
 * The shape of the error commit() rejects with and check() throws for a batch
 * outside the allow-list (a bug in the encoder, never the kernel's answer):
 * a RangeError with code ERR_NFT_BATCH_INVALID, ERR_NFT_BATCH_TRUNCATED,
 * ERR_NFT_NAME_TOO_LONG, ERR_NFT_NAME_INVALID or ERR_NFT_FAMILY, and the
 * index of the operation whose bytes are wrong (absent when the batch's
 * header is).
 */
export interface NativeBatchError extends RangeError {
  code: string;
  index?: number;
}

export interface NativeOptions {
  /** Network namespace to act in, e.g. /var/run/netns/NAME; default: the process's own. */
  netns?: string;
}

export interface NativeAddon extends NativeConntrack {
  /**
   * Sends one encoded batch (src/nft/netlink/encode.ts) as one transaction.
   * Wrong argument types throw. A batch in a buffer from allocateBatch is
   * taken: the buffer is detached before commit returns (its views read as
   * empty), so nothing JS does can change it. Any other is copied before
   * commit returns: the caller may reuse its buffer at once. It is checked off the JS
   * thread against an allow-list of what libnftnl takes (object kinds,
   * expressions, attribute ids, value types and lengths); a batch outside it
   * rejects with a NativeBatchError. Operations that libnftnl refuses while
   * the messages are built, or the kernel refuses, are failures in the result.
   */
  commit(batch: Uint8Array, options?: NativeOptions): Promise<NativeCommitResult>;
  /**
   * What commit does short of the kernel, synchronously: the allow-list
   * (throws a NativeBatchError) and building every message (failures with
   * origin 'builder'). For tests and tools: it blocks the JS thread.
   */
  check(batch: Uint8Array): NativeCheckResult;
  /** The listing buffer of one table (src/nft/netlink/decode-listing.ts), or null when it does not exist. */
  list(family: number, table: string, options?: NativeOptions, skipElementsOf?: readonly string[]): Promise<Uint8Array | null>;
  /** One table's userdata (empty when it has none), or null when the table does not exist: reads the table, not its contents. */
  tableUserdata(family: number, table: string, options?: NativeOptions): Promise<Uint8Array | null>;
  /** The ruleset generation id. */
  generation(options?: NativeOptions): Promise<number>;
  /**
   * Returns malloc's free pages to the OS (glibc malloc_trim(0)); true when
   * some were. Synchronous, a few ms: for an idle moment after a large sync.
   */
  trimMemory(): boolean;
  /**
   * Ends the process with _exit(code) unless it has ended within `ms`, from a
   * thread of its own: for the moment before process.exit(code), which Node
   * can deadlock in (nodejs/node#54918). Absent from addons built before it.
   */
  exitWatchdog?(code: number, ms: number): void;
  /**
   * A zero-filled buffer of `size` bytes in memory the addon owns, to encode a
   * large batch into: commit() then takes it instead of copying it, so a full
   * sync's batch (hundreds of MiB at 100k Services) never exists twice. Throws
   * ERR_NO_EXTERNAL_BUFFERS where the runtime refuses buffers it did not allocate.
   */
  allocateBatch(size: number): ArrayBuffer;
  /** Opens a transaction committed in pieces; absent from addons built before it (NetlinkDataplane then commits one batch). */
  BatchStream?: NativeBatchStreamConstructor;
  /** Elements per NEWSETELEM message. */
  readonly elementsPerMessage: number;
  LinkMonitor: NativeLinkMonitorConstructor;
}

/** The addon could not be loaded; the message lists every place tried and why it failed. */
export class NativeLoadError extends Error {
  readonly code = 'ERR_NATIVE_LOAD';
  /** Each candidate with the reason it was not used, in the order tried. */
  readonly attempts: readonly AddonAttempt[];
  constructor(message: string, attempts: readonly AddonAttempt[], options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NativeLoadError';
    this.attempts = attempts;
  }
}

export interface AddonAttempt {
  /** What was tried: a file, or a package name. */
  source: string;
  /** Why it was not used. */
  reason: string;
}

/** The platform package's name for this process: only glibc Linux on x64 and arm64 has one. */
export function platformPackageName(platform: string = process.platform, arch: string = process.arch): string | undefined {
  if (platform !== 'linux' || (arch !== 'x64' && arch !== 'arm64')) return undefined;
  return `@kube-nft-proxy/${platform}-${arch}-gnu`;
}

const ADDON_FILE = 'kube_nft_proxy.node';

let cached: NativeAddon | undefined;

function why(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  const missing: string[] = [];
  if (/libnftnl\.so/.test(text)) missing.push('libnftnl11');
  if (/libmnl\.so/.test(text)) missing.push('libmnl0');
  return missing.length ? `${text} (a local build links the system libraries: apt-get install ${missing.join(' ')})` : text;
}

type Candidate = { source: string; file: () => string };

function candidates(require: NodeJS.Require): Candidate[] {
  const explicit = process.env.KUBE_NFT_PROXY_ADDON;
  if (explicit) return [{ source: `KUBE_NFT_PROXY_ADDON=${explicit}`, file: () => explicit }];
  const out: Candidate[] = [];
  const pkg = platformPackageName();
  if (pkg) {
    // Resolved from the package root, as npm places an optionalDependency beside or below it.
    out.push({ source: pkg, file: () => join(dirname(require.resolve(`${pkg}/package.json`, { paths: [packageRoot] })), ADDON_FILE) });
  } else {
    out.push({
      source: 'platform package',
      file: () => {
        throw new Error(`none is published for ${process.platform}-${process.arch}`);
      },
    });
  }
  for (const dir of ['build/Release', 'build/Debug'])
    out.push({ source: join(packageRoot, dir, ADDON_FILE), file: () => join(packageRoot, dir, ADDON_FILE) });
  return out;
}

/** The addon if something has loaded it already; never loads it. */
export function loadedAddon(): NativeAddon | undefined {
  return cached;
}

/** Loads the addon once; throws NativeLoadError listing each path tried and why it failed. */
export function loadAddon(): NativeAddon {
  if (cached) return cached;
  const require = createRequire(import.meta.url);
  const attempts: AddonAttempt[] = [];
  for (const c of candidates(require)) {
    let file: string;
    try {
      file = c.file();
    } catch (e) {
      attempts.push({ source: c.source, reason: (e as { code?: string }).code === 'MODULE_NOT_FOUND' ? 'not installed' : why(e) });
      continue;
    }
    if (!existsSync(file)) {
      attempts.push({ source: c.source, reason: 'no such file' });
      continue;
    }
    try {
      cached = require(file) as NativeAddon;
      return cached;
    } catch (e) {
      attempts.push({ source: c.source, reason: why(e) });
    }
  }
  const lines = attempts.map((a) => `  - ${a.source}: ${a.reason}`).join('\n');
  throw new NativeLoadError(
    `could not load the kube-nft-proxy addon; tried:\n${lines}\n` +
      `Install the platform package (npm installs ${platformPackageName() ?? 'it'} as an optional dependency on glibc ` +
      `Linux x64/arm64; do not omit optional dependencies), ` +
      'or build from source with `npm run build:native` (needs: apt-get install libnftnl-dev libmnl-dev pkg-config g++ make python3).',
    attempts,
  );
}

/** Same as loadAddon. */
export const loadNative = loadAddon;

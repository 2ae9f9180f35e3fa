// The only module that loads the native addon. node-gyp-build takes a
// prebuilt binary from prebuilds/ first and a local build (build/Release,
// build/Debug) otherwise; KUBE_NFT_PROXY_ADDON names a .node file directly
// (e.g. the ASan build). A load failure becomes one actionable error.

import { createRequire } from 'node:module';
import type { NativeConntrack } from './conntrack-types.ts';
import type { NativeLinkMonitorConstructor } from './link-monitor-types.ts';
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
}

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
   * Wrong argument types throw. The batch is copied before commit returns:
   * the caller may reuse its buffer at once. The copy is checked off the JS
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
  list(family: number, table: string, options?: NativeOptions): Promise<Uint8Array | null>;
  /** One table's userdata (empty when it has none), or null when the table does not exist: reads the table, not its contents. */
  tableUserdata(family: number, table: string, options?: NativeOptions): Promise<Uint8Array | null>;
  /** The ruleset generation id. */
  generation(options?: NativeOptions): Promise<number>;
  /**
   * Returns malloc's free pages to the OS (glibc malloc_trim(0)); true when
   * some were. Synchronous, a few ms: for an idle moment after a large sync.
   */
  trimMemory(): boolean;
  /** Elements per NEWSETELEM message. */
  readonly elementsPerMessage: number;
  LinkMonitor: NativeLinkMonitorConstructor;
}

/** The addon could not be loaded; the message says what to do. */
export class NativeLoadError extends Error {
  readonly code = 'ERR_NATIVE_LOAD';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NativeLoadError';
  }
}

let cached: NativeAddon | undefined;

function explain(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  const missing: string[] = [];
  if (/libnftnl\.so/.test(text)) missing.push('libnftnl11');
  if (/libmnl\.so/.test(text)) missing.push('libmnl0');
  if (missing.length) {
    return `the kube-nft-proxy addon needs shared libraries that are not installed (${text}); install them with: apt-get install ${missing.join(' ')}`;
  }
  if (/No native build was found/.test(text)) {
    return (
      `no kube-nft-proxy addon for this platform in prebuilds/ or build/ (${text.split('\n')[0]}); ` +
      'build it with `npm run build:native` (needs: apt-get install libnftnl-dev libmnl-dev pkg-config g++ make python3)'
    );
  }
  return `loading the kube-nft-proxy addon failed: ${text}`;
}

/** Loads the addon once; throws NativeLoadError with what failed and how to fix it. */
export function loadAddon(): NativeAddon {
  if (cached) return cached;
  const require = createRequire(import.meta.url);
  try {
    const explicit = process.env.KUBE_NFT_PROXY_ADDON;
    const addon = explicit ? require(explicit) : (require('node-gyp-build') as (dir: string) => unknown)(packageRoot);
    cached = addon as NativeAddon;
    return cached;
  } catch (e) {
    throw new NativeLoadError(explain(e), { cause: e });
  }
}

/** Same as loadAddon. */
export const loadNative = loadAddon;

// The only module that loads the native addon. node-gyp-build takes a
// prebuilt binary from prebuilds/ first and a local build (build/Release,
// build/Debug) otherwise; KUBE_NFT_PROXY_ADDON names a .node file directly
// (e.g. the ASan build). A load failure becomes one actionable error.

import { createRequire } from 'node:module';
import type { NativeConntrack } from './conntrack-types.ts';
import type { NativeLinkMonitorConstructor } from './link-monitor-types.ts';
import { packageRoot } from '../package-root.ts';

export interface NativeCommitFailure {
  /** Index of the failing operation; -1 when the kernel's answer names none. */
  index: number;
  errno: number;
  message: string;
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

export interface NativeOptions {
  /** Network namespace to act in, e.g. /var/run/netns/NAME; default: the process's own. */
  netns?: string;
}

export interface NativeAddon extends NativeConntrack {
  /**
   * Sends one encoded batch (src/nft/netlink/encode.ts) as one transaction. Wrong
   * argument types throw; a malformed buffer rejects with a RangeError whose
   * code says why (checked off the JS thread).
   *
   * The batch is not copied: a worker thread reads it until the promise
   * settles, so until then the caller must not write to it, transfer or
   * resize its ArrayBuffer (NetlinkDataplane never hands a writer's buffer
   * to two commits at once). It stays alive by itself meanwhile.
   */
  commit(batch: Uint8Array, options?: NativeOptions): Promise<NativeCommitResult>;
  /** The listing buffer of one table (src/nft/netlink/listing.ts), or null when it does not exist. */
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

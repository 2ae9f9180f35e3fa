// The Dataplane over the netlink addon: commit encodes the operations into one
// batch and sends it as one transaction; list reads a table back and raises it
// into our objects. Sets and maps this dataplane has committed or listed are
// remembered, because element bytes depend on their key types.

import { constants as osConstants } from 'node:os';
import { loadNative, type NativeAddon, type NativeCommitResult, type NativeCommitTiming } from '../../native/addon.ts';
import { NftCommitError, type Dataplane, type OperationFailure, type TableListing } from '../dataplane.ts';
import { encodeOperations } from './encode.ts';
import { FAMILY_NUMBER } from './kernel-constants.ts';
import { decodeListing, type DecodedListing } from './listing.ts';
import type { Family, NftMap, NftSet, Operation } from '../objects.ts';
import { validateOperations } from '../transaction.ts';
import { ByteWriter } from './wire.ts';

export interface NetlinkDataplaneOptions {
  /** Network namespace to program, e.g. /var/run/netns/NAME. */
  netns?: string;
  /** The addon; loaded with loadNative() when absent. */
  addon?: NativeAddon;
  /** Check every operation before encoding (default true). */
  validate?: boolean;
}

/** Where the last commit's time went, in milliseconds (for benchmarks and metrics). */
export interface CommitStats extends NativeCommitTiming {
  operations: number;
  /** Checking the operations (0 when validation is off). */
  validateMs: number;
  /** Encoding them into one batch buffer. */
  encodeMs: number;
  /** The addon call on the JS thread: pinning the buffer and queueing the work. */
  handoffMs: number;
  /** From the call to the kernel's answer. */
  totalMs: number;
  batchBytes: number;
  messages: number;
}

const SMALL_BATCH = 1 << 16;
const LARGE_BATCH = 4 << 20;

const ERRNO_NAME = new Map<number, string>(Object.entries(osConstants.errno).map(([k, v]) => [v, k]));

export function errnoName(errno: number): string {
  return ERRNO_NAME.get(errno) ?? `E${errno}`;
}

function key(family: Family, table: string, name: string): string {
  return `${family}\0${table}\0${name}`;
}

export class NetlinkDataplane implements Dataplane {
  readonly #addon: NativeAddon;
  readonly #options: { netns?: string };
  readonly #validate: boolean;
  readonly #containers = new Map<string, NftSet | NftMap>();
  // The addon reads a batch where it was encoded until its commit settles, so
  // a commit takes the writer for itself: one that starts meanwhile (commits
  // are not serialised here) encodes into a writer of its own. A writer grown
  // past LARGE_BATCH (a full sync's: ~130 MiB at 10k services x 10 endpoints)
  // is not kept once its commit is done: keeping it for the next full sync,
  // an hour later, would cost far more resident memory than allocating it
  // again costs time.
  #writer: ByteWriter | undefined = new ByteWriter(SMALL_BATCH);
  /** Rules that the last list() could not raise. */
  lastUnreadable: DecodedListing['unreadable'] = [];
  /** Timings of the last commit that reached the kernel. */
  lastCommit: CommitStats | undefined;
  #kernelMs = 0;

  constructor(options: NetlinkDataplaneOptions = {}) {
    this.#addon = options.addon ?? loadNative();
    this.#options = options.netns ? { netns: options.netns } : {};
    this.#validate = options.validate ?? true;
  }

  async commit(ops: readonly Operation[]): Promise<void> {
    if (ops.length === 0) return;
    const t0 = performance.now();
    if (this.#validate) validateOperations(ops, [...this.#containers.values()]);
    const t1 = performance.now();
    const writer = this.#writer ?? new ByteWriter(SMALL_BATCH);
    this.#writer = undefined;
    let result: NativeCommitResult;
    let bytes: Uint8Array;
    let t2: number;
    let t3: number;
    try {
      ({ bytes } = encodeOperations(ops, (f, t, n) => this.#containers.get(key(f, t, n)), writer));
      t2 = performance.now();
      const pending = this.#addon.commit(bytes, this.#options);
      t3 = performance.now();
      result = await pending;
    } finally {
      if (writer.capacity <= LARGE_BATCH) this.#writer ??= writer;
    }
    this.#kernelMs += result.timing.sendMs + result.timing.receiveMs;
    this.lastCommit = {
      operations: ops.length, validateMs: t1 - t0, encodeMs: t2 - t1, handoffMs: t3 - t2, totalMs: performance.now() - t0,
      batchBytes: bytes.length, messages: result.messages, ...result.timing,
    };
    if (result.failures.length > 0) {
      const failures: OperationFailure[] = result.failures.map((f) => ({
        index: f.index,
        errno: f.errno,
        code: errnoName(f.errno),
        message: f.message,
      }));
      throw new NftCommitError(failures, ops);
    }
    this.#learn(ops);
  }

  /** The kernel's time (send and answers) of every commit that reached it, ms. */
  get kernelMs(): number {
    return this.#kernelMs;
  }

  async list(family: Family, table: string): Promise<TableListing | undefined> {
    const fam = FAMILY_NUMBER[family];
    if (fam === undefined) throw Object.assign(new RangeError(`unknown family ${JSON.stringify(family)}`), { code: 'ERR_NFT_FAMILY' });
    const bytes = await this.#addon.list(fam, table, this.#options);
    if (!bytes) {
      this.#forgetTable(family, table);
      return undefined;
    }
    const decoded = decodeListing(bytes, family);
    this.lastUnreadable = decoded.unreadable;
    this.#forgetTable(family, table);
    for (const c of decoded.listing.sets) this.#containers.set(key(c.family, c.table, c.name), c);
    return decoded.listing;
  }

  /**
   * Gives native memory the process no longer uses back to the OS (malloc's
   * free pages, in every thread's arena). The addon already does so after a
   * large commit; this is for the agent once V8 has collected after a large
   * sync, which frees array buffers and compiler zones into those arenas.
   */
  releaseMemory(): void {
    this.#addon.trimMemory();
  }

  /** The ruleset generation id (changes with every committed transaction). */
  generation(): Promise<number> {
    return this.#addon.generation(this.#options);
  }

  #forgetTable(family: Family, table: string): void {
    const prefix = `${family}\0${table}\0`;
    for (const k of [...this.#containers.keys()]) if (k.startsWith(prefix)) this.#containers.delete(k);
  }

  #learn(ops: readonly Operation[]): void {
    for (const { verb, object: o } of ops) {
      if (o.kind === 'set' || o.kind === 'map') {
        if (verb === 'add' || verb === 'create') this.#containers.set(key(o.family, o.table, o.name), o);
        else if (verb === 'delete' || verb === 'destroy') this.#containers.delete(key(o.family, o.table, o.name));
      } else if (o.kind === 'table' && (verb === 'delete' || verb === 'destroy')) {
        this.#forgetTable(o.family, o.name);
      }
    }
  }
}

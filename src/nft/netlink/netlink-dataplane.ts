// The Dataplane over the netlink addon: commit encodes the operations into one
// batch (a full sync's into pieces the addon builds as they come) and sends it
// as one transaction (a first start's stageable operations as several, see
// Transaction.stageable); list reads a table back and raises it
// into our objects. Sets and maps this dataplane has committed or listed are
// remembered, because element bytes depend on their key types.

import { constants as osConstants } from 'node:os';
import {
  loadNative,
  type NativeAddon,
  type NativeBatchStream,
  type NativeBatchStreamConstructor,
  type NativeCommitResult,
  type NativeCommitTiming,
} from '../../native/addon.ts';
import { NftCommitError, type Dataplane, type OperationFailure, type TableListing } from '../dataplane.ts';
import { type ContainerLookup, encodeOperationPieces, encodeOperationStream, encodeOperations, type PieceSink } from './encode.ts';
import { FAMILY_NUMBER, UDATA_COMMENT } from './kernel-constants.ts';
import { decodeListing, type DecodedListing } from './decode-listing.ts';
import { udataComment } from './listing-reader.ts';
import type { Family, ListOptions, NftMap, NftSet, Operation, Table } from '../objects.ts';
import { NftInvalidError, Transaction } from '../transaction.ts';
import { type BufferAllocator, ByteWriter } from './wire.ts';

export interface NetlinkDataplaneOptions {
  /** Network namespace to program, e.g. /var/run/netns/NAME. */
  netns?: string;
  /** The addon; loaded with loadNative() when absent. */
  addon?: NativeAddon;
  /** Bytes of batch per stage of a staged commit (Transaction.stageable); STAGE_BYTES by default. */
  stageBytes?: number;
}

/** Where the last commit's time went, in milliseconds (for benchmarks and metrics). */
export interface CommitStats extends NativeCommitTiming {
  operations: number;
  /** Encoding them into one batch buffer. */
  encodeMs: number;
  /** The addon call on the JS thread: copying the batch and queueing the work. */
  handoffMs: number;
  /** From the call to the kernel's answer. */
  totalMs: number;
  batchBytes: number;
  /** Of batchBytes, given back to the OS by the addon while it built the messages. */
  batchReleasedBytes: number;
  messages: number;
  /** The batches it was handed over in (a generated transaction's pieces, see #handOffInPieces). */
  pieces: number;
  /** The transactions the kernel was sent: more than one for a staged commit (Transaction.stageable). */
  transactions: number;
}

const SMALL_BATCH = 1 << 16;
const LARGE_BATCH = 4 << 20;
/**
 * A generated transaction is handed over in pieces of this size: the addon
 * builds a piece's messages while the next is encoded, so that little of its
 * building is left once the last is (at 10k Services 16 pieces).
 */
const PIECE_BYTES = 1 << 20;
/**
 * A staged commit's stages (Transaction.stageable), a piece each: the kernel
 * starts on the first as soon as it is encoded (a cold start's batch at 10k
 * Services is 17 transactions, at 100k 160), and spent no more on small
 * transactions than on larger ones where measured (bench/RESULTS.md).
 */
const STAGE_BYTES = PIECE_BYTES;
/** Netlink bytes foreseen per operation of a streamed transaction, the send buffer's first size (a batch takes ~67 at 100k Services). */
const NETLINK_BYTES_PER_OP = 128;

const ERRNO_NAME = new Map<number, string>(Object.entries(osConstants.errno).map(([k, v]) => [v, k]));

function errnoName(errno: number): string {
  return ERRNO_NAME.get(errno) ?? `E${errno}`;
}

function key(family: Family, table: string, name: string): string {
  return `${family}\0${table}\0${name}`;
}

/**
 * The encoder (NftEncodeError: an element of a set it does not know...) and the
 * addon's allow-list (NativeBatchError) refuse an operation with an error that
 * carries its `index`. As an NftCommitError it is traced to its owner like a
 * kernel refusal; undefined for any other error.
 */
function builderFailure(e: unknown, ops: readonly Operation[]): NftCommitError | undefined {
  const err = e as { message?: unknown; errno?: unknown; index?: unknown };
  const index = err?.index;
  if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= ops.length) return undefined;
  const errno = typeof err.errno === 'number' ? err.errno : osConstants.errno.EINVAL;
  // Both say "operation N: why"; the failure names the operation by its index already.
  const message = String(err.message).replace(/^operation \d+: /, '');
  return new NftCommitError([{ index, errno, code: errnoName(errno), message }], ops);
}

/**
 * What a hand-off throws when encoding or handing over fails, and a commit
 * when the addon refuses its batch: an invalid operation as it is, any
 * other refusal as the NftCommitError naming its operation when it names one.
 */
function handOffFailure(e: unknown, tx: Transaction): unknown {
  return e instanceof NftInvalidError ? e : (builderFailure(e, tx.ops()) ?? e);
}

/**
 * Plain buffers up to LARGE_BATCH (an incremental sync's batch, copied by the
 * addon's commit and the writer reused), the addon's beyond: a full sync's
 * batch is then taken by the commit, not copied, and never exists twice. An
 * addon without allocateBatch, or a runtime that refuses its buffers, gets
 * plain ones throughout.
 */
function batchAllocator(addon: NativeAddon, largeFrom = LARGE_BATCH): BufferAllocator {
  let external = typeof addon.allocateBatch === 'function';
  return (size) => {
    if (external && size > largeFrom) {
      try {
        return new Uint8Array(addon.allocateBatch(size));
      } catch (e) {
        if ((e as { code?: unknown })?.code !== 'ERR_NO_EXTERNAL_BUFFERS') throw e;
        external = false;
      }
    }
    return new Uint8Array(size);
  };
}

/**
 * A generated transaction's pieces into `stream`, cut into transactions of
 * about `stageBytes` while the operations so far are among its first
 * `stageable` (Transaction.stageable); the rest, and all of one that has
 * none, is the last. The stream's thread sends each once it is built, the
 * one before it landed, while the encoding goes on.
 */
export function stagedPieces(
  stream: Pick<NativeBatchStream, 'push' | 'cut'>,
  o: { pieceBytes: number; stageBytes: number; stageable: number; count: number },
): PieceSink {
  let bytes = 0;
  return {
    pieceBytes: o.pieceBytes,
    push(piece, encoded) {
      // Read first: a piece in the addon's memory is taken by the push, its views emptied.
      bytes += piece.length;
      stream.push(piece);
      if (bytes >= o.stageBytes && encoded <= o.stageable && encoded < o.count) {
        stream.cut();
        bytes = 0;
      }
    },
  };
}

/** A transaction handed to the addon: its answer to come, and what the commit's end needs. */
interface HandedOff {
  pending: Promise<NativeCommitResult>;
  encodedAt: number;
  handedAt: number;
  batchBytes: number;
  containerChanges: Operation[];
}

export class NetlinkDataplane implements Dataplane {
  readonly #addon: NativeAddon;
  readonly #options: { netns?: string };
  readonly #containers = new Map<string, NftSet | NftMap>();
  /** The sets and maps the kernel holds, as far as this dataplane knows: what encoding elements needs. */
  readonly #lookup: ContainerLookup = (f, t, n) => this.#containers.get(key(f, t, n));
  // The writer a commit encodes into. An incremental sync's batch is copied by
  // the addon before commit() returns, so the writer is free again at once (a
  // commit that starts meanwhile, as commits are not serialised here, takes a
  // fresh one only while another is encoding). A full sync's batch is written
  // into the addon's memory and taken by the commit (see batchAllocator); its
  // writer is done with, and a writer grown past LARGE_BATCH is not kept
  // either: keeping it for the next full sync, an hour later, would cost far
  // more resident memory than allocating it again costs time.
  #writer: ByteWriter | undefined;
  /** Where writers get buffers: past LARGE_BATCH, the addon's, which its commit takes instead of copying. */
  readonly #allocate: BufferAllocator;
  /** Where a streamed transaction's pieces get theirs: always the addon's. */
  readonly #allocatePiece: BufferAllocator;
  readonly #stageBytes: number;
  /** Rules that the last list() could not raise. */
  lastUnreadable: DecodedListing['unreadable'] = [];
  /** Timings of the last commit that reached the kernel. */
  lastCommit: CommitStats | undefined;
  #kernelMs = 0;
  #kernelTransactions = 0;

  constructor(options: NetlinkDataplaneOptions = {}) {
    this.#addon = options.addon ?? loadNative();
    this.#options = options.netns ? { netns: options.netns } : {};
    this.#allocate = batchAllocator(this.#addon);
    this.#allocatePiece = batchAllocator(this.#addon, 0);
    this.#stageBytes = options.stageBytes ?? STAGE_BYTES;
    this.#writer = new ByteWriter(SMALL_BATCH, this.#allocate);
  }

  begin(): Transaction {
    return new Transaction(this.#lookup);
  }

  async commit(tx: Transaction): Promise<void> {
    if (tx.error) throw tx.error;
    if (tx.length === 0) return;
    const t0 = performance.now();
    // Nothing of the operations is held across the wait (a full sync's are generated,
    // see Transaction.queueGenerated), and an async function's frame keeps
    // its locals while it waits, used or not: what the end needs is taken by a
    // synchronous function, whose frame is gone when it returns.
    const handed = this.#handOff(tx);
    const result = await handed.pending.catch((e: unknown) => {
      throw handOffFailure(e, tx);
    });
    this.#kernelMs += result.timing.sendMs + result.timing.receiveMs;
    this.#kernelTransactions += result.transactions;
    this.lastCommit = {
      operations: tx.length,
      encodeMs: handed.encodedAt - t0,
      handoffMs: handed.handedAt - handed.encodedAt,
      totalMs: performance.now() - t0,
      batchBytes: handed.batchBytes,
      batchReleasedBytes: result.releasedBytes,
      messages: result.messages,
      pieces: result.pieces,
      transactions: result.transactions,
      ...result.timing,
    };
    if (result.failures.length > 0) {
      const failures: OperationFailure[] = result.failures.map((f) => ({
        index: f.index,
        errno: f.errno,
        code: errnoName(f.errno),
        message: f.message,
      }));
      throw new NftCommitError(failures, tx.ops());
    }
    this.#learn(handed.containerChanges);
  }

  /**
   * Encodes the transaction and hands the batch to the addon's worker;
   * synchronous, so its locals end here. Generated operations (a full sync)
   * are checked and encoded as they are made, none kept; an invalid one
   * throws its NftInvalidError once all are checked, and nothing is sent.
   */
  #handOff(tx: Transaction): HandedOff {
    if (tx.generated && this.#addon.BatchStream) return this.#handOffInPieces(tx, this.#addon.BatchStream);
    const writer = this.#writer ?? new ByteWriter(SMALL_BATCH, this.#allocate);
    this.#writer = undefined;
    try {
      const { bytes, containerChanges } = tx.generated
        ? encodeOperationStream(tx.items(), tx.length, this.#lookup, writer)
        : encodeOperations(tx.ops(), this.#lookup, writer);
      const encodedAt = performance.now();
      // Read first: a batch in the addon's memory is taken by the commit, its views emptied.
      const batchBytes = bytes.length;
      // The allow-list throws here, synchronously, naming the operation.
      const pending = this.#addon.commit(bytes, this.#options);
      return { pending, encodedAt, handedAt: performance.now(), batchBytes, containerChanges };
    } catch (e) {
      throw handOffFailure(e, tx);
    } finally {
      if (!writer.taken && writer.capacity <= LARGE_BATCH) this.#writer ??= writer;
    }
  }

  /**
   * A generated transaction (a full sync) handed over in pieces as it is
   * encoded: the addon checks and builds each piece's messages on a thread
   * of its own meanwhile, and sends the whole as one transaction once the
   * last is built. At 100k Services that building is 1.2-1.5 s which
   * otherwise follows the encoding. The built messages are then all there
   * when the encoding ends, as the batch was at its hand-off: at 44k
   * Services x 1 endpoint the cold start's VmHWM is 30-50 MiB higher
   * (bench/RESULTS.md). Its stageable operations (a first start's) are
   * sent a piece at a time instead, each transaction's messages freed once
   * it has landed (stagedPieces).
   */
  #handOffInPieces(tx: Transaction, Stream: NativeBatchStreamConstructor): HandedOff {
    const expected = tx.length * NETLINK_BYTES_PER_OP;
    // A stage's messages take about as many bytes as its batch.
    const stream = new Stream(this.#options, tx.stageable > 0 ? Math.min(expected, 2 * this.#stageBytes) : expected);
    try {
      const sink = stagedPieces(stream, {
        pieceBytes: PIECE_BYTES,
        stageBytes: this.#stageBytes,
        stageable: tx.stageable,
        count: tx.length,
      });
      const { bytes, containerChanges } = encodeOperationPieces(tx.items(), tx.length, this.#lookup, sink, this.#allocatePiece);
      const encodedAt = performance.now();
      const pending = stream.commit();
      return { pending, encodedAt, handedAt: performance.now(), batchBytes: bytes, containerChanges };
    } catch (e) {
      // Returns once a stage being sent has landed: nothing committed after this can be overtaken by one.
      stream.abort();
      throw handOffFailure(e, tx);
    }
  }

  /** The kernel's time (send and answers) of every commit that reached it, ms. */
  get kernelMs(): number {
    return this.#kernelMs;
  }

  /** The transactions those commits sent. */
  get kernelTransactions(): number {
    return this.#kernelTransactions;
  }

  async list(family: Family, table: string, options?: ListOptions): Promise<TableListing | undefined> {
    const fam = FAMILY_NUMBER[family];
    if (fam === undefined) throw Object.assign(new RangeError(`unknown family ${JSON.stringify(family)}`), { code: 'ERR_NFT_FAMILY' });
    const skip = options?.skipElementsOf ?? [];
    const bytes = await this.#addon.list(fam, table, this.#options, skip);
    if (!bytes) {
      this.#forgetTable(family, table);
      return undefined;
    }
    const decoded = decodeListing(bytes, family, options);
    const notRead = decoded.listing.sets.filter((s) => skip.includes(s.name)).map((s) => s.name);
    if (notRead.length > 0) decoded.listing.elementsNotRead = notRead;
    this.lastUnreadable = decoded.unreadable;
    this.#forgetTable(family, table);
    for (const c of decoded.listing.sets) this.#containers.set(key(c.family, c.table, c.name), c);
    return decoded.listing;
  }

  async table(family: Family, table: string): Promise<Table | undefined> {
    const fam = FAMILY_NUMBER[family];
    if (fam === undefined) throw Object.assign(new RangeError(`unknown family ${JSON.stringify(family)}`), { code: 'ERR_NFT_FAMILY' });
    const userdata = await this.#addon.tableUserdata(fam, table, this.#options);
    if (userdata === null) return undefined;
    const comment = udataComment(userdata, UDATA_COMMENT.table);
    return comment === undefined ? { kind: 'table', family, name: table } : { kind: 'table', family, name: table, comment };
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

  #learn(changes: readonly Operation[]): void {
    for (const { verb, object: o } of changes) {
      if (o.kind === 'set' || o.kind === 'map') {
        if (verb === 'add' || verb === 'create') this.#containers.set(key(o.family, o.table, o.name), o);
        else if (verb === 'delete' || verb === 'destroy') this.#containers.delete(key(o.family, o.table, o.name));
      } else if (o.kind === 'table' && (verb === 'delete' || verb === 'destroy')) {
        this.#forgetTable(o.family, o.name);
      }
    }
  }
}

// The Dataplane over the netlink addon: commit encodes the operations into one
// batch and sends it as one transaction; list reads a table back and raises it
// into our objects. Sets and maps this dataplane has committed or listed are
// remembered, because element bytes depend on their key types.

import { constants as osConstants } from 'node:os';
import { loadNative, type NativeAddon } from '../native.ts';
import { NftCommitError, type Dataplane, type OperationFailure, type TableListing } from './dataplane.ts';
import { encodeOperations } from './encode.ts';
import { FAMILY_NUMBER } from './kernel-constants.ts';
import { decodeListing, type DecodedListing } from './listing.ts';
import type { Family, NftMap, NftSet, Operation } from './objects.ts';
import { validateOperations } from './transaction.ts';

export interface NetlinkDataplaneOptions {
  /** Network namespace to program, e.g. /var/run/netns/NAME. */
  netns?: string;
  /** The addon; loaded with loadNative() when absent. */
  addon?: NativeAddon;
  /** Check every operation before encoding (default true). */
  validate?: boolean;
}

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
  /** Rules that the last list() could not raise. */
  lastUnreadable: DecodedListing['unreadable'] = [];

  constructor(options: NetlinkDataplaneOptions = {}) {
    this.#addon = options.addon ?? loadNative();
    this.#options = options.netns ? { netns: options.netns } : {};
    this.#validate = options.validate ?? true;
  }

  async commit(ops: readonly Operation[]): Promise<void> {
    if (ops.length === 0) return;
    if (this.#validate) validateOperations(ops, [...this.#containers.values()]);
    const { bytes } = encodeOperations(ops, (f, t, n) => this.#containers.get(key(f, t, n)));
    const result = await this.#addon.commit(bytes, this.#options);
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

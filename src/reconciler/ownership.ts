// Which tables are ours. Every table we create carries a mark in its comment
// (the table's userdata, NFTA_TABLE_USERDATA, which nft 1.0.6 lists as
// `comment "..."`) naming us and the format of what we put in it. We replace,
// adopt or delete a table only when it bears that mark: a table of the same
// name without it belongs to someone else and is never touched.
//
// The format version says whether a listing of the table can be adopted: a
// table written by an agent of another format (older, or newer after a
// downgrade) is replaced atomically instead.

import type { Table } from '../nft/objects.ts';

/** Bumped whenever the shape of what we render changes in a way adoption must not trust. */
export const TABLE_FORMAT_VERSION = 1;

const MARK = /^managed by kube-nft-proxy \(table format (\d{1,6})\)$/;
/** What tables carried before the mark had a version. */
const LEGACY_MARK = 'rules for kube-nft-proxy';

/** The comment of every table we create. */
export function ownershipMark(version: number = TABLE_FORMAT_VERSION): string {
  return `managed by kube-nft-proxy (table format ${version})`;
}

export type TableOwnership =
  | { kind: 'absent' }
  /** Ours; `version` 0 for tables from before the versioned mark. */
  | { kind: 'ours'; version: number }
  | { kind: 'foreign'; comment?: string };

/** Whose a listed table is (undefined: there is none). */
export function tableOwnership(table: Table | undefined): TableOwnership {
  if (table === undefined) return { kind: 'absent' };
  const comment = table.comment;
  if (comment === LEGACY_MARK) return { kind: 'ours', version: 0 };
  const m = comment === undefined ? null : MARK.exec(comment);
  if (m) return { kind: 'ours', version: Number(m[1]) };
  return comment === undefined ? { kind: 'foreign' } : { kind: 'foreign', comment };
}

/** A table of our name exists but is not ours: we neither replace nor delete it. */
export class ForeignTableError extends Error {
  readonly code = 'ERR_FOREIGN_TABLE';
  readonly family: string;
  readonly table: string;
  constructor(family: string, table: string, comment: string | undefined) {
    super(
      `table ${family} ${table} exists and was not created by kube-nft-proxy (its comment is ` +
        `${comment === undefined ? 'absent' : JSON.stringify(comment)}, not ` +
        `${JSON.stringify(ownershipMark())}); ` +
        'refusing to replace it: choose another name with --table, or remove that table yourself',
    );
    this.name = 'ForeignTableError';
    this.family = family;
    this.table = table;
  }
}

// The start-up check that the tables named by --table are ours (or absent),
// and the cleanup that removes only ours. See src/reconciler/ownership.ts.

import type { Dataplane } from '../nft/dataplane.ts';
import type { Family, Table } from '../nft/objects.ts';
import { ForeignTableError, TABLE_FORMAT_VERSION, type TableOwnership, tableOwnership } from '../reconciler/ownership.ts';

const FAMILIES: readonly Family[] = ['ip', 'ip6'];

async function readTable(dataplane: Dataplane, family: Family, name: string): Promise<Table | undefined> {
  if (dataplane.table) return dataplane.table(family, name);
  return (await dataplane.list(family, name))?.table;
}

/** Whose each family's table of that name is. */
export async function tableOwnerships(dataplane: Dataplane, name: string): Promise<Map<Family, TableOwnership>> {
  const out = new Map<Family, TableOwnership>();
  for (const family of FAMILIES) out.set(family, tableOwnership(await readTable(dataplane, family, name)));
  return out;
}

/** Throws ForeignTableError when a table of that name exists without our mark. */
export async function assertTablesOurs(dataplane: Dataplane, name: string): Promise<Map<Family, TableOwnership>> {
  const owners = await tableOwnerships(dataplane, name);
  for (const [family, o] of owners) if (o.kind === 'foreign') throw new ForeignTableError(family, name, o.comment);
  return owners;
}

/** What the first sync may do with what the kernel holds: adopt tables of ours, or commit in stages where there are none. */
export interface TablesAtStart {
  adopt: boolean;
  absent: boolean;
}

export function tablesAtStart(owners: ReadonlyMap<Family, TableOwnership>): TablesAtStart {
  const all = [...owners.values()];
  return {
    adopt: all.some((o) => o.kind === 'ours' && o.version === TABLE_FORMAT_VERSION),
    absent: all.every((o) => o.kind === 'absent'),
  };
}

/** Deletes the tables of that name that bear our mark; returns the foreign ones, left alone. */
export async function removeOurTables(
  dataplane: Dataplane,
  name: string,
): Promise<{ removed: Family[]; foreign: Array<{ family: Family; comment?: string }> }> {
  const owners = await tableOwnerships(dataplane, name);
  const removed: Family[] = [];
  const foreign: Array<{ family: Family; comment?: string }> = [];
  for (const [family, o] of owners) {
    if (o.kind === 'ours') removed.push(family);
    else if (o.kind === 'foreign') foreign.push(o.comment === undefined ? { family } : { family, comment: o.comment });
  }
  // destroy: a table gone since it was read is fine.
  if (removed.length > 0)
    await dataplane.commit(
      dataplane.begin().queueAll(removed.map((family) => ({ verb: 'destroy', object: { kind: 'table', family, name } }))),
    );
  return { removed, foreign };
}

// Flowtable devices that left under their names after they were committed
// (the agent's link follower says which): the kernel has dropped a device that
// went away and keeps a renamed one under its new name, so the applied
// ruleset's device list no longer says what the kernel holds. Each report is
// kept until a commit planned with it lands (a reassert, which only adds,
// settles the gone devices and not the renamed ones); one that arrives later
// (while a commit is on its way) waits for the next. Also here: the operations
// that change a flowtable's devices in place, which the diff and the adoption share.

import type { Flowtable, Operation } from '../nft/objects.ts';

/**
 * What takes a flowtable that holds `held` to `f`'s devices in place: a delete
 * naming the devices that leave, and an add when some join (an add of a
 * flowtable adds the devices it lacks and leaves the others).
 */
export function flowtableDeviceChanges(held: readonly string[], f: Flowtable): { leave?: Operation; join?: Operation } {
  const changes: { leave?: Operation; join?: Operation } = {};
  const leaving = held.filter((d) => !f.devices.includes(d));
  if (leaving.length > 0) changes.leave = { verb: 'delete', object: { ...f, devices: leaving } };
  if (f.devices.some((d) => !held.includes(d))) changes.join = { verb: 'add', object: f };
  return changes;
}

/** The delete of a whole flowtable: one that names devices takes only those out. */
export function flowtableDelete(f: Flowtable): Operation {
  return { verb: 'delete', object: { ...f, devices: [] } };
}

/** Devices that left under their names: as the link follower reports them, and as a plan takes them. */
export interface DeviceDepartures {
  gone: readonly string[];
  renamed: readonly string[];
}

export const NO_DEPARTURES: DeviceDepartures = { gone: [], renamed: [] };

export class DepartedDeviceLog {
  /** By device name: renamed (else gone), and the report's number. */
  readonly #reports = new Map<string, { renamed: boolean; seq: number }>();
  #seq = 0;
  /** The last report the latest plan saw. */
  #planned = 0;
  /** Whether the latest plan settles renames (a reassert, which only adds, does not). */
  #plannedRenames = true;

  note(departed: DeviceDepartures): void {
    for (const name of departed.gone) this.#reports.set(name, { renamed: false, seq: ++this.#seq });
    for (const name of departed.renamed) this.#reports.set(name, { renamed: true, seq: ++this.#seq });
  }

  /** What a plan starts from; `settlesRenames`: whether its landing settles the renames it saw too. */
  forPlan(settlesRenames = true): DeviceDepartures | undefined {
    this.#planned = this.#seq;
    this.#plannedRenames = settlesRenames;
    if (this.#reports.size === 0) return undefined;
    const gone: string[] = [];
    const renamed: string[] = [];
    for (const [name, r] of this.#reports) (r.renamed ? renamed : gone).push(name);
    return { gone, renamed };
  }

  /** The latest plan's commit landed: the applied ruleset now says what the reports it saw said. */
  landed(): void {
    for (const [name, r] of this.#reports) if (r.seq <= this.#planned && (this.#plannedRenames || !r.renamed)) this.#reports.delete(name);
  }
}

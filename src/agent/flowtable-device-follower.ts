// The flowtable's device list over time, from the node's link states (KEP-4963).
//
// Removals apply at once: a commit that names a device that no longer exists
// fails whole with ENOENT, so a vanished (or renamed-away) name must leave the
// desired state before the next commit.
//
// Additions wait until the links have been quiet for `settleMs` (at most
// `maxWaitMs` after the first pending one, so that steady churn cannot starve
// them): a new interface often passes through a transient name first (`ip link
// set X netns N name Y` shows up as a link named X in N, renamed at once; CNI
// plugins and udev rename too). Adding it at the first sight would commit a
// name that is gone by the time the kernel reads it: ENOENT, a failed sync and
// a retry a second later. The kernel accepts a device in any state, so waiting
// for the name to settle costs nothing but that short delay.
//
// The first state (the monitor's initial dump) is taken as is.
//
// The kernel's flowtable holds devices, not names: when a device in it goes
// away, the kernel drops it by itself; when it is renamed, it stays under its
// new name. A decision says which devices it removes for either reason, so
// that the reconciler asks the kernel for nothing it has done already (and a
// new device that takes a departed one's name is added as the new one it is).

import { asyncScheduler, Observable, type SchedulerLike, type Subscription } from '../rx.ts';
import { flowtableDevices, type FlowtableDeviceFilter } from '../links/flowtable-devices.ts';
import type { LinkMap } from '../links/link-state.ts';
import type { DeviceDepartures } from '../reconciler/departed-devices.ts';

export interface DeviceFollowerOptions {
  filter: FlowtableDeviceFilter;
  /** At most this many devices (the first ones in sorted order). */
  maxDevices: number;
  /** Quiet time before new interfaces join. */
  settleMs: number;
  /** Longest wait for a new interface under continuous link events. */
  maxWaitMs: number;
  scheduler?: SchedulerLike;
}

export interface DeviceDecision {
  /** Sorted, capped at maxDevices. */
  devices: string[];
  /** Interfaces the filter selected, before the cap. */
  matched: number;
  /** Devices of the previous decision whose link is gone (present only when there are some). */
  gone?: readonly string[];
  /** Devices of the previous decision whose link has another name now (present only when there are some). */
  renamed?: readonly string[];
}

export const DEFAULT_DEVICE_SETTLE_MS = 250;
export const DEFAULT_DEVICE_MAX_WAIT_MS = 2_000;

function select(links: LinkMap, o: DeviceFollowerOptions): DeviceDecision {
  const all = flowtableDevices(links, o.filter);
  return { devices: all.length > o.maxDevices ? all.slice(0, o.maxDevices) : all, matched: all.length };
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function indexByName(links: LinkMap): Map<string, number> {
  const byName = new Map<string, number>();
  for (const l of links.values()) byName.set(l.name, l.index);
  return byName;
}

/** Emits a decision whenever the devices to commit change; completes and errors with links$. */
export function followFlowtableDevices(links$: Observable<LinkMap>, o: DeviceFollowerOptions): Observable<DeviceDecision> {
  const scheduler = o.scheduler ?? asyncScheduler;
  return new Observable<DeviceDecision>((subscriber) => {
    let emitted: string[] | undefined;
    /** The link each emitted device was when it was emitted. */
    let emittedIndex = new Map<string, number>();
    let latest: LinkMap = new Map();
    let wanted: DeviceDecision | undefined;
    let pendingSince: number | undefined;
    let timer: Subscription | undefined;

    const emit = (devices: string[], matched: number, departed?: DeviceDepartures) => {
      if (emitted !== undefined && sameList(emitted, devices)) return;
      emitted = devices;
      // Removals keep their links; only a device that joins is looked up by name.
      const before = emittedIndex;
      const byName = devices.every((d) => before.has(d)) ? undefined : indexByName(latest);
      emittedIndex = new Map(devices.map((d) => [d, before.get(d) ?? byName!.get(d)!]));
      const decision: DeviceDecision = { devices, matched };
      if (departed?.gone.length) decision.gone = departed.gone;
      if (departed?.renamed.length) decision.renamed = departed.renamed;
      subscriber.next(decision);
    };
    const cancelTimer = () => {
      timer?.unsubscribe();
      timer = undefined;
    };
    const addPending = () => {
      timer = undefined;
      pendingSince = undefined;
      if (wanted) emit(wanted.devices, wanted.matched);
    };

    const source = links$.subscribe({
      next(links) {
        latest = links;
        const w = select(links, o);
        wanted = w;
        if (emitted === undefined) {
          emit(w.devices, w.matched);
          return;
        }
        const current = emitted;
        // A device that left under its name, or whose name another device took: out now (a newcomer under
        // that name joins like any new interface, once settled).
        const gone: string[] = [];
        const renamed: string[] = [];
        const kept: string[] = [];
        for (const d of current) {
          const now = links.get(emittedIndex.get(d)!);
          if (!now) gone.push(d);
          else if (now.name !== d) renamed.push(d);
          else if (w.devices.includes(d)) kept.push(d);
        }
        if (kept.length < current.length) emit(kept, w.matched, { gone, renamed });
        cancelTimer();
        if (!w.devices.some((d) => !kept.includes(d))) {
          pendingSince = undefined;
          return;
        }
        const now = scheduler.now();
        pendingSince ??= now;
        timer = scheduler.schedule(addPending, Math.max(0, Math.min(o.settleMs, pendingSince + o.maxWaitMs - now)));
      },
      error(e) {
        cancelTimer();
        subscriber.error(e);
      },
      complete() {
        cancelTimer();
        subscriber.complete();
      },
    });
    return () => {
      cancelTimer();
      source.unsubscribe();
    };
  });
}

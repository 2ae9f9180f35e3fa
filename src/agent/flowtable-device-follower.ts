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

import { asyncScheduler, Observable, type SchedulerLike, type Subscription } from 'rxjs';
import { flowtableDevices, type FlowtableDeviceFilter } from '../links/flowtable-devices.ts';
import type { LinkMap } from '../links/link-state.ts';

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

/** Emits a decision whenever the devices to commit change; completes and errors with links$. */
export function followFlowtableDevices(links$: Observable<LinkMap>, o: DeviceFollowerOptions): Observable<DeviceDecision> {
  const scheduler = o.scheduler ?? asyncScheduler;
  return new Observable<DeviceDecision>((subscriber) => {
    let emitted: string[] | undefined;
    let wanted: DeviceDecision | undefined;
    let pendingSince: number | undefined;
    let timer: Subscription | undefined;

    const emit = (devices: string[], matched: number) => {
      if (emitted !== undefined && sameList(emitted, devices)) return;
      emitted = devices;
      subscriber.next({ devices, matched });
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
        const w = select(links, o);
        wanted = w;
        if (emitted === undefined) {
          emit(w.devices, w.matched);
          return;
        }
        const current = emitted;
        const kept = current.filter((d) => w.devices.includes(d));
        if (kept.length < current.length) emit(kept, w.matched);
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

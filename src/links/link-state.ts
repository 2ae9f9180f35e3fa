// The node's interfaces as a value, and the pure fold of rtnetlink batches into
// it. Tracked by ifindex: a rename is a change of the same link, and a new link
// that reuses a name is a different link.

import type { NativeLinkBatch, NativeLinkRecord, NativeResyncReason } from '../native/link-monitor-types.ts';

/** RFC 2863 operational state, as IFLA_OPERSTATE numbers it. */
export type OperState = 'unknown' | 'notpresent' | 'down' | 'lowerlayerdown' | 'testing' | 'dormant' | 'up';

const OPER_STATES: readonly OperState[] = ['unknown', 'notpresent', 'down', 'lowerlayerdown', 'testing', 'dormant', 'up'];

// <linux/if.h>
const IFF_UP = 0x1;
const IFF_LOOPBACK = 0x8;
const IFF_RUNNING = 0x40;
const IFF_LOWER_UP = 0x10000;

export interface LinkInfo {
  readonly index: number;
  readonly name: string;
  /** IFLA_INFO_KIND ("veth", "bridge", "vxlan", ...); null for devices without one (lo, most NICs). */
  readonly kind: string | null;
  /** IFF_UP: administratively up. */
  readonly up: boolean;
  /** IFF_RUNNING: operationally up. */
  readonly running: boolean;
  /** IFF_LOWER_UP: the lower layer (carrier, veth peer) is up. */
  readonly lowerUp: boolean;
  /** IFF_LOOPBACK. */
  readonly loopback: boolean;
  /** All IFF_* flags. */
  readonly flags: number;
  readonly mtu: number;
  readonly operState: OperState;
  /** ifindex of the bridge or bond this link is enslaved to. */
  readonly master: number | null;
}

export type LinkMap = ReadonlyMap<number, LinkInfo>;

export type LinkEvent =
  /** A full re-read of the kernel's links happened; the diff events that follow it describe what it changed. */
  | { readonly type: 'resync'; readonly reason: NativeResyncReason }
  | { readonly type: 'added'; readonly link: LinkInfo }
  /** Anything about the link changed, its name included (a rename keeps the index). */
  | { readonly type: 'changed'; readonly link: LinkInfo; readonly previous: LinkInfo }
  | { readonly type: 'removed'; readonly link: LinkInfo };

export interface LinkBatchResult {
  readonly links: LinkMap;
  /** What the batch changed, in order; empty when it changed nothing. */
  readonly events: readonly LinkEvent[];
}

export function toLinkInfo(rec: NativeLinkRecord): LinkInfo {
  return {
    index: rec.index,
    name: rec.name,
    kind: rec.kind === '' ? null : rec.kind,
    up: (rec.flags & IFF_UP) !== 0,
    running: (rec.flags & IFF_RUNNING) !== 0,
    lowerUp: (rec.flags & IFF_LOWER_UP) !== 0,
    loopback: (rec.flags & IFF_LOOPBACK) !== 0,
    flags: rec.flags >>> 0,
    mtu: rec.mtu,
    operState: OPER_STATES[rec.operState] ?? 'unknown',
    master: rec.master === 0 ? null : rec.master,
  };
}

function sameLink(a: LinkInfo, b: LinkInfo): boolean {
  return (
    a.index === b.index &&
    a.name === b.name &&
    a.kind === b.kind &&
    a.flags === b.flags &&
    a.mtu === b.mtu &&
    a.operState === b.operState &&
    a.master === b.master
  );
}

/**
 * Folds one batch into the state. `state` is undefined before the first
 * snapshot; changes without any snapshot then apply to an empty state.
 * Never mutates its input; returns the same map when nothing changed.
 */
export function applyLinkBatch(state: LinkMap | undefined, batch: NativeLinkBatch): LinkBatchResult {
  const events: LinkEvent[] = [];
  let next: Map<number, LinkInfo> | undefined;
  let current: LinkMap = state ?? new Map();

  if (batch.resync !== undefined) {
    events.push({ type: 'resync', reason: batch.resync });
    const snapshot = new Map<number, LinkInfo>();
    for (const rec of batch.links ?? []) snapshot.set(rec.index, toLinkInfo(rec));
    for (const [index, link] of [...current].sort(byIndex)) {
      if (!snapshot.has(index)) events.push({ type: 'removed', link });
    }
    for (const [index, link] of [...snapshot].sort(byIndex)) {
      const previous = current.get(index);
      if (previous === undefined) events.push({ type: 'added', link });
      else if (!sameLink(previous, link)) events.push({ type: 'changed', link, previous });
    }
    next = snapshot;
    current = snapshot;
  }

  for (const change of batch.changes) {
    const index = change.link.index;
    const previous = current.get(index);
    if (change.removed) {
      if (previous === undefined) continue;
      next ??= new Map(current);
      next.delete(index);
      events.push({ type: 'removed', link: previous });
    } else {
      const link = toLinkInfo(change.link);
      if (previous !== undefined && sameLink(previous, link)) continue;
      next ??= new Map(current);
      next.set(index, link);
      events.push(previous === undefined ? { type: 'added', link } : { type: 'changed', link, previous });
    }
    current = next;
  }

  // A snapshot always yields a new state (the first one must be seen even when empty).
  return { links: next ?? state ?? new Map(), events };
}

function byIndex(a: [number, LinkInfo], b: [number, LinkInfo]): number {
  return a[0] - b[0];
}

// Helpers for link tests against the real kernel: waiting on the monitor and
// reading the truth with `ip -j -d link` (iproute2 is the test oracle).

import { filter, firstValueFrom, timeout } from 'rxjs';
import type { NetNs } from '../helpers/netns.ts';
import type { LinkMonitor } from '../../src/links/link-monitor.ts';
import type { LinkMap } from '../../src/links/link-state.ts';

export interface OracleLink {
  index: number;
  name: string;
  kind: string | null;
  up: boolean;
  loopback: boolean;
}

export function oracleLinks(ns: NetNs): OracleLink[] {
  const out = JSON.parse(ns.exec('ip', ['-j', '-d', 'link', 'show'])) as Array<Record<string, any>>;
  return out
    .map((l) => ({
      index: l.ifindex as number,
      name: l.ifname as string,
      kind: (l.linkinfo?.info_kind as string | undefined) ?? null,
      up: (l.flags as string[]).includes('UP'),
      loopback: (l.flags as string[]).includes('LOOPBACK'),
    }))
    .sort((a, b) => a.index - b.index);
}

export function monitorView(links: LinkMap): OracleLink[] {
  return [...links.values()]
    .map((l) => ({ index: l.index, name: l.name, kind: l.kind, up: l.up, loopback: l.loopback }))
    .sort((a, b) => a.index - b.index);
}

/** The first state (current or coming) that satisfies pred; fails after ms with the last state seen. */
export async function until(mon: LinkMonitor, pred: (links: LinkMap) => boolean, what: string, ms = 10_000): Promise<LinkMap> {
  try {
    return await firstValueFrom(mon.links$.pipe(filter(pred), timeout(ms)));
  } catch (e) {
    const last = mon.links
      ? monitorView(mon.links)
          .map((l) => `${l.index}:${l.name}`)
          .join(' ')
      : 'none';
    throw new Error(`waiting for ${what}: ${(e as Error).message}; last state: ${last}`, { cause: e });
  }
}

export function byName(links: LinkMap, name: string) {
  return [...links.values()].find((l) => l.name === name);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

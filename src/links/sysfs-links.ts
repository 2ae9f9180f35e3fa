// The node's interfaces read once from /sys/class/net, as one LinkMap: the
// link source of a dry run, which must not load the addon (its rtnetlink
// monitor is native) yet should derive the flowtable's devices the way the
// agent does. sysfs shows the interfaces of the network namespace this process
// was started in, the same set the monitor's initial dump reports there.

import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { basename, join } from 'node:path';
import { BehaviorSubject, type Observable } from '../rx.ts';
import type { NativeLinkRecord } from '../native/link-monitor-types.ts';
import { toLinkInfo, type LinkInfo, type LinkMap } from './link-state.ts';

/** What the agent needs of a link monitor; LinkMonitor is one. */
export interface LinkSource {
  readonly links$: Observable<LinkMap>;
  start(): unknown;
  stop(): void;
}

// RFC 2863 names as sysfs spells them, numbered as IFLA_OPERSTATE does.
const OPER_STATE_NUMBER: Readonly<Record<string, number>> = {
  unknown: 0,
  notpresent: 1,
  down: 2,
  lowerlayerdown: 3,
  testing: 4,
  dormant: 5,
  up: 6,
};

function readText(dir: string, file: string): string | undefined {
  try {
    return readFileSync(join(dir, file), 'utf8').trim();
  } catch {
    return undefined;
  }
}

function readKind(dir: string): string {
  // rtnetlink's IFLA_INFO_KIND is not in sysfs; DEVTYPE names most virtual kinds (veth, bridge, vxlan...).
  const uevent = readText(dir, 'uevent') ?? '';
  return /^DEVTYPE=(.*)$/m.exec(uevent)?.[1] ?? '';
}

function readMaster(dir: string): number {
  try {
    const master = basename(readlinkSync(join(dir, 'master')));
    return Number(readText(join(dir, '..', master), 'ifindex') ?? 0);
  } catch {
    return 0;
  }
}

/** One record per interface under `root` (default /sys/class/net); an interface that vanishes mid-read is left out. */
export function readSysfsLinks(root = '/sys/class/net'): LinkMap {
  const links = new Map<number, LinkInfo>();
  for (const name of readdirSync(root)) {
    const dir = join(root, name);
    const index = Number(readText(dir, 'ifindex'));
    const flags = Number.parseInt(readText(dir, 'flags') ?? '', 16);
    if (!Number.isInteger(index) || index <= 0 || !Number.isInteger(flags)) continue;
    const record: NativeLinkRecord = {
      index,
      name,
      flags,
      kind: readKind(dir),
      mtu: Number(readText(dir, 'mtu') ?? 0),
      operState: OPER_STATE_NUMBER[readText(dir, 'operstate') ?? 'unknown'] ?? 0,
      master: readMaster(dir),
    };
    links.set(index, toLinkInfo(record));
  }
  return links;
}

/** A link source that reports `links` once and never changes. */
export function staticLinkSource(links: LinkMap): LinkSource {
  const links$ = new BehaviorSubject<LinkMap>(links);
  return {
    links$: links$.asObservable(),
    start: () => undefined,
    stop: () => links$.complete(),
  };
}

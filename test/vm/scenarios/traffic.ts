// TCP flows between the topology's namespaces, and what conntrack says about
// them in the router: the observations the offload scenarios are made of.

import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { NetNs } from '../../helpers/netns.ts';

export interface Flow {
  /** The client's source port, once conntrack has seen the connection. */
  port: number;
  /** Ends the flow with a FIN (socat closes its socket on SIGTERM). */
  close(): Promise<void>;
}

export interface ConntrackEntry {
  line: string;
  sport: number;
  dport: number;
  offloaded: boolean;
  /** Packets counted in the original direction (0 without conntrack accounting). */
  packets: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A TCP sink on the server that accepts any number of connections and discards the data. */
export function startSink(server: NetNs, port: number): ChildProcess {
  return server.spawn('socat', ['-u', `TCP-LISTEN:${port},reuseaddr,fork`, 'OPEN:/dev/null'], { stdio: 'ignore' });
}

/** conntrack -L in ns, TCP entries only, parsed just enough for the scenarios. */
export function conntrackTcp(ns: NetNs): ConntrackEntry[] {
  return ns
    .exec('conntrack', ['-L', '-p', 'tcp'])
    .split('\n')
    .filter((l) => l.startsWith('tcp'))
    .map((line) => ({
      line,
      // The first sport/dport pair is the original direction.
      sport: Number(/sport=(\d+)/.exec(line)?.[1]),
      dport: Number(/dport=(\d+)/.exec(line)?.[1]),
      offloaded: line.includes('[OFFLOAD]'),
      packets: Number(/packets=(\d+)/.exec(line)?.[1] ?? 0),
    }));
}

/** Packets a link in ns has sent. */
export function linkTxPackets(ns: NetNs, link: string): number {
  const stats = JSON.parse(ns.exec('ip', ['-j', '-s', 'link', 'show', link])) as Array<{ stats64: { tx: { packets: number } } }>;
  return stats[0]?.stats64.tx.packets ?? 0;
}

export interface FastPathLook {
  lines: Array<string | undefined>;
  /** The connection's [OFFLOAD] mark at the second look. */
  marked: boolean;
  /** Packets conntrack counted between the looks (original direction). */
  counted: number;
  /** Packets the router sent through `outLink` between the looks. */
  forwarded: number;
  onFastPath: boolean;
}

/**
 * Two looks at a connection through the router half a second apart (after `between`). It is on a
 * flowtable's fast path when the router forwards it while conntrack counts none of it (the scenarios'
 * flowtables have no `counter` flag): only a flowtable's ingress hook takes packets past conntrack here.
 * The [OFFLOAD] mark is reported, not required: the kernel keeps one such bit per connection, and
 * tearing down a stale flow of a re-created flowtable can clear it after the new flowtable took the
 * connection (seen once in CI: unmarked, 0 counted, 8,147 forwarded, conntrack's timeout set back by
 * that teardown).
 */
export async function fastPathLook(router: NetNs, sport: number, outLink: string, between: () => Promise<unknown> = async () => undefined) {
  const entryNow = () => conntrackTcp(router).find((e) => e.sport === sport);
  const [entry, sent] = [entryNow(), linkTxPackets(router, outLink)];
  await between();
  await sleep(500);
  const [later, sentLater] = [entryNow(), linkTxPackets(router, outLink)];
  const counted = (later?.packets ?? 0) - (entry?.packets ?? 0);
  const forwarded = sentLater - sent;
  const open = later !== undefined && entry !== undefined;
  const look: FastPathLook = {
    lines: [entry?.line, later?.line],
    marked: !!later?.offloaded,
    counted,
    forwarded,
    onFastPath: open && counted === 0 && forwarded > 100,
  };
  return look;
}

/** Polls until pred holds or the time is up; returns the last value either way. */
export async function pollFor<T>(read: () => T | Promise<T>, pred: (v: T) => boolean, timeoutMs: number, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let v = await read();
  while (!pred(v) && Date.now() < deadline) {
    await sleep(everyMs);
    v = await read();
  }
  return v;
}

async function flowOf(proc: ChildProcess, router: NetNs, dport: number, known: Set<number>): Promise<Flow> {
  const entries = await pollFor(
    () => conntrackTcp(router).filter((e) => e.dport === dport && !known.has(e.sport)),
    (es) => es.length > 0,
    10_000,
  );
  const entry = entries[0];
  if (!entry) {
    proc.kill('SIGKILL');
    throw new Error(`no connection to port ${dport} appeared in the router's conntrack table`);
  }
  return {
    port: entry.sport,
    async close() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = once(proc, 'exit');
      proc.kill('SIGTERM');
      await exited;
    },
  };
}

function sourcePorts(router: NetNs, dport: number): Set<number> {
  return new Set(
    conntrackTcp(router)
      .filter((e) => e.dport === dport)
      .map((e) => e.sport),
  );
}

/** A bulk stream client → server:port, as fast as it goes, until closed. */
export async function startLongFlow(client: NetNs, router: NetNs, serverIp: string, port: number): Promise<Flow> {
  const known = sourcePorts(router, port);
  const proc = client.spawn('socat', ['-u', 'OPEN:/dev/zero', `TCP:${serverIp}:${port}`], { stdio: 'ignore' });
  return flowOf(proc, router, port, known);
}

/** A connection that sends one line and then stays open and idle: a handful of packets. */
export async function startShortFlow(client: NetNs, router: NetNs, serverIp: string, port: number): Promise<Flow> {
  const known = sourcePorts(router, port);
  const proc = client.spawn('socat', ['-u', 'STDIN', `TCP:${serverIp}:${port}`], { stdio: ['pipe', 'ignore', 'ignore'] });
  proc.stdin!.write('hello\n');
  return flowOf(proc, router, port, known);
}

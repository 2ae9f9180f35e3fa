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

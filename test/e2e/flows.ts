// Long-lived flows for the conntrack tests: a UDP flow from a fixed source port
// (test/e2e/udp-flow.ts) and a TCP connection held open by socat, each from a
// namespace, with what came back so far.

import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { NetNs } from '../helpers/netns.ts';

const here = fileURLToPath(new URL('.', import.meta.url));

export interface Flow {
  /** Answers so far, one per line, oldest first. */
  answers(): string[];
  /** The backend name of the last answer, if any. */
  last(): string | undefined;
  stop(): Promise<void>;
}

async function started(child: ChildProcess, what: string): Promise<string[]> {
  const lines: string[] = [];
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    const parts = buf.split('\n');
    buf = parts.pop()!;
    lines.push(...parts.filter((l) => l !== ''));
  });
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  const deadline = Date.now() + 10_000;
  while (!lines.includes('started')) {
    if (child.exitCode !== null) throw new Error(`${what} exited: ${err}`);
    if (Date.now() > deadline) throw new Error(`${what} did not start: ${err}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  lines.splice(lines.indexOf('started'), 1);
  return lines;
}

function flowOf(child: ChildProcess, lines: string[]): Flow {
  return {
    answers: () => [...lines],
    last: () => lines.at(-1)?.split(' ')[0],
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await once(child, 'exit');
      }
    },
  };
}

/** A UDP flow from `sourcePort` to address:port, one datagram every intervalMs. */
export async function startUdpFlow(from: NetNs, address: string, port: number, sourcePort: number, intervalMs = 100): Promise<Flow> {
  const child = from.spawn(process.execPath, [`${here}udp-flow.ts`, address, String(port), String(sourcePort), String(intervalMs)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return flowOf(child, await started(child, 'udp flow'));
}

export interface TcpConnection extends Flow {
  /** Writes one line; an echo server sends it back. */
  send(line: string): void;
}

/** One TCP connection from `sourcePort`, held open (socat); answers are what the peer sent back. */
export async function startTcpConnection(from: NetNs, address: string, port: number, sourcePort: number): Promise<TcpConnection> {
  const target = address.includes(':') ? `TCP6:[${address}]:${port}` : `TCP4:${address}:${port}`;
  const conn = from.spawn('socat', ['-', `${target},sourceport=${sourcePort},reuseaddr`], { stdio: ['pipe', 'pipe', 'pipe'] });
  conn.stdin!.write('started\n');
  const lines = await started(conn, 'tcp connection');
  return { ...flowOf(conn, lines), send: (line) => conn.stdin!.write(`${line}\n`) };
}

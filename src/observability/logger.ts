// One JSON line per event on stdout (pino), as a DaemonSet's log collector expects.

import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string, destination: NodeJS.WritableStream = process.stdout): Logger {
  return pino({ name: 'kube-nft-proxy', level, base: { pid: process.pid } }, destination);
}

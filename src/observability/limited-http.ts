// HTTP servers that a slow or hostile client cannot grow without bound. Every
// server the agent opens (metrics, healthz, health-check node ports) is made
// here: a connection budget (shared by a group of servers, e.g. every
// health-check node port), a deadline for the request headers and for the
// whole request, a cap on header size, short keep-alive, and no request
// bodies. Measured before these limits: 5,000 slow-header connections to
// /metrics doubled the agent's RSS for 85 s.

import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

// Not `import from 'node:http'`: an ES module import of a built-in reads every
// export, and node:http's WebSocket, MessageEvent and CloseEvent getters then
// load Node's own undici, which the agent never uses (~2 MiB of RSS).
const { createServer } = process.getBuiltinModule('node:http');

export interface HttpLimits {
  /** Headers must arrive within this (Node's headersTimeout). */
  headersTimeoutMs: number;
  /** The whole request, headers included (Node's requestTimeout). */
  requestTimeoutMs: number;
  /** An idle kept-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** Request headers larger than this are refused with 431. */
  maxHeaderBytes: number;
}

/** Enough for any probe or scraper; a client slower than this is not one we serve. */
export const DEFAULT_HTTP_LIMITS: HttpLimits = {
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5_000,
  maxHeaderBytes: 8 * 1024,
};

/**
 * Open connections allowed over a group of servers. A connection past the
 * budget is closed as soon as it is accepted: probes retry, and a flood
 * cannot take more than the budget's sockets and parsers.
 */
export class ConnectionBudget {
  readonly max: number;
  #open = 0;
  #refused = 0;
  readonly #onRefused: (() => void) | undefined;
  constructor(max: number, onRefused?: () => void) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`a connection budget must be a positive integer, not ${max}`);
    this.max = max;
    this.#onRefused = onRefused;
  }
  get open(): number {
    return this.#open;
  }
  /** Connections closed at once because the budget was spent. */
  get refused(): number {
    return this.#refused;
  }
  /** Takes one connection into the budget, or closes it. */
  admit(socket: Socket): void {
    if (this.#open >= this.max) {
      this.#refused++;
      socket.destroy();
      this.#onRefused?.();
      return;
    }
    this.#open++;
    socket.once('close', () => this.#open--);
  }
}

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** A request that carries a body: these endpoints take none. */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  if (length !== undefined && length !== '0') return true;
  return req.headers['transfer-encoding'] !== undefined;
}

/** An HTTP server with the limits above; handler sees only requests without a body. */
export function createLimitedServer(handler: RequestHandler, budget: ConnectionBudget, limits: HttpLimits = DEFAULT_HTTP_LIMITS): Server {
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      maxHeaderSize: limits.maxHeaderBytes,
      // How often Node checks the two timeouts above (default 30 s, which would
      // let a slow-header connection live that long whatever the timeout says).
      connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(limits.headersTimeoutMs / 2))),
    },
    (req, res) => {
      if (hasBody(req)) {
        // Not read: the connection is closed once the answer is out.
        res.writeHead(413, { connection: 'close', 'content-type': 'text/plain' });
        res.end('request bodies are not accepted\n');
        return;
      }
      handler(req, res);
    },
  );
  server.on('connection', (socket: Socket) => budget.admit(socket));
  // A connection idle (no byte either way) this long is gone, whatever state its request is in.
  server.setTimeout(limits.requestTimeoutMs);
  server.maxRequestsPerSocket = 100;
  return server;
}

/** "ADDR:PORT" or "[v6]:PORT" → host and port; an empty host means every address. */
export function splitHostPort(bind: string): { host: string; port: number } {
  const colon = bind.lastIndexOf(':');
  return { host: bind.slice(0, colon).replace(/^\[(.*)\]$/, '$1') || '::', port: Number(bind.slice(colon + 1)) };
}

/** Listens, resolving with the bound address; rejects with the listen error (EADDRINUSE...). */
export function listen(server: Server, host: string, port: number, ipv6Only = false): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (e: Error) => reject(e);
    server.once('error', onError);
    server.listen({ host, port, ipv6Only }, () => {
      server.off('error', onError);
      resolve(server.address() as AddressInfo);
    });
  });
}

/** Stops accepting and ends every open connection (a probe must not keep a closed port alive). */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

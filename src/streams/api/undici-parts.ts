// The parts of undici the agent uses, loaded by their own paths. undici's
// index loads all of it (fetch, websockets, caches, mocks...): 109 modules and
// 1.2 MB of source, which V8 keeps for the life of the process, where these
// parts need 35 modules. Types come from the package's own declarations.

import { createRequire } from 'node:module';
import type * as Undici from 'undici';

const load = createRequire(import.meta.url);

// As undici's index does first: its dispatchers reach each other through these methods (a proxy's CONNECT, for one).
const api = load('undici/lib/api/index.js') as Pick<Undici.Dispatcher, 'request' | 'stream' | 'pipeline' | 'connect' | 'upgrade'>;
Object.assign((load('undici/lib/dispatcher/dispatcher.js') as typeof Undici.Dispatcher).prototype, api);

export const Agent = load('undici/lib/dispatcher/agent.js') as typeof Undici.Agent;
export const ProxyAgent = load('undici/lib/dispatcher/proxy-agent.js') as typeof Undici.ProxyAgent;
export const EnvHttpProxyAgent = load('undici/lib/dispatcher/env-http-proxy-agent.js') as typeof Undici.EnvHttpProxyAgent;

type RequestOptions = Omit<Undici.Dispatcher.RequestOptions, 'origin' | 'path' | 'method'> & {
  method?: Undici.Dispatcher.HttpMethod;
  dispatcher: Undici.Dispatcher;
};
/** undici's request(url, options) through the dispatcher the options name (the agent never uses a global one). */
export function request(url: string, { dispatcher, ...options }: RequestOptions): Promise<Undici.Dispatcher.ResponseData> {
  const u = new URL(url);
  return dispatcher.request({
    ...options,
    origin: u.origin,
    path: u.search ? `${u.pathname}${u.search}` : u.pathname,
    method: options.method ?? 'GET',
  });
}

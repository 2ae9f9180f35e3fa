// A faithful fake Kubernetes API server over real HTTP(S) on 127.0.0.1, for
// the streams' tests and benchmarks. Programmatic API:
//
//   const api = await FakeApiServer.start({ tls: true, token: 't', watchList: true, bookmarkIntervalMs: 1000 });
//   api.url; api.ca;                         // base URL; PEM of the self-signed cert (tls)
//   api.create('services', obj); api.update(...); api.patchLabels('services', 'ns/name', { k: 'v', gone: null });
//   api.delete('services', 'ns/name'); api.compact();        // compact → watches from older rv get 410
//   api.injectFault({ kind: '429', resource: 'services', on: 'watch', retryAfterSeconds: 1, times: 1 });
//   api.dropWatches(); api.stallWatches(); api.writeToWatches('garbage\n');  // mid-stream faults
//   api.count({ resource: 'services', watch: true }); api.requests;
//   api.writeKubeconfig('/tmp/kc.json'); await api.close();
//
// Behaviour as the real one where the streams depend on it: list with
// limit/continue over a consistent snapshot (continue → 410 after
// compaction); watch from a resourceVersion replaying history, or with
// rv ''/'0' (synthetic ADDED for everything); sendInitialEvents with the
// initial-events-end bookmark (422 when disabled, as with the feature gate
// off); bookmarks; timeoutSeconds; label and field selectors, with an update
// that makes an object stop matching sent as DELETED (old object, new rv) and
// one that starts matching as ADDED; ERROR 410 for a compacted rv.

import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { ObjectStore, objectKey, type HistoryEvent, type K8sObject, type Version } from './object-store.ts';
import { apiVersionOf, parsePath, type ResourceDef, type ResourceName } from './resources.ts';
import { ObjectFilter, SelectorError } from './selectors.ts';
import { generateSelfSignedCert } from './tls.ts';
import { answerEventPost, eventsNamespace, type RecordedEvent } from './events.ts';

export interface FakeApiServerOptions {
  tls?: boolean;
  /** Require `Authorization: Bearer <token>` (changeable later: setToken, a rotation). */
  token?: string;
  /** With tls: require a client certificate issued by this PEM (mutual TLS). */
  clientCA?: string;
  /** Require `Authorization: Basic` with these. */
  basic?: { username: string; password: string };
  /** Support sendInitialEvents (WatchList); default true. */
  watchList?: boolean;
  /** Bookmark period for watches that allow them; default 60 s as the real server. */
  bookmarkIntervalMs?: number;
  maxHistory?: number;
}

export type FaultKind = 'drop' | 'hang' | '429' | '500' | 'slow' | '410';

export interface Fault {
  kind: FaultKind;
  resource?: ResourceName;
  on?: 'list' | 'watch' | 'any';
  /** How many matching requests it affects (default 1). */
  times?: number;
  /** Let this many matching requests through first (e.g. fail only the second list page). */
  skip?: number;
  retryAfterSeconds?: number;
  /** For 'slow': delay before answering; also between list-body chunks. */
  delayMs?: number;
}

export interface RequestRecord {
  method: string;
  path: string;
  resource?: ResourceName;
  watch: boolean;
  query: Record<string, string>;
  status?: number;
  fault?: FaultKind;
  /** The Authorization header as sent. */
  authorization?: string;
  at: number;
}

interface WatchConn {
  res: ServerResponse;
  resource: ResourceDef;
  filter: ObjectFilter;
  stalled: boolean;
  timers: NodeJS.Timeout[];
}

const eventLine = (type: string, json: string) => `{"type":"${type}","object":${json}}\n`;

function statusJson(code: number, reason: string, message: string): string {
  return JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
}

export class FakeApiServer {
  readonly store: ObjectStore;
  readonly requests: RequestRecord[] = [];
  /** Events created through events.k8s.io/v1, in order. */
  readonly events: RecordedEvent[] = [];
  /** Status with which Event creation is refused (e.g. 403, as without RBAC); undefined accepts. */
  refuseEvents: number | undefined;
  readonly url: string;
  readonly ca: string | undefined;
  private readonly server: Server;
  private readonly o: FakeApiServerOptions;
  private readonly faults: (Fault & { left: number; toSkip: number })[] = [];
  private readonly watches = new Set<WatchConn>();
  private readonly snapshots = new Map<string, { rv: number; items: Version[] }>();
  private nextSnapshot = 1;

  private constructor(server: Server, url: string, ca: string | undefined, o: FakeApiServerOptions) {
    this.server = server;
    this.url = url;
    this.ca = ca;
    this.o = { ...o };
    this.store = new ObjectStore(o.maxHistory);
    this.store.onEvent((ev) => this.dispatch(ev));
  }

  static async start(o: FakeApiServerOptions = {}): Promise<FakeApiServer> {
    const tls = o.tls ? generateSelfSignedCert() : undefined;
    let self: FakeApiServer | undefined;
    const handler = (req: IncomingMessage, res: ServerResponse) => self!.handle(req, res);
    const server = tls
      ? createHttpsServer(
          { cert: tls.cert, key: tls.key, ...(o.clientCA ? { ca: o.clientCA, requestCert: true, rejectUnauthorized: true } : {}) },
          handler,
        )
      : createHttpServer(handler);
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    self = new FakeApiServer(server, `${tls ? 'https' : 'http'}://127.0.0.1:${port}`, tls?.cert, o);
    return self;
  }

  // --- objects -------------------------------------------------------------

  create(resource: ResourceName, obj: K8sObject): Version {
    return this.store.create(resource, obj);
  }
  update(resource: ResourceName, obj: K8sObject): Version {
    return this.store.update(resource, obj);
  }
  patchLabels(resource: ResourceName, key: string, labels: Record<string, string | null>): Version {
    return this.store.patchLabels(resource, key, labels);
  }
  delete(resource: ResourceName, key: string): Version {
    return this.store.delete(resource, key);
  }
  compact(): number {
    this.snapshots.clear();
    return this.store.compact();
  }

  // --- faults and observation ----------------------------------------------

  /** From now on only this bearer token is accepted (a token rotation). */
  setToken(token: string): void {
    this.o.token = token;
  }

  injectFault(f: Fault): void {
    this.faults.push({ ...f, left: f.times ?? 1, toSkip: f.skip ?? 0 });
  }
  clearFaults(): void {
    this.faults.length = 0;
  }

  private select(resource: ResourceName | undefined): WatchConn[] {
    return [...this.watches].filter((w) => resource === undefined || w.resource.name === resource);
  }
  /** Resets open watch connections (a network cut mid-stream). */
  dropWatches(resource?: ResourceName): number {
    const ws = this.select(resource);
    for (const w of ws) this.closeWatch(w, true);
    return ws.length;
  }
  /** Open watches go silent forever without closing (a hung connection). */
  stallWatches(resource?: ResourceName): number {
    const ws = this.select(resource);
    for (const w of ws) {
      w.stalled = true;
      for (const t of w.timers) clearTimeout(t);
    }
    return ws.length;
  }
  /** Writes raw bytes to open watches (malformed-line injection). */
  writeToWatches(data: string, resource?: ResourceName): number {
    const ws = this.select(resource);
    for (const w of ws) if (!w.stalled) w.res.write(data);
    return ws.length;
  }
  activeWatches(resource?: ResourceName): number {
    return this.select(resource).filter((w) => !w.stalled).length;
  }
  count(f: { resource?: ResourceName; watch?: boolean; status?: number; fault?: FaultKind } = {}): number {
    return this.requests.filter(
      (r) =>
        (f.resource === undefined || r.resource === f.resource) &&
        (f.watch === undefined || r.watch === f.watch) &&
        (f.status === undefined || r.status === f.status) &&
        (f.fault === undefined || r.fault === f.fault),
    ).length;
  }

  kubeconfig(token = this.o.token): Record<string, unknown> {
    const cluster: Record<string, unknown> = { server: this.url };
    if (this.ca) cluster['certificate-authority-data'] = Buffer.from(this.ca).toString('base64');
    // client-node refuses a plain-http server unless TLS verification is "skipped".
    else cluster['insecure-skip-tls-verify'] = true;
    return {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'fake', cluster }],
      users: [{ name: 'fake', user: token ? { token } : {} }],
      contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'fake' } }],
      'current-context': 'fake',
    };
  }
  writeKubeconfig(path: string, token?: string): void {
    writeFileSync(path, JSON.stringify(this.kubeconfig(token), null, 2));
  }

  async close(): Promise<void> {
    for (const w of this.watches) this.closeWatch(w, true);
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // --- HTTP ----------------------------------------------------------------

  private takeFault(resource: ResourceName | undefined, watch: boolean): Fault | undefined {
    const i = this.faults.findIndex(
      (f) =>
        (f.resource === undefined || f.resource === resource) && (f.on === undefined || f.on === 'any' || (f.on === 'watch') === watch),
    );
    if (i < 0) return undefined;
    const f = this.faults[i]!;
    if (f.toSkip > 0) {
      f.toSkip--;
      return undefined;
    }
    if (--f.left <= 0) this.faults.splice(i, 1);
    return f;
  }

  private reply(res: ServerResponse, rec: RequestRecord, code: number, body: string, headers: Record<string, string> = {}): void {
    rec.status = code;
    res.writeHead(code, { 'content-type': 'application/json', ...headers });
    res.end(body);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const u = new URL(req.url ?? '/', 'http://x');
    const parsed = parsePath(u.pathname);
    const query = Object.fromEntries(u.searchParams);
    const watch = query.watch === '1' || query.watch === 'true';
    const rec: RequestRecord = {
      method: req.method ?? 'GET',
      path: u.pathname,
      resource: parsed?.resource.name as ResourceName | undefined,
      watch,
      query,
      at: Date.now(),
    };
    this.requests.push(rec);
    rec.authorization = req.headers.authorization;
    const basic = this.o.basic && `Basic ${Buffer.from(`${this.o.basic.username}:${this.o.basic.password}`).toString('base64')}`;
    if ((this.o.token && req.headers.authorization !== `Bearer ${this.o.token}`) || (basic && req.headers.authorization !== basic)) {
      return this.reply(res, rec, 401, statusJson(401, 'Unauthorized', 'Unauthorized'));
    }
    const fault = this.takeFault(rec.resource, watch);
    if (fault) {
      rec.fault = fault.kind;
      switch (fault.kind) {
        case 'drop':
          rec.status = 0;
          req.socket.destroy();
          return;
        case 'hang':
          rec.status = 0;
          return; // never answered; close() cleans up
        case '429':
          return this.reply(res, rec, 429, statusJson(429, 'TooManyRequests', 'slow down'), {
            'retry-after': String(fault.retryAfterSeconds ?? 1),
          });
        case '500':
          return this.reply(res, rec, 500, statusJson(500, 'InternalError', 'injected failure'));
        case '410':
          return this.reply(res, rec, 410, statusJson(410, 'Expired', 'injected expiry'));
        case 'slow':
          await new Promise((r) => setTimeout(r, fault.delayMs ?? 1000));
          break;
      }
    }
    const eventsNs = eventsNamespace(u.pathname);
    if (req.method === 'POST' && eventsNs !== undefined) return this.handleEventPost(req, res, rec, eventsNs);
    if (req.method !== 'GET' || !parsed) return this.reply(res, rec, 404, statusJson(404, 'NotFound', 'not found'));
    let filter: ObjectFilter;
    try {
      filter = new ObjectFilter(query.labelSelector ?? '', query.fieldSelector ?? '', parsed.namespace);
    } catch (e) {
      if (e instanceof SelectorError) return this.reply(res, rec, 400, statusJson(400, 'BadRequest', e.message));
      throw e;
    }
    if (watch) return this.handleWatch(res, rec, parsed.resource, filter, query);
    return this.handleList(res, rec, parsed.resource, filter, query, fault?.kind === 'slow' ? fault.delayMs : undefined);
  }

  private async handleEventPost(req: IncomingMessage, res: ServerResponse, rec: RequestRecord, namespace: string): Promise<void> {
    const answer = await answerEventPost(req, namespace, this.refuseEvents, this.events);
    this.reply(res, rec, answer.status, answer.body);
  }

  private async handleList(
    res: ServerResponse,
    rec: RequestRecord,
    r: ResourceDef,
    filter: ObjectFilter,
    q: Record<string, string>,
    chunkDelayMs?: number,
  ): Promise<void> {
    const limit = q.limit ? Number(q.limit) : 0;
    let snap: { rv: number; items: Version[] };
    let offset = 0;
    let id: string;
    if (q.continue) {
      let tok: { id: string; off: number };
      try {
        tok = JSON.parse(Buffer.from(q.continue, 'base64url').toString());
      } catch {
        return this.reply(res, rec, 400, statusJson(400, 'BadRequest', 'invalid continue token'));
      }
      const s = this.snapshots.get(tok.id);
      if (!s) return this.reply(res, rec, 410, statusJson(410, 'Expired', 'The provided continue parameter is too old'));
      snap = s;
      offset = tok.off;
      id = tok.id;
    } else {
      const items = [...this.store.all(r.name as ResourceName).entries()]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([, v]) => v)
        .filter((v) => filter.matches(v.obj));
      snap = { rv: this.store.resourceVersion, items };
      id = String(this.nextSnapshot++);
    }
    const end = limit > 0 ? Math.min(offset + limit, snap.items.length) : snap.items.length;
    const meta: Record<string, unknown> = { resourceVersion: String(snap.rv) };
    if (end < snap.items.length) {
      this.snapshots.set(id, snap);
      meta.continue = Buffer.from(JSON.stringify({ id, off: end })).toString('base64url');
      meta.remainingItemCount = snap.items.length - end;
    } else {
      this.snapshots.delete(id);
    }
    rec.status = 200;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write(`{"kind":"${r.kind}List","apiVersion":"${apiVersionOf(r)}","metadata":${JSON.stringify(meta)},"items":[`);
    for (let i = offset; i < end; i += 100) {
      const part = snap.items
        .slice(i, Math.min(i + 100, end))
        .map((v) => v.json)
        .join(',');
      res.write(i === offset ? part : `,${part}`);
      if (chunkDelayMs) await new Promise((r2) => setTimeout(r2, Math.min(chunkDelayMs, 50)));
    }
    res.end(']}');
  }

  private handleWatch(res: ServerResponse, rec: RequestRecord, r: ResourceDef, filter: ObjectFilter, q: Record<string, string>): void {
    const bookmarks = q.allowWatchBookmarks === 'true';
    const initial = q.sendInitialEvents === 'true';
    if (initial && (this.o.watchList === false || q.resourceVersionMatch !== 'NotOlderThan' || !bookmarks)) {
      const why =
        this.o.watchList === false
          ? 'sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled'
          : 'sendInitialEvents requires resourceVersionMatch=NotOlderThan and allowWatchBookmarks';
      this.reply(res, rec, 422, statusJson(422, 'Invalid', why));
      return;
    }
    rec.status = 200;
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    res.flushHeaders();
    const conn: WatchConn = { res, resource: r, filter, stalled: false, timers: [] };
    const rvParam = q.resourceVersion ?? '';
    const name = r.name as ResourceName;
    if (initial || rvParam === '' || rvParam === '0') {
      const lines: string[] = [];
      for (const v of this.store.all(name).values()) if (filter.matches(v.obj)) lines.push(eventLine('ADDED', v.json));
      for (let i = 0; i < lines.length; i += 200) res.write(lines.slice(i, i + 200).join(''));
      if (initial) res.write(this.bookmarkLine(r, true));
    } else {
      const events = this.store.eventsSince(Number(rvParam));
      if (!events) {
        res.end(eventLine('ERROR', statusJson(410, 'Expired', `too old resource version: ${rvParam} (${this.store.compactedRv})`)));
        return;
      }
      let out = '';
      for (const ev of events) if (ev.resource === name) out += this.lineFor(conn, ev);
      if (out) res.write(out);
    }
    this.watches.add(conn);
    const timeout = q.timeoutSeconds ? Number(q.timeoutSeconds) : 1800;
    conn.timers.push(setTimeout(() => this.closeWatch(conn, false), timeout * 1000));
    if (bookmarks) {
      const period = this.o.bookmarkIntervalMs ?? 60_000;
      conn.timers.push(setInterval(() => res.write(this.bookmarkLine(r, false)), period));
    }
    res.on('close', () => this.closeWatch(conn, false));
  }

  private bookmarkLine(r: ResourceDef, initialEnd: boolean): string {
    const metadata: Record<string, unknown> = { resourceVersion: String(this.store.resourceVersion) };
    if (initialEnd) metadata.annotations = { 'k8s.io/initial-events-end': 'true' };
    return eventLine('BOOKMARK', JSON.stringify({ kind: r.kind, apiVersion: apiVersionOf(r), metadata }));
  }

  private closeWatch(w: WatchConn, reset: boolean): void {
    if (!this.watches.delete(w)) return;
    for (const t of w.timers) clearTimeout(t);
    if (reset) w.res.socket?.destroy();
    else if (!w.stalled) w.res.end();
  }

  /** What one watcher sees of one change, given its selectors (may be nothing). */
  private lineFor(w: WatchConn, ev: HistoryEvent): string {
    const nowMatches = ev.type !== 'DELETED' && w.filter.matches(ev.current.obj);
    const before = ev.type === 'ADDED' ? false : w.filter.matches((ev.previous ?? ev.current).obj);
    if (ev.type === 'DELETED') return before ? eventLine('DELETED', ev.current.json) : '';
    if (nowMatches && before) return eventLine('MODIFIED', ev.current.json);
    if (nowMatches) return eventLine('ADDED', ev.current.json);
    if (before) {
      // Stopped matching: DELETED carrying the old object with the new resourceVersion.
      const old = ev.previous!.obj;
      return eventLine('DELETED', JSON.stringify({ ...old, metadata: { ...old.metadata, resourceVersion: String(ev.rv) } }));
    }
    return '';
  }

  private dispatch(ev: HistoryEvent): void {
    for (const w of this.watches) {
      if (w.stalled || w.resource.name !== ev.resource) continue;
      const line = this.lineFor(w, ev);
      if (line) w.res.write(line);
    }
  }
}

export { objectKey };
export type { K8sObject, ResourceName };

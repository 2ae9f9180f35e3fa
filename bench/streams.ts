// npm run bench:streams — the cluster-state streams at scale.
//
// The parent process runs the fake API server with 10k Services and 10k
// EndpointSlices (~100k endpoints); a child process (so the server's memory
// and CPU are not counted) runs the streams against it over HTTP. Every CPU
// figure is the child's (all its threads, GC helpers included).
//
//   0. the list bytes are fetched once into memory and JSON.parse'd twice:
//      parsing 30 MiB of JSON grows V8's young generation to tens of MiB
//      whatever is kept, so that growth lands before the RSS baseline;
//   1. the first paged list over HTTP (JIT cold, as an agent starts): CPU,
//      and the stores' RSS = RSS after the list minus RSS before, both after
//      GC (store_heap_mib is the V8 heap they hold; process_rss_mib the
//      whole child at that point);
//   2. in alternating rounds on the in-memory bytes, process CPU (all threads,
//      GC included) of: bare toString + JSON.parse of every page (the
//      baseline), and the ingest of the same page buffers through the
//      production code (parseListBody: decode + JSON.parse; the informers:
//      validate, project, store, slice index, synced; events for whoever
//      subscribes — nobody here): ingest_over_json_parse = median ingest /
//      median JSON.parse. Neither side includes the HTTP transfer (step 4 does);
//   3. the same pages fetched over the same HTTP connection and JSON.parse'd,
//      nothing kept: what any client pays to receive and parse them;
//   4. the paged list over HTTP again, JIT warm: list_over_fetch_parse, and
//      list_over_json_parse (transport included, against bare JSON.parse);
//   5. sustained churn (EndpointSlice updates) → events/s and CPU per event;
//   6. the initial list via WatchList (CPU only).
// The last line is one JSON object with the figures.

import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import type { HttpClient } from '../src/streams/api/http-client.ts';

const SERVICES = Number(process.env.BENCH_SERVICES ?? 10_000);
const ENDPOINTS_PER_SLICE = 10;
const CHURN = Number(process.env.BENCH_CHURN ?? 20_000);
const PAGE = Number(process.env.BENCH_PAGE ?? 250);

const mib = (b: number) => Math.round((b / 2 ** 20) * 10) / 10;
const cpuMs = (c: NodeJS.CpuUsage) => (c.user + c.system) / 1000;

async function parent(): Promise<void> {
  const { FakeApiServer, fixtures } = await import('../test/fake-apiserver/index.ts');
  const api = await FakeApiServer.start({ maxHistory: 50_000 });
  const zones = ['zone-a', 'zone-b', 'zone-c'];
  for (let i = 0; i < SERVICES; i++) {
    const ns = `ns-${i % 50}`;
    const name = `svc-${i}`;
    const ip = `10.96.${(i >> 8) & 255}.${i & 255}`;
    api.create('services', {
      ...fixtures.service(ns, name, { spec: { clusterIP: ip, clusterIPs: [ip], selector: { app: name } } }, { app: name }),
      metadata: {
        namespace: ns,
        name,
        labels: { app: name },
        annotations: { 'example.com/owner': 'team-x' },
        creationTimestamp: '2025-01-01T00:00:00Z',
      },
    });
    const eps = [];
    for (let j = 0; j < ENDPOINTS_PER_SLICE; j++) {
      const n = i * ENDPOINTS_PER_SLICE + j;
      eps.push({ ip: `10.244.${(n >> 8) & 255}.${n & 255}`, node: `node-${n % 100}`, zone: zones[n % 3] });
    }
    api.create('endpointslices', fixtures.endpointSlice(ns, `${name}-abcde`, name, eps));
  }
  api.create('nodes', fixtures.node('node-a', { 'topology.kubernetes.io/zone': 'zone-a' }));
  const dir = mkdtempSync(join(tmpdir(), 'bench-streams-'));
  const kc = join(dir, 'kubeconfig.json');
  api.writeKubeconfig(kc);
  const child = fork(fileURLToPath(import.meta.url), ['--child', kc], {
    execArgv: ['--expose-gc', ...(process.env.BENCH_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_PROF] : [])],
    stdio: 'inherit',
  });
  const result = await new Promise<Record<string, unknown>>((resolve, reject) => {
    child.on('message', (m: { phase: string; [k: string]: unknown }) => {
      if (m.phase === 'churn') {
        // Flip one endpoint's readiness per update: every update is a real change.
        const t0 = performance.now();
        let k = 0;
        const step = () => {
          const end = Math.min(k + 500, CHURN);
          for (; k < end; k++) {
            const i = k % SERVICES;
            const key = `ns-${i % 50}/svc-${i}-abcde`;
            const cur = api.store.get('endpointslices', key)!.obj;
            const eps = (cur.endpoints as { conditions: { ready: boolean } }[]).map((e, j) =>
              j === k % ENDPOINTS_PER_SLICE ? { ...e, conditions: { ...e.conditions, ready: !e.conditions.ready } } : e,
            );
            api.update('endpointslices', { ...cur, endpoints: eps });
          }
          if (k < CHURN) setImmediate(step);
          else child.send({ phase: 'churned', count: CHURN, serverMs: performance.now() - t0 });
        };
        step();
      } else if (m.phase === 'done') resolve(m);
    });
    child.on('exit', (code) => (code ? reject(new Error(`child exited ${code}`)) : undefined));
  });
  await api.close();
  rmSync(dir, { recursive: true, force: true });
  delete result.phase;
  console.log(JSON.stringify(result));
  process.exit(0);
}

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SELECTOR = '!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless';
const PATHS = ['/api/v1/services', '/apis/discovery.k8s.io/v1/endpointslices', '/api/v1/nodes'] as const;

/** Resident size of each non-empty V8 heap space, MiB. */
function heapSpaces(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const sp of v8.getHeapSpaceStatistics())
    if (sp.physical_space_size > 0) out[sp.space_name.replace(/_space$/, '')] = mib(sp.physical_space_size);
  return out;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}

function settleGc(gc: () => void): void {
  gc();
  gc();
}

// The phases share one heap on purpose: what each keeps alive (the first
// stores, the fetched pages) and drops is what the next one's RSS and CPU
// figures start from; split into functions, what stays reachable between
// phases would shift and the figures with it, unmeasured here.
// biome-ignore lint/complexity/noExcessiveLinesPerFunction: the measured phases share one heap; see above.
async function child(kubeconfig: string): Promise<void> {
  const { pino } = await import('pino');
  const { createClusterStreams, makeInformers } = await import('../src/streams/cluster-streams.ts');
  const { deliverListItems } = await import('../src/streams/reflector.ts');
  const { parseListBody } = await import('../src/streams/api/list-watch.ts');
  const { connect } = await import('../src/streams/api/api-connection.ts');
  const logger = pino({ level: 'warn' });
  const gc = globalThis.gc!;
  const tuning = { pageSize: PAGE, watchList: false, readTimeoutMs: 60_000, headersTimeoutMs: 60_000 };
  const listOverHttp = async (watchList = false) => {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const streams = await createClusterStreams({
      source: 'apiserver',
      connection: await connect(kubeconfig),
      nodeName: 'node-a',
      logger,
      tuning: { ...tuning, watchList },
    });
    await streams.whenSynced();
    return { streams, cpu: cpuMs(process.cpuUsage(c0)), wall: performance.now() - t0 };
  };

  // Warm-up on the node object only: loads undici, the kubeconfig path, pino.
  const warm = await createClusterStreams({
    source: 'apiserver',
    connection: await connect(kubeconfig),
    nodeName: 'node-a',
    serviceProxyName: 'nobody',
    logger,
    tuning,
  });
  await warm.whenSynced();
  await warm.stop();

  // The list bytes, fetched once into memory.
  const conn = await connect(kubeconfig);
  const fetchPages = async (keep: boolean) => {
    const pages: { path: string; body: Buffer }[] = [];
    for (const path of PATHS) {
      let cont = '';
      do {
        const body = await fetchRaw(
          conn.baseUrl + path,
          { limit: PAGE, continue: cont, labelSelector: path.includes('nodes') ? '' : SELECTOR },
          conn.client,
        );
        const page = JSON.parse(body.toString('utf8')) as { metadata: { continue?: string } };
        if (keep) pages.push({ path, body });
        cont = page.metadata.continue ?? '';
      } while (cont);
    }
    return pages;
  };
  let pages = await fetchPages(true);
  const bytes = pages.reduce((a, p) => a + p.body.length, 0);
  const parseRuns: number[] = [];
  const bareParse = () => {
    settleGc(gc);
    const c = process.cpuUsage();
    let sink = 0;
    for (const p of pages) sink += (JSON.parse(p.body.toString('utf8')) as { items: unknown[] }).items.length;
    parseRuns.push(cpuMs(process.cpuUsage(c)));
    if (sink === 0) throw new Error('nothing parsed');
  };
  // Parsing 30 MiB of JSON grows V8's young generation whatever is kept;
  // let that happen before the RSS baseline (see the header).
  for (let r = 0; r < 2; r++) bareParse();

  // 1. cold list over HTTP, and the stores' RSS.
  settleGc(gc);
  await new Promise((r) => setTimeout(r, 100));
  settleGc(gc);
  const rss0 = process.memoryUsage().rss;
  const heap0 = process.memoryUsage().heapUsed;
  const spaces0 = heapSpaces();
  const first = await listOverHttp();
  let streams: typeof first.streams | undefined = first.streams;
  const { cpu: coldCpu, wall: coldWall } = first;
  first.streams = undefined as never;
  let endpoints = 0;
  for (const s of streams.endpointSlices.values()) endpoints += s.endpoints.length;
  settleGc(gc);
  const mem = process.memoryUsage();
  const storeRss = mem.rss - rss0;
  const storeHeap = mem.heapUsed - heap0;
  console.log(`V8 spaces resident (MiB) before the list ${JSON.stringify(spaces0)}, after ${JSON.stringify(heapSpaces())}`);
  console.log(
    `list over HTTP (cold): ${streams.services.size} services, ${streams.endpointSlices.size} slices, ${endpoints} ` +
      `endpoints in ${coldWall.toFixed(0)} ms wall, ${coldCpu.toFixed(0)} ms CPU; ` +
      `stores RSS +${mib(storeRss)} MiB (heap +${mib(storeHeap)} MiB), process RSS ${mib(mem.rss)} MiB`,
  );

  // 5. churn on the first list's stores.
  let events = 0;
  streams.endpointSlices$.subscribe(() => events++);
  const before = events;
  const churned = new Promise<{ count: number; serverMs: number }>((resolve) =>
    process.on('message', (m: { phase: string; count: number; serverMs: number }) => m.phase === 'churned' && resolve(m)),
  );
  let c0 = process.cpuUsage();
  let t0 = performance.now();
  process.send!({ phase: 'churn' });
  const { count } = await churned;
  const deadline = Date.now() + 60_000;
  while (events - before < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  const churnWall = performance.now() - t0;
  const churnCpu = cpuMs(process.cpuUsage(c0));
  const got = events - before;
  const churnRss = process.memoryUsage().rss;
  console.log(
    `churn: ${got}/${count} slice updates in ${churnWall.toFixed(0)} ms (${Math.round((got / churnWall) * 1000)} ` +
      `events/s, bounded by the server's rate); ` +
      `${((churnCpu / got) * 1000).toFixed(1)} µs CPU per event; RSS ${mib(churnRss)} MiB`,
  );
  await streams.stop();
  // Let the first stores go: the rounds and the warm list below start from an empty heap as the first did.
  streams = undefined;

  // 2. in-memory rounds on the same bytes: bare JSON.parse vs the ingest.
  parseRuns.length = 0;
  const ingestRuns: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    bareParse();
    settleGc(gc);
    const c = process.cpuUsage();
    const { informers } = makeInformers(logger);
    const sinkOf = (path: string) =>
      path.includes('services') ? informers.services : path.includes('nodes') ? informers.node : informers.endpointSlices;
    for (const inf of Object.values(informers)) inf.listStart();
    for (const p of pages) {
      const inf = sinkOf(p.path);
      deliverListItems(parseListBody(p.body, p.body.length).items, inf);
    }
    for (const inf of Object.values(informers)) inf.listEnd();
    ingestRuns.push(cpuMs(process.cpuUsage(c)));
    if (informers.endpointSlices.store.size !== SERVICES) throw new Error(`ingested ${informers.endpointSlices.store.size} slices`);
  }
  const parseCpu = median(parseRuns);
  const ingestCpu = median(ingestRuns);
  console.log(
    `same ${mib(bytes)} MiB (${pages.length} pages of ${PAGE}) from memory, ${ROUNDS} rounds: JSON.parse ` +
      `${parseCpu.toFixed(0)} ms CPU (median; ${parseRuns.map((x) => x.toFixed(0)).join('/')}), ` +
      `ingest ${ingestCpu.toFixed(0)} ms (median; ${ingestRuns.map((x) => x.toFixed(0)).join('/')})`,
  );
  pages = [];

  // 3. fetch + parse over HTTP, nothing kept.
  const fetchRuns: number[] = [];
  for (let r = 0; r < 3; r++) {
    settleGc(gc);
    const c = process.cpuUsage();
    await fetchPages(false);
    fetchRuns.push(cpuMs(process.cpuUsage(c)));
  }
  const fetchParseCpu = median(fetchRuns);
  await conn.close();
  console.log(
    `fetch over HTTP + JSON.parse, nothing kept: ${fetchParseCpu.toFixed(0)} ms CPU (median; ` +
      `${fetchRuns.map((x) => x.toFixed(0)).join('/')})`,
  );

  // 4. the list over HTTP again, JIT warm.
  settleGc(gc);
  const warmList = await listOverHttp();
  const listCpu = warmList.cpu;
  await warmList.streams.stop();
  console.log(`list over HTTP (warm): ${warmList.wall.toFixed(0)} ms wall, ${listCpu.toFixed(0)} ms CPU`);

  // 6. WatchList ingest, for comparison.
  settleGc(gc);
  c0 = process.cpuUsage();
  t0 = performance.now();
  const wl = await listOverHttp(true);
  console.log(`WatchList: ${wl.streams.endpointSlices.size} slices in ${wl.wall.toFixed(0)} ms wall, ${wl.cpu.toFixed(0)} ms CPU`);
  await wl.streams.stop();

  const load = (await import('node:os')).loadavg().map((x) => Math.round(x * 100) / 100);
  console.log(`load average during the run: ${load.join(' ')} (2 cores, shared)`);
  process.send!({
    phase: 'done',
    services: SERVICES,
    slices: SERVICES,
    endpoints,
    page_size: PAGE,
    list_bytes_mib: mib(bytes),
    json_parse_cpu_ms: Math.round(parseCpu),
    ingest_cpu_ms: Math.round(ingestCpu),
    ingest_over_json_parse: Math.round((ingestCpu / parseCpu) * 100) / 100,
    fetch_parse_cpu_ms: Math.round(fetchParseCpu),
    list_cpu_ms: Math.round(listCpu),
    list_cold_cpu_ms: Math.round(coldCpu),
    list_over_fetch_parse: Math.round((listCpu / fetchParseCpu) * 100) / 100,
    list_over_json_parse: Math.round((listCpu / parseCpu) * 100) / 100,
    watchlist_cpu_ms: Math.round(wl.cpu),
    store_rss_mib: mib(storeRss),
    store_heap_mib: mib(storeHeap),
    process_rss_mib: mib(mem.rss),
    churn_events: got,
    churn_events_per_s: Math.round((got / churnWall) * 1000),
    churn_cpu_us_per_event: Math.round((churnCpu / got) * 1000 * 10) / 10,
    load_avg_1m: load[0],
  });
  process.exit(0);
}

async function fetchRaw(url: string, q: Record<string, string | number>, client: HttpClient): Promise<Buffer> {
  const qs = new URLSearchParams(
    Object.entries(q)
      .filter(([, v]) => v !== '')
      .map(([k, v]): [string, string] => [k, String(v)]),
  );
  const res = await client.request(`${url}?${qs}`, { headers: {}, headersTimeoutMs: 60_000, bodyTimeoutMs: 60_000 });
  return Buffer.concat((await res.body.toArray()) as Buffer[]);
}

if (process.argv[2] === '--child') await child(process.argv[3]!);
else await parent();

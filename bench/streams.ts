// npm run bench:streams — the cluster-state streams at scale.
//
// The parent process runs the fake API server with 10k Services and 10k
// EndpointSlices (~100k endpoints); a child process (so the server's memory
// is not counted) runs the API-server streams against it over HTTP:
//   1. initial paged list → stores; CPU time and the stores' RSS (RSS after GC
//      minus the RSS before listing, with every module already loaded);
//   2. the same via WatchList (CPU only);
//   3. sustained churn (EndpointSlice updates) → events/s and CPU per event;
//   4. bare JSON.parse of the same list bytes, fetched again, timed in the same
//      process: ingest_over_json_parse = list CPU / JSON.parse CPU.
// The last line is one JSON object with the figures.

import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SERVICES = Number(process.env.BENCH_SERVICES ?? 10_000);
const ENDPOINTS_PER_SLICE = 10;
const CHURN = Number(process.env.BENCH_CHURN ?? 20_000);
const PAGE = Number(process.env.BENCH_PAGE ?? 500);

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
      metadata: { namespace: ns, name, labels: { app: name }, annotations: { 'example.com/owner': 'team-x' }, creationTimestamp: '2025-01-01T00:00:00Z' },
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
  const child = fork(fileURLToPath(import.meta.url), ['--child', kc], { execArgv: ['--expose-gc', ...(process.env.BENCH_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_PROF] : [])], stdio: 'inherit' });
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

async function child(kubeconfig: string): Promise<void> {
  const { pino } = await import('pino');
  const { createClusterStreams } = await import('../src/streams/cluster-streams.ts');
  const { loadKubeConfig, connectionFromKubeConfig } = await import('../src/k8s/api-connection.ts');
  const { listPage } = await import('../src/k8s/list-watch.ts');
  const logger = pino({ level: 'warn' });
  const kc = await loadKubeConfig(kubeconfig);
  const gc = globalThis.gc!;
  const tuning = { pageSize: PAGE, watchList: false, readTimeoutMs: 60_000, headersTimeoutMs: 60_000 };

  // Warm-up on the node object only: loads undici, client-node, pino paths.
  const warm = await createClusterStreams({ source: 'apiserver', connection: await connectionFromKubeConfig(kc), nodeName: 'node-a', serviceProxyName: 'nobody', logger, tuning });
  await warm.whenSynced();
  await warm.stop();
  gc();
  gc();
  const rss0 = process.memoryUsage().rss;
  const heap0 = process.memoryUsage().heapUsed;

  // 1. paged list.
  let c0 = process.cpuUsage();
  let t0 = performance.now();
  const conn = await connectionFromKubeConfig(kc);
  const streams = await createClusterStreams({ source: 'apiserver', connection: conn, nodeName: 'node-a', logger, tuning });
  await streams.whenSynced();
  const listCpu = cpuMs(process.cpuUsage(c0));
  const listWall = performance.now() - t0;
  let endpoints = 0;
  for (const s of streams.endpointSlices.values()) endpoints += s.endpoints.length;
  gc();
  gc();
  const mem = process.memoryUsage();
  const storeRss = mem.rss - rss0;
  const storeHeap = mem.heapUsed - heap0;
  console.log(
    `list: ${streams.services.size} services, ${streams.endpointSlices.size} slices, ${endpoints} endpoints in ${listWall.toFixed(0)} ms wall, ${listCpu.toFixed(0)} ms CPU; ` +
      `stores RSS +${mib(storeRss)} MiB (heap +${mib(storeHeap)} MiB), process RSS ${mib(mem.rss)} MiB`,
  );

  // 3. churn (before WatchList so the stores above are the ones churned).
  let events = 0;
  streams.endpointSlices$.subscribe(() => events++);
  const before = events;
  const churned = new Promise<{ count: number; serverMs: number }>((resolve) => process.on('message', (m: { phase: string; count: number; serverMs: number }) => m.phase === 'churned' && resolve(m)));
  c0 = process.cpuUsage();
  t0 = performance.now();
  process.send!({ phase: 'churn' });
  const { count } = await churned;
  const deadline = Date.now() + 60_000;
  while (events - before < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  const churnWall = performance.now() - t0;
  const churnCpu = cpuMs(process.cpuUsage(c0));
  const got = events - before;
  const churnRss = process.memoryUsage().rss;
  console.log(
    `churn: ${got}/${count} slice updates in ${churnWall.toFixed(0)} ms (${Math.round((got / churnWall) * 1000)} events/s, bounded by the server's rate); ` +
      `${((churnCpu / got) * 1000).toFixed(1)} µs CPU per event; RSS ${mib(churnRss)} MiB`,
  );
  await streams.stop();

  // 2. WatchList ingest, for comparison.
  gc();
  c0 = process.cpuUsage();
  t0 = performance.now();
  const wl = await createClusterStreams({ source: 'apiserver', connection: await connectionFromKubeConfig(kc), nodeName: 'node-a', logger, tuning: { ...tuning, watchList: true } });
  await wl.whenSynced();
  const wlCpu = cpuMs(process.cpuUsage(c0));
  console.log(`WatchList: ${wl.endpointSlices.size} slices in ${(performance.now() - t0).toFixed(0)} ms wall, ${wlCpu.toFixed(0)} ms CPU`);
  await wl.stop();

  // 4. bare JSON.parse of the same list bytes.
  const pages: Buffer[] = [];
  const raw = await connectionFromKubeConfig(kc);
  for (const path of ['/api/v1/services', '/apis/discovery.k8s.io/v1/endpointslices', '/api/v1/nodes']) {
    let cont = '';
    do {
      const res = await fetchRaw(raw.baseUrl + path, { limit: PAGE, continue: cont, labelSelector: path.includes('nodes') ? '' : '!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless' }, raw.dispatcher);
      pages.push(res);
      cont = (JSON.parse(res.toString()).metadata.continue as string) ?? '';
    } while (cont);
  }
  void listPage;
  const bytes = pages.reduce((a, b) => a + b.length, 0);
  const runs: number[] = [];
  for (let r = 0; r < 3; r++) {
    gc();
    const c = process.cpuUsage();
    let sink = 0;
    for (const p of pages) sink += (JSON.parse(p.toString('utf8')) as { items: unknown[] }).items.length;
    runs.push(cpuMs(process.cpuUsage(c)));
    if (sink === 0) throw new Error('nothing parsed');
  }
  runs.sort((a, b) => a - b);
  const parseCpu = runs[1]!;
  console.log(`JSON.parse of the same ${mib(bytes)} MiB (${pages.length} pages): ${parseCpu.toFixed(0)} ms CPU (median of 3)`);
  await raw.close();
  process.send!({
    phase: 'done',
    services: SERVICES,
    slices: SERVICES,
    endpoints,
    list_bytes_mib: mib(bytes),
    list_cpu_ms: Math.round(listCpu),
    watchlist_cpu_ms: Math.round(wlCpu),
    json_parse_cpu_ms: Math.round(parseCpu),
    ingest_over_json_parse: Math.round((listCpu / parseCpu) * 100) / 100,
    watchlist_over_json_parse: Math.round((wlCpu / parseCpu) * 100) / 100,
    store_rss_mib: mib(storeRss),
    store_heap_mib: mib(storeHeap),
    process_rss_mib: mib(mem.rss),
    churn_events: got,
    churn_events_per_s: Math.round((got / churnWall) * 1000),
    churn_cpu_us_per_event: Math.round((churnCpu / got) * 1000 * 10) / 10,
  });
  process.exit(0);
}

async function fetchRaw(url: string, q: Record<string, string | number>, dispatcher: import('undici').Dispatcher): Promise<Buffer> {
  const { request } = await import('undici');
  const qs = new URLSearchParams(Object.entries(q).filter(([, v]) => v !== '').map(([k, v]): [string, string] => [k, String(v)]));
  const res = await request(`${url}?${qs}`, { dispatcher });
  return Buffer.from(await res.body.arrayBuffer());
}

if (process.argv[2] === '--child') await child(process.argv[3]!);
else await parent();

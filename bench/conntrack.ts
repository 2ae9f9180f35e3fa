// bench:conntrack — UDP conntrack cleanup at table sizes of 10k and 100k
// entries, created through ctnetlink (the addon's conntrackCreate) in a fresh
// network namespace: 5,000 UDP Services (ClusterIP:53, two endpoints each),
// 20 entries per Service at 100k (2 at 10k), half of them answered by each
// endpoint.
//
// Measured side by side, in the same run and namespace, for one Service's
// endpoint change (one of its two endpoints replaced: that endpoint's entries
// are stale):
// - ours per change: the changed Service port only, by a dump the kernel
//   filters on its frontend (CTA_FILTER), then deletes by tuple;
// - kube-proxy's approach: every sync dumps the whole table into user space
//   and matches every entry against every UDP Service port (cleanup.go), here
//   through the same native dumper and matcher, so the difference measured is
//   the approach, not the language;
// - ours at the full resync: the same whole-table pass, once per --sync-period.
// Each figure is the median of five runs; the stale entries are re-created
// between runs. The last line is one JSON object. Run as root: npm run bench:conntrack

import { loadavg } from 'node:os';
import type { Endpoint, ServicePort } from '../src/model/service-port.ts';
import { loadAddon } from '../src/native/addon.ts';
import type { NativeConntrackCleanRequest, NativeConntrackCleanResult, NativeConntrackEntry } from '../src/native/conntrack-types.ts';
import { conntrackTargets } from '../src/reconciler/conntrack-targets.ts';
import { createNetns } from '../test/helpers/netns.ts';

const SERVICES = Number(process.env.BENCH_SERVICES ?? 5000);
const SAMPLES = 5;
const BATCH = 256;
const addon = loadAddon();

const clusterIP = (i: number) => `10.96.${Math.floor(i / 250)}.${(i % 250) + 1}`;
const endpointIP = (i: number, which: number) => `10.244.${Math.floor(i / 120)}.${(i % 120) * 2 + which + 1}`;
const clientIP = (n: number) => `10.245.${Math.floor(n / 250) % 250}.${(n % 250) + 1}`;

function endpoint(ip: string): Endpoint {
  return { ip, port: 5353, isLocal: false, ready: true, serving: true, terminating: false };
}

function servicePort(i: number, endpoints: string[]): ServicePort {
  const eps = endpoints.map(endpoint);
  return {
    id: `bench/svc-${i}/UDP/dns/IPv4`,
    namespace: 'bench',
    serviceName: `svc-${i}`,
    portName: 'dns',
    protocol: 'UDP',
    family: 'IPv4',
    clusterIP: clusterIP(i),
    port: 53,
    externalIPs: [],
    loadBalancerIPs: [],
    loadBalancerSourceRanges: [],
    externalPolicyLocal: false,
    internalPolicyLocal: false,
    cluster: { kind: 'endpoints', endpoints: eps },
    external: { kind: 'endpoints', endpoints: eps },
    allEndpoints: eps,
  };
}

/** Entries `from`..`to`-1 of Service i (client port 10000 + k); even k answered by endpoint 0, odd by 1. */
function entriesOf(i: number, from: number, to: number): NativeConntrackEntry[] {
  const out: NativeConntrackEntry[] = [];
  for (let k = from; k < to; k++) {
    const client = clientIP(i);
    out.push({
      protocol: 17,
      origSrc: client,
      origDst: clusterIP(i),
      origSport: 10_000 + k,
      origDport: 53,
      replySrc: endpointIP(i, k % 2),
      replyDst: client,
      replySport: 5353,
      replyDport: 10_000 + k,
      timeoutSec: 3600,
    });
  }
  return out;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const round = (x: number) => Math.round(x * 100) / 100;

const ns = createNetns('knp-bench-ct');
const results: Record<string, number | string> = { loadavg_1m_start: round(loadavg()[0]!) };
try {
  const opts = { netns: ns.path };
  const create = async (entries: NativeConntrackEntry[]) => {
    for (let i = 0; i < entries.length; i += 20_000) {
      const r = await addon.conntrackCreate(4, entries.slice(i, i + 20_000), BATCH, opts);
      if (r.failed > 0) throw new Error(`creating entries: ${r.failed} failed (${r.error})`);
    }
  };
  const before = Array.from({ length: SERVICES }, (_, i) => servicePort(i, [endpointIP(i, 0), endpointIP(i, 1)]));

  let perService = 0;
  for (const [size, target] of [
    ['10k', 2],
    ['100k', 20],
  ] as const) {
    const t0 = performance.now();
    const fresh: NativeConntrackEntry[] = [];
    for (let i = 0; i < SERVICES; i++) fresh.push(...entriesOf(i, perService, target));
    await create(fresh);
    perService = target;
    results[`create_${size}_ms`] = Math.round(performance.now() - t0);

    // Service 0: endpoint 1 replaced by a new one; entries answered by endpoint 1 are stale.
    const changed = servicePort(0, [endpointIP(0, 0), '10.244.250.250']);
    const after = [changed, ...before.slice(1)];
    const staleAgain = () => create(entriesOf(0, 0, perService).filter((_, k) => k % 2 === 1));
    const run = async (request: NativeConntrackCleanRequest): Promise<NativeConntrackCleanResult & { ms: number }> => {
      const s = performance.now();
      const r = await addon.conntrackClean(request, opts);
      const ms = performance.now() - s;
      if (r.error || r.deleted !== perService / 2)
        throw new Error(`cleanup deleted ${r.deleted}, expected ${perService / 2}: ${r.error ?? ''}`);
      await staleAgain();
      return { ...r, ms };
    };
    const changedReq: NativeConntrackCleanRequest = {
      family: 4,
      full: false,
      batchSize: BATCH,
      targets: toNative(conntrackTargets([changed]).IPv4),
    };
    const fullReq: NativeConntrackCleanRequest = {
      family: 4,
      full: true,
      batchSize: BATCH,
      targets: toNative(conntrackTargets(after).IPv4),
    };
    // The floor: the same filtered dump for a Service port no entry belongs to. The kernel walks its
    // whole table for any dump, filtered or not, so this is what a per-change cleanup cannot go below.
    const nothingReq: NativeConntrackCleanRequest = {
      ...changedReq,
      targets: toNative(conntrackTargets([servicePort(SERVICES, [endpointIP(0, 0)])]).IPv4),
    };
    const ours: Array<NativeConntrackCleanResult & { ms: number }> = [];
    const kube: Array<NativeConntrackCleanResult & { ms: number }> = [];
    const floor: number[] = [];
    for (let s = 0; s < SAMPLES; s++) {
      ours.push(await run(changedReq));
      kube.push(await run(fullReq));
      const f0 = performance.now();
      const none = await addon.conntrackClean(nothingReq, opts);
      floor.push(performance.now() - f0);
      if (none.error || none.deleted !== 0) throw new Error(`the floor's cleanup deleted ${none.deleted}: ${none.error ?? ''}`);
    }
    results[`entries_${size}`] = SERVICES * perService;
    results[`per_change_ours_${size}_ms`] = round(median(ours.map((r) => r.ms)));
    results[`per_change_ours_${size}_scanned`] = ours[0]!.scanned;
    results[`kernel_walk_floor_${size}_ms`] = round(median(floor));
    results[`per_change_ours_over_floor_${size}`] = round((results[`per_change_ours_${size}_ms`] as number) / median(floor));
    results[`per_change_kube_proxy_${size}_ms`] = round(median(kube.map((r) => r.ms)));
    results[`per_change_kube_proxy_${size}_scanned`] = kube[0]!.scanned;
    results[`full_reconcile_${size}_ms`] = results[`per_change_kube_proxy_${size}_ms`]!;
    results[`deleted_per_change_${size}`] = ours[0]!.deleted;
    console.log(
      `${SERVICES * perService} entries: one Service's endpoint change: ours ${results[`per_change_ours_${size}_ms`]} ms ` +
        `(scanned ${ours[0]!.scanned}, deleted ${ours[0]!.deleted}), kube-proxy's whole-table pass ` +
        `${results[`per_change_kube_proxy_${size}_ms`]} ms ` +
        `(scanned ${kube[0]!.scanned}); our full reconcile (at --sync-period) is that same pass; ` +
        `the kernel's walk alone (a dump no entry matches) ${results[`kernel_walk_floor_${size}_ms`]} ms`,
    );
  }
  results.per_change_speedup_100k = round((results.per_change_kube_proxy_100k_ms as number) / (results.per_change_ours_100k_ms as number));
  results.per_change_growth_10k_to_100k = round((results.per_change_ours_100k_ms as number) / (results.per_change_ours_10k_ms as number));
} finally {
  ns.destroy();
}
results.loadavg_1m_end = round(loadavg()[0]!);
console.log(`load average: start ${results.loadavg_1m_start}, end ${results.loadavg_1m_end}`);
console.log(JSON.stringify(results));

function toNative(targets: ReturnType<typeof conntrackTargets>['IPv4']): NativeConntrackCleanRequest['targets'] {
  return targets.map((t) => ({
    protocol: t.protocol === 'UDP' ? 17 : 132,
    ...(t.address !== undefined ? { address: t.address } : {}),
    port: t.port,
    keep: t.keep,
  }));
}

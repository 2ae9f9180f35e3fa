// The cleanup queue around the addon: what it asks the addon for, how it merges
// work that arrives while a cleanup runs, and that failures are counted and
// logged, never thrown. The addon is replaced by a recorder here; the real one
// is tested in test/native/conntrack.test.ts and end to end in test/e2e/conntrack.test.ts.

import { describe, expect, it } from 'vitest';
import { ConntrackCleaner, FILTERED_DUMPS_MAX } from '../../src/agent/conntrack-cleaner.ts';
import type { NativeConntrackCleanRequest, NativeConntrackCleanResult } from '../../src/native/conntrack-types.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { ProxyMetrics } from '../../src/observability/metrics.ts';
import { ep, sp } from '../reconciler/fixtures.ts';

const OK: NativeConntrackCleanResult = {
  scanned: 3,
  stale: 2,
  deleted: 2,
  vanished: 0,
  failed: 0,
  dumps: 1,
  batches: 1,
  dumpMs: 0,
  deleteMs: 0,
};

function recorder(answer: (r: NativeConntrackCleanRequest) => Promise<NativeConntrackCleanResult>) {
  const calls: Array<{ request: NativeConntrackCleanRequest; options: unknown }> = [];
  return {
    calls,
    native: {
      conntrackClean(request: NativeConntrackCleanRequest, options?: unknown) {
        calls.push({ request, options });
        return answer(request);
      },
    },
  };
}

async function metric(m: ProxyMetrics, name: string, kind: string): Promise<number> {
  const json = await m.registry.getMetricsAsJSON();
  return json.find((x) => x.name === name)?.values.find((v) => v.labels.kind === kind)?.value ?? 0;
}

const udp = (name: string, ip: string, extra = {}) =>
  sp({ serviceName: name, protocol: 'UDP', port: 53, clusterIP: ip, endpoints: [ep('10.244.1.2', 53)], ...extra });

describe('ConntrackCleaner', () => {
  it('asks for kernel-filtered dumps of the changed ports, per family, and for one full dump at a full sync', async () => {
    const r = recorder(async () => OK);
    const metrics = new ProxyMetrics();
    const c = new ConntrackCleaner({ native: r.native, netns: '/var/run/netns/x', logger: createLogger('silent'), metrics, batchSize: 64 });
    c.changed([
      udp('a', '10.96.0.10'),
      sp({ protocol: 'TCP', endpoints: [ep('10.244.1.2')] }),
      udp('v6', 'fd00:96::10', { family: 'IPv6', endpoints: [ep('fd00:244::2', 53)] }),
    ]);
    await c.idle();
    expect(r.calls).toEqual([
      {
        request: {
          family: 4,
          full: false,
          batchSize: 64,
          targets: [{ protocol: 17, address: '10.96.0.10', port: 53, keep: ['10.244.1.2'] }],
        },
        options: { netns: '/var/run/netns/x' },
      },
      {
        request: {
          family: 6,
          full: false,
          batchSize: 64,
          targets: [{ protocol: 17, address: 'fd00:96::10', port: 53, keep: ['fd00:244::2'] }],
        },
        options: { netns: '/var/run/netns/x' },
      },
    ]);
    c.full([udp('a', '10.96.0.10')]);
    await c.idle();
    expect(r.calls.at(-1)!.request.full).toBe(true);
    expect(await metric(metrics, 'kube_nft_proxy_conntrack_entries_deleted_total', 'changed')).toBe(4);
    expect(await metric(metrics, 'kube_nft_proxy_conntrack_entries_deleted_total', 'full')).toBe(2);
    expect(c.reports.map((x) => x.kind)).toEqual(['changed', 'full']);
  });

  it('asks for one whole-table dump instead of a filtered dump each when many ports changed at once', async () => {
    const r = recorder(async () => OK);
    const c = new ConntrackCleaner({ native: r.native, logger: createLogger('silent'), metrics: new ProxyMetrics() });
    c.changed(Array.from({ length: FILTERED_DUMPS_MAX }, (_, i) => udp(`s${i}`, `10.96.1.${i + 1}`)));
    await c.idle();
    c.changed(Array.from({ length: FILTERED_DUMPS_MAX + 1 }, (_, i) => udp(`s${i}`, `10.96.2.${i + 1}`)));
    await c.idle();
    expect(r.calls.map((x) => [x.request.full, x.request.targets.length])).toEqual([
      [false, FILTERED_DUMPS_MAX],
      [true, FILTERED_DUMPS_MAX + 1],
    ]);
    // Counted as what it was asked for: a cleanup of changed ports.
    expect(c.reports.map((x) => x.kind)).toEqual(['changed', 'changed']);
  });

  it('asks for nothing when no changed port is UDP or SCTP with a serving endpoint', async () => {
    const r = recorder(async () => OK);
    const c = new ConntrackCleaner({ native: r.native, logger: createLogger('silent'), metrics: new ProxyMetrics() });
    c.changed([sp({ protocol: 'TCP', endpoints: [ep('10.244.1.2')] }), udp('empty', '10.96.0.11', { endpoints: [] })]);
    await c.idle();
    expect(r.calls).toEqual([]);
  });

  it('runs one cleanup at a time and merges what arrives meanwhile (a full one covers earlier changes)', async () => {
    let release!: () => void;
    const gate = new Promise<void>((res) => (release = res));
    const r = recorder(async () => {
      await gate;
      return OK;
    });
    const c = new ConntrackCleaner({ native: r.native, logger: createLogger('silent'), metrics: new ProxyMetrics() });
    c.changed([udp('a', '10.96.0.10')]);
    c.changed([udp('b', '10.96.0.11')]);
    c.changed([udp('c', '10.96.0.12')]);
    expect(r.calls).toHaveLength(1);
    release();
    await c.idle();
    expect(r.calls.map((x) => x.request.targets.map((t) => t.address))).toEqual([['10.96.0.10'], ['10.96.0.11', '10.96.0.12']]);

    let release2!: () => void;
    const gate2 = new Promise<void>((res) => (release2 = res));
    const r2 = recorder(async () => {
      await gate2;
      return OK;
    });
    const c2 = new ConntrackCleaner({ native: r2.native, logger: createLogger('silent'), metrics: new ProxyMetrics() });
    c2.changed([udp('a', '10.96.0.10')]);
    c2.changed([udp('b', '10.96.0.11')]);
    c2.full([udp('a', '10.96.0.10'), udp('b', '10.96.0.11'), udp('c', '10.96.0.12')]);
    release2();
    await c2.idle();
    expect(r2.calls.map((x) => x.request.full)).toEqual([false, true]);
  });

  it('counts and logs a failure, never throws, and goes on with the next cleanup', async () => {
    let n = 0;
    const r = recorder(async () => {
      n++;
      if (n === 1) throw Object.assign(new Error('socket: EPERM'), { code: 'ERR_CONNTRACK_NETLINK' });
      if (n === 2) return { ...OK, deleted: 1, failed: 1, error: 'conntrack delete: Operation not permitted', errno: 1 };
      return OK;
    });
    const lines: string[] = [];
    const logger = createLogger('info', { write: (l: string) => void lines.push(l) } as unknown as NodeJS.WritableStream);
    const metrics = new ProxyMetrics();
    const c = new ConntrackCleaner({ native: r.native, logger, metrics });
    c.changed([udp('a', '10.96.0.10')]);
    await c.idle();
    c.changed([udp('a', '10.96.0.10')]);
    await c.idle();
    c.changed([udp('a', '10.96.0.10')]);
    await c.idle();
    expect(await metric(metrics, 'kube_nft_proxy_conntrack_cleanup_failures_total', 'changed')).toBe(2);
    expect(await metric(metrics, 'kube_nft_proxy_conntrack_entries_deleted_total', 'changed')).toBe(3);
    const msgs = lines.map((l) => JSON.parse(l) as { msg: string; level: number });
    expect(msgs.filter((m) => m.level >= 40).map((m) => m.msg)).toEqual([
      'conntrack cleanup failed; stale UDP/SCTP entries stay until they time out or the next full resync',
      'conntrack cleanup incomplete; what is left is tried again at the next full resync',
    ]);
  });
});

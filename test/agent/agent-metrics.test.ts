// The agent records what its kube-proxy metrics mean (in-process, streams fed
// by hand, the kernel-modelling fake): the pending gauges until a sync takes
// the changes, network programming latency from the slices' trigger time only
// (never for times before the agent started, nor for a deleted slice),
// services without local endpoints by policy, operations by verb, and a
// failed stale-chain deletion as a cleanup failure.

import { BehaviorSubject, filter, firstValueFrom, Subject } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../src/agent/agent.ts';
import { parseCommandLine } from '../../src/cli/flags.ts';
import type { EndpointSliceInfo, NodeInfo, ServiceInfo, StoreEvent } from '../../src/k8s/types.ts';
import { NftCommitError } from '../../src/nft/dataplane.ts';
import { FakeKernel } from '../../src/nft/fake/fake-kernel.ts';
import type { Transaction } from '../../src/nft/transaction.ts';
import { createLogger } from '../../src/observability/logger.ts';
import type { ClusterStreams } from '../../src/streams/cluster-streams.ts';
import { connectionFromAccess, type ApiConnection } from '../../src/streams/api/api-connection.ts';
import { FakeApiServer } from '../fake-apiserver/index.ts';
import { ep, node, service, slice } from '../model/fixtures.ts';
import { waitFor } from '../streams/helpers.ts';

class HandStreams {
  connection: ApiConnection | undefined;
  readonly services$ = new Subject<StoreEvent<ServiceInfo>>();
  readonly endpointSlices$ = new Subject<StoreEvent<EndpointSliceInfo>>();
  readonly node$ = new BehaviorSubject<NodeInfo | undefined>(undefined);
  readonly synced$ = new BehaviorSubject(false);
  asStreams(): ClusterStreams {
    return {
      services$: this.services$,
      endpointSlices$: this.endpointSlices$,
      node$: this.node$,
      synced$: this.synced$,
      services: { size: 0 },
      endpointSlices: { size: 0 },
      stop: async () => {},
      invalidObjects: () => ({ services: 0, endpointSlices: 0, nodes: 0 }),
      connection: this.connection,
    } as unknown as ClusterStreams;
  }
}

/** The fake kernel, refusing chain deletions while `refuseDeletes` is set, and any chain whose name holds `refuseChains`. */
class Kernel extends FakeKernel {
  refuseDeletes = false;
  refuseChains: string | undefined;
  override async commit(tx: Transaction): Promise<void> {
    const ops = tx.ops();
    const i = ops.findIndex((o) => o.verb === 'delete' && o.object.kind === 'chain');
    if (this.refuseDeletes && i >= 0)
      throw new NftCommitError([{ index: i, errno: 16, code: 'EBUSY', message: 'refused by the test' }], ops);
    const needle = this.refuseChains;
    const j =
      needle === undefined ? -1 : ops.findIndex((o) => o.verb === 'add' && o.object.kind === 'chain' && o.object.name.includes(needle));
    if (j >= 0) throw new NftCommitError([{ index: j, errno: 22, code: 'EINVAL', message: 'refused by the test' }], ops);
    return super.commit(tx);
  }
}

/** One sample from /metrics' text, by name and exact labels ({} for none). */
async function value(agent: Agent, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await agent.metrics.registry.metrics();
  const l = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(',');
  const line = text.split('\n').find((x) => x.startsWith(l ? `${name}{${l}} ` : `${name} `));
  return line === undefined ? NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** The agent over the hand-fed streams and the kernel, with these flags; no HTTP, no memory release. */
async function startOn(kernel: Kernel, s: HandStreams, flags: string[]): Promise<Agent> {
  const cmd = parseCommandLine(flags);
  if (cmd.command !== 'run') throw new Error('run');
  return startAgent(cmd.options, {
    logger: createLogger('silent'),
    dataplane: kernel,
    serveHttp: false,
    streams: s.asStreams(),
    releaseMemory: () => {},
  });
}

describe('agent metrics', { timeout: 30_000 }, () => {
  let agent: Agent | undefined;
  afterEach(async () => {
    await agent?.stop();
    agent = undefined;
  });

  it('records pending changes, programming latency, no-local services and operations', async () => {
    const s = new HandStreams();
    const kernel = new Kernel();
    agent = await startOn(kernel, s, ['--hostname-override=node-a', '--min-sync-period=0', '--cluster-cidr=10.244.0.0/16']);
    const syncs = () => firstValueFrom(agent!.syncs$.pipe(filter((r) => r.ok)));

    s.node$.next(node());
    const web = service({ internalTrafficPolicy: 'Local' });
    s.services$.next({ type: 'upsert', key: 'default/web', object: web });
    const t0 = Date.now() + 1;
    // One slice with a fresh trigger time, one whose time predates the agent.
    s.endpointSlices$.next({
      type: 'upsert',
      key: 'default/web-1',
      object: slice('web-1', [ep('10.244.1.5')], { lastChangeTriggerTime: t0 }),
    });
    s.endpointSlices$.next({
      type: 'upsert',
      key: 'default/web-2',
      object: slice('web-2', [ep('10.244.1.6')], { lastChangeTriggerTime: t0 - 3_600_000 }),
    });
    expect(await value(agent, 'kubeproxy_sync_proxy_rules_service_changes_pending')).toBe(1);
    expect(await value(agent, 'kubeproxy_sync_proxy_rules_endpoint_changes_pending')).toBe(1);

    const first = syncs();
    s.synced$.next(true);
    await first;
    expect(await value(agent, 'kubeproxy_sync_proxy_rules_service_changes_pending')).toBe(0);
    expect(await value(agent, 'kubeproxy_sync_proxy_rules_endpoint_changes_pending')).toBe(0);
    expect(await value(agent, 'kubeproxy_network_programming_duration_seconds_count')).toBe(1);
    // internalTrafficPolicy Local and no endpoint on node-a.
    expect(await value(agent, 'kubeproxy_sync_proxy_rules_no_local_endpoints_total', { traffic_policy: 'internal' })).toBe(1);
    expect(await value(agent, 'kubeproxy_sync_proxy_rules_no_local_endpoints_total', { traffic_policy: 'external' })).toBe(0);
    expect(await value(agent, 'kube_nft_proxy_nftables_operations_total', { verb: 'add', kind: 'table' })).toBeGreaterThan(0);

    // A deleted slice carries its last update's time, not the deletion's: not observed.
    const second = syncs();
    s.endpointSlices$.next({
      type: 'delete',
      key: 'default/web-1',
      object: slice('web-1', [ep('10.244.1.5')], { lastChangeTriggerTime: Date.now() }),
    });
    await second;
    expect(await value(agent, 'kubeproxy_network_programming_duration_seconds_count')).toBe(1);
    // An endpoint on this node: no longer "no local endpoints".
    const third = syncs();
    s.endpointSlices$.next({
      type: 'upsert',
      key: 'default/web-2',
      object: slice('web-2', [ep('10.244.1.6', { nodeName: 'node-a' })], { lastChangeTriggerTime: Date.now() }),
    });
    await third;
    expect(await value(agent, 'kubeproxy_network_programming_duration_seconds_count')).toBe(2);
    expect(await value(agent, 'kubeproxy_sync_proxy_rules_no_local_endpoints_total', { traffic_policy: 'internal' })).toBe(0);
  });

  it('counts a failed stale-chain deletion as a cleanup failure', async () => {
    const s = new HandStreams();
    const kernel = new Kernel();
    agent = await startOn(kernel, s, ['--hostname-override=node-a', '--min-sync-period=0', '--endpoint-shape=chains']);
    s.node$.next(node());
    s.services$.next({ type: 'upsert', key: 'default/web', object: service() });
    s.endpointSlices$.next({ type: 'upsert', key: 'default/web-1', object: slice('web-1', [ep('10.244.1.5')]) });
    const first = firstValueFrom(agent.syncs$.pipe(filter((r) => r.ok)));
    s.synced$.next(true);
    await first;
    kernel.refuseDeletes = true;
    const failed = firstValueFrom(agent.syncs$.pipe(filter((r) => !r.ok)));
    // The service goes: its chains are flushed now and deleted a second later, in a sync the kernel refuses.
    s.services$.next({ type: 'delete', key: 'default/web', object: service() });
    await failed;
    expect(await value(agent, 'kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total')).toBe(1);
    expect(await value(agent, 'kubeproxy_sync_proxy_rules_nftables_sync_failures_total')).toBeGreaterThanOrEqual(1);
    kernel.refuseDeletes = false;
  });

  it('posts a Warning Event on a Service whose rules the kernel refused, and the start-up Event', async () => {
    const api = await FakeApiServer.start();
    const s = new HandStreams();
    s.connection = connectionFromAccess({ server: api.url, source: 'test', insecureSkipTLSVerify: false, credentials: { kind: 'none' } });
    try {
      const kernel = new Kernel();
      kernel.refuseChains = '/bad/';
      agent = await startOn(kernel, s, ['--hostname-override=node-a', '--min-sync-period=0']);
      s.node$.next(node());
      for (const name of ['good', 'bad']) {
        s.services$.next({ type: 'upsert', key: `default/${name}`, object: service({ name }) });
        s.endpointSlices$.next({
          type: 'upsert',
          key: `default/${name}-1`,
          object: slice(`${name}-1`, [ep('10.244.1.5')], { serviceName: name }),
        });
      }
      const first = firstValueFrom(agent.syncs$.pipe(filter((r) => r.ok)));
      s.synced$.next(true);
      expect((await first).report?.rejected.map((x) => x.servicePortId)).toEqual(['default/bad/TCP/http/IPv4']);
      await waitFor(() => api.events.length >= 2, 5000, 'two events');
      const warning = api.events.find((e) => e.object.type === 'Warning')!;
      expect(warning.namespace).toBe('default');
      expect(warning.object).toMatchObject({
        reason: 'FailedToProgramServiceRules',
        regarding: { kind: 'Service', namespace: 'default', name: 'bad' },
      });
      expect(warning.object.note).toMatch(/EINVAL/);
      expect(api.events.find((e) => e.object.reason === 'Starting')!.object.regarding).toMatchObject({ kind: 'Node', name: 'node-a' });
    } finally {
      await agent?.stop();
      agent = undefined;
      await s.connection.close();
      await api.close();
    }
  });
});

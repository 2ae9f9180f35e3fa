// Starts a fake API server and the API-server streams against it over real
// HTTP(S), through a generated kubeconfig file, recording what is emitted.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EndpointSliceInfo, NodeInfo, ServiceInfo, StoreEvent } from '../../src/k8s/types.ts';
import { createClusterStreams, type ClusterStreams, type ReflectorTuning } from '../../src/streams/cluster-streams.ts';
import { FakeApiServer, type FakeApiServerOptions } from '../fake-apiserver/index.ts';
import { recordingLogger, type RecordingLogger } from './helpers.ts';

export interface Setup {
  api: FakeApiServer;
  streams: ClusterStreams;
  log: RecordingLogger;
  services: StoreEvent<ServiceInfo>[];
  slices: StoreEvent<EndpointSliceInfo>[];
  nodes: (NodeInfo | undefined)[];
  /** "type key" strings of service events. */
  svcLog(): string[];
  close(): Promise<void>;
}

export const fastTuning: ReflectorTuning = {
  watchTimeoutSeconds: [60, 60],
  readTimeoutMs: 5000,
  headersTimeoutMs: 5000,
  backoff: { initialMs: 20, maxMs: 200, factor: 2, jitter: 0.2 },
};

export async function setup(
  o: {
    server?: FakeApiServerOptions;
    tuning?: ReflectorTuning;
    serviceProxyName?: string;
    token?: string;
    seed?: (api: FakeApiServer) => void;
    wait?: boolean;
  } = {},
): Promise<Setup> {
  const api = await FakeApiServer.start(o.server);
  o.seed?.(api);
  const dir = mkdtempSync(join(tmpdir(), 'streams-test-'));
  const kc = join(dir, 'kubeconfig.json');
  api.writeKubeconfig(kc, o.token);
  const log = recordingLogger();
  const streams = await createClusterStreams({
    source: 'apiserver',
    kubeConfig: kc,
    nodeName: 'node-a',
    serviceProxyName: o.serviceProxyName,
    logger: log.logger,
    tuning: { ...fastTuning, ...o.tuning },
  });
  const s: Setup = {
    api,
    streams,
    log,
    services: [],
    slices: [],
    nodes: [],
    svcLog: () => s.services.map((e) => `${e.type} ${e.key}`),
    async close() {
      await streams.stop();
      await api.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  streams.services$.subscribe((e) => s.services.push(e));
  streams.endpointSlices$.subscribe((e) => s.slices.push(e));
  streams.node$.subscribe((n) => s.nodes.push(n));
  if (o.wait !== false) await streams.whenSynced();
  return s;
}

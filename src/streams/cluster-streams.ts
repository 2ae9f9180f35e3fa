// The agent's view of the cluster: createClusterStreams().
//
//   const streams = await createClusterStreams({
//     source: 'apiserver', kubeConfig /* KubeConfig | path | undefined = default chain */,
//     nodeName, serviceProxyName /* optional, KEP-31 */, logger,
//   });
//   // or { source: 'manifests', path, nodeName?, serviceProxyName?, logger }
//   streams.synced$      // Observable<boolean>, replays: false, then true once
//                        // Services, EndpointSlices and the Node have each
//                        // completed their first full list. Act on nothing before.
//   streams.services$    // Observable<StoreEvent<ServiceInfo>>: on subscribe, the
//                        // current store as upserts, then every real change.
//   streams.endpointSlices$  // same for EndpointSliceInfo (one event per slice)
//   streams.node$        // Observable<NodeInfo | undefined>, replays the latest
//                        // (zone/region followed live; undefined while absent)
//   streams.services / streams.endpointSlices   // StoreView snapshots, keyed namespace/name
//   await streams.whenSynced(); await streams.stop();
//
// Events are emitted synchronously as the store changes: after a relist
// (410), only what really changed; a status-only update emits nothing. Both
// sources apply the KEP-31 selector (the API server by label selector, the
// manifest source locally) and drop headless Services.

import type { KubeConfig } from '@kubernetes/client-node';
import { pino, type Logger } from 'pino';
import { BehaviorSubject, combineLatest, distinctUntilChanged, firstValueFrom, filter, map, Observable } from '../rx.ts';
import { connect, type ApiConnection, type ConnectionOptions } from './api/api-connection.ts';
import type { EndpointSliceInfo, NodeInfo, ServiceInfo, StoreEvent } from '../k8s/types.ts';
import { serviceProxySelector } from '../k8s/well-known.ts';
import type { Clock } from './clock.ts';
import { Informer } from './informer.ts';
import { StringPool } from './intern.ts';
import { projectEndpointSlice } from './project-endpoint-slice.ts';
import { projectNode } from './project-node.ts';
import { projectService } from './project-service.ts';
import { Reflector, type ReflectorOptions } from './reflector.ts';
import type { Store, StoreView } from './store.ts';

export type ReflectorTuning = Partial<
  Pick<
    ReflectorOptions,
    'pageSize' | 'progressIntervalMs' | 'watchList' | 'watchTimeoutSeconds' | 'readTimeoutMs' | 'headersTimeoutMs' | 'backoff'
  >
>;

export interface ApiServerStreamsOptions {
  source: 'apiserver';
  /**
   * A kubeconfig file path, or undefined for in-cluster, then $KUBECONFIG,
   * then ~/.kube/config (read without client-node where possible, see
   * src/streams/api/kubeconfig.ts); or a client-node KubeConfig an embedder loaded.
   */
  kubeConfig?: KubeConfig | string;
  /** Instead of kubeConfig: a ready connection (tests, embedding). */
  connection?: ApiConnection;
  /** How to reach the server: --master, clientConnection's qps and burst (see api-connection.ts). */
  connectionOptions?: ConnectionOptions;
  nodeName: string;
  serviceProxyName?: string;
  logger?: Logger;
  clock?: Clock;
  tuning?: ReflectorTuning;
}

export interface ManifestStreamsOptions {
  source: 'manifests';
  path: string;
  nodeName?: string;
  serviceProxyName?: string;
  logger?: Logger;
  clock?: Clock;
  debounceMs?: number;
  pollIntervalMs?: number;
}

export type ClusterStreamsOptions = ApiServerStreamsOptions | ManifestStreamsOptions;

export interface ClusterStreams {
  services$: Observable<StoreEvent<ServiceInfo>>;
  endpointSlices$: Observable<StoreEvent<EndpointSliceInfo>>;
  node$: Observable<NodeInfo | undefined>;
  synced$: Observable<boolean>;
  services: StoreView<ServiceInfo>;
  endpointSlices: StoreView<EndpointSliceInfo>;
  node(): NodeInfo | undefined;
  /** The API server connection (undefined for manifests): what the agent posts Events through. */
  connection?: ApiConnection;
  /** Objects left out as invalid (or with invalid parts left out), by kind, as logged: each key and reason once while it lasts. */
  invalidObjects(): { services: number; endpointSlices: number; nodes: number };
  whenSynced(): Promise<void>;
  stop(): Promise<void>;
}

/** Current content as upserts, then live changes: a late subscriber sees a whole picture. */
function withSnapshot<T extends { resourceVersion: string }>(store: Store<T>): Observable<StoreEvent<T>> {
  return new Observable<StoreEvent<T>>((sub) => {
    for (const [key, object] of store.entries()) sub.next({ type: 'upsert', key, object });
    return store.events$.subscribe(sub);
  });
}

/** The informers, wired as the streams use them (exported for bench/streams.ts). */
export function makeInformers(logger: Logger) {
  const pool = new StringPool();
  const informers = {
    services: new Informer<ServiceInfo>({ kind: 'Service', project: projectService, pool, logger: logger.child({ kind: 'Service' }) }),
    endpointSlices: new Informer<EndpointSliceInfo>({
      kind: 'EndpointSlice',
      project: projectEndpointSlice,
      pool,
      logger: logger.child({ kind: 'EndpointSlice' }),
    }),
    node: new Informer<NodeInfo>({ kind: 'Node', project: projectNode, clusterScoped: true, pool, logger: logger.child({ kind: 'Node' }) }),
  };
  return { informers };
}

export async function createClusterStreams(options: ClusterStreamsOptions): Promise<ClusterStreams> {
  const logger = (options.logger ?? pino({ name: 'kube-nft-proxy' })).child({ component: 'streams' });
  const { informers } = makeInformers(logger);
  const node = new BehaviorSubject<NodeInfo | undefined>(undefined);
  const nodeSub = informers.node.store.events$.subscribe((ev) => node.next(ev.type === 'delete' ? undefined : ev.object));

  let stopSource: () => Promise<void>;
  let apiConnection: ApiConnection | undefined;
  if (options.source === 'manifests') {
    // Imported here: the YAML parser behind it is ~70 modules that a run
    // against an API server never needs, and would load at every start-up.
    const { ManifestSource } = await import('./manifest-source.ts');
    const src = new ManifestSource(
      {
        path: options.path,
        nodeName: options.nodeName,
        serviceProxyName: options.serviceProxyName,
        logger: logger.child({ source: 'manifests' }),
        clock: options.clock,
        debounceMs: options.debounceMs,
        pollIntervalMs: options.pollIntervalMs,
      },
      informers,
    );
    await src.start();
    stopSource = () => src.stop();
  } else {
    let connection = options.connection;
    let owned = false;
    if (!connection) {
      connection = await connect(options.kubeConfig, options.connectionOptions);
      owned = true;
    }
    logger.info({ server: connection.baseUrl, via: connection.via }, 'API server');
    const selector = serviceProxySelector(options.serviceProxyName);
    const common = { connection, clock: options.clock, ...options.tuning };
    const reflectors = [
      new Reflector({
        ...common,
        path: '/api/v1/services',
        labelSelector: selector,
        sink: informers.services,
        logger: logger.child({ resource: 'services' }),
      }),
      new Reflector({
        ...common,
        path: '/apis/discovery.k8s.io/v1/endpointslices',
        labelSelector: selector,
        sink: informers.endpointSlices,
        logger: logger.child({ resource: 'endpointslices' }),
      }),
      new Reflector({
        ...common,
        path: '/api/v1/nodes',
        fieldSelector: `metadata.name=${options.nodeName}`,
        sink: informers.node,
        logger: logger.child({ resource: 'nodes' }),
      }),
    ];
    for (const r of reflectors) r.start();
    const conn = connection;
    apiConnection = connection;
    stopSource = async () => {
      await Promise.all(reflectors.map((r) => r.stop()));
      if (owned) await conn.close();
    };
  }

  const synced$ = combineLatest([informers.services.synced$, informers.endpointSlices.synced$, informers.node.synced$]).pipe(
    map((s) => s.every(Boolean)),
    distinctUntilChanged(),
  );
  let stopped = false;
  return {
    services$: withSnapshot(informers.services.store),
    endpointSlices$: withSnapshot(informers.endpointSlices.store),
    node$: node.asObservable(),
    synced$,
    services: informers.services.store,
    endpointSlices: informers.endpointSlices.store,
    node: () => node.value,
    ...(apiConnection ? { connection: apiConnection } : {}),
    invalidObjects: () => ({
      services: informers.services.invalidReported,
      endpointSlices: informers.endpointSlices.invalidReported,
      nodes: informers.node.invalidReported,
    }),
    whenSynced: () => firstValueFrom(synced$.pipe(filter(Boolean))).then(() => undefined),
    async stop() {
      if (stopped) return;
      stopped = true;
      await stopSource();
      nodeSub.unsubscribe();
      for (const inf of Object.values(informers)) inf.complete();
      node.complete();
    },
  };
}

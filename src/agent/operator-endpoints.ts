// What the agent shows the operator and the cluster beside the rules: the
// health and metrics servers, the health-check node ports of
// externalTrafficPolicy Local Services, the per-sync gauges read from the
// model, and Kubernetes Events. Wiring only: decisions live in
// observability/health.ts, model/local-endpoints.ts, health-check-servers.ts
// and event-recorder.ts.

import { hostname } from 'node:os';
import type { IPFamily } from '../k8s/types.ts';
import type { LocalEndpointSignals } from '../model/local-endpoints.ts';
import type { HealthState } from '../observability/health.ts';
import { startObservabilityServer, type ObservabilityServer } from '../observability/http-server.ts';
import { ConnectionBudget } from '../observability/limited-http.ts';
import type { Logger } from '../observability/logger.ts';
import type { ProxyMetrics } from '../observability/metrics.ts';
import type { ApiConnection } from '../streams/api/api-connection.ts';
import { postEvent } from '../streams/api/post-event.ts';
import { EventRecorder } from './event-recorder.ts';
import { healthCheckAddresses, HealthCheckServers } from './health-check-servers.ts';

/** Open connections over all health-check node ports together: load balancers probe every few seconds. */
export const HEALTH_CHECK_MAX_CONNECTIONS = 256;

export interface OperatorEndpointsOptions {
  logger: Logger;
  metrics: ProxyMetrics;
  health: HealthState;
  nodeName: string;
  /** For Events; undefined with --manifests (Events are then only logged). */
  connection: ApiConnection | undefined;
  /** Bind addresses; undefined: no /healthz, /metrics servers (embedders, tests). */
  bind?: { healthz: string; metrics: string };
  /** Whether health-check node ports are served: only where the process shares the node's network namespace. */
  serveHealthCheckPorts: boolean;
  /** The NodePort addresses per family, as the ruleset uses them now. */
  nodePortAddresses: (family: IPFamily) => 'all' | string[];
  now?: () => number;
}

export class OperatorEndpoints {
  readonly events: EventRecorder;
  readonly healthChecks: HealthCheckServers | undefined;
  readonly servers: ObservabilityServer[] = [];
  /** Where each server listens, for the start-up log (with port 0 it is the only place the real port shows). */
  readonly listening: { healthz?: string; metrics?: string } = {};
  readonly #o: OperatorEndpointsOptions;

  private constructor(o: OperatorEndpointsOptions) {
    this.#o = o;
    const { logger, metrics, health } = o;
    const now = o.now ?? Date.now;
    const conn = o.connection;
    this.events = new EventRecorder({
      post: conn ? (ev) => postEvent(conn, ev) : undefined,
      logger: logger.child({ component: 'events' }),
      reportingController: 'kube-nft-proxy',
      reportingInstance: `kube-nft-proxy-${hostname()}`,
      now,
      onOutcome: (type, outcome) => metrics.events.inc({ type, outcome }),
    });
    if (o.serveHealthCheckPorts) {
      this.healthChecks = new HealthCheckServers({
        logger: logger.child({ component: 'health-check-node-ports' }),
        proxyHealthy: () => health.isHealthy(now()),
        budget: new ConnectionBudget(HEALTH_CHECK_MAX_CONNECTIONS, () =>
          metrics.httpConnectionsRefused.inc({ server: 'health-check-node-port' }),
        ),
        onBindFailure: (service, port, err) => {
          metrics.healthCheckBindFailures.inc();
          // kube-proxy's reason and action for the same failure.
          this.events.record(
            { kind: 'Service', namespace: service.namespace, name: service.name, uid: `${service.namespace}/${service.name}` },
            'Warning',
            'FailedToStartServiceHealthcheck',
            'Listen',
            `node ${o.nodeName} failed to start healthcheck "${service.namespace}/${service.name}" on port ${port}: ${err.message}`,
          );
        },
        onServing: (count) => metrics.healthCheckServers.set(count),
      });
    }
  }

  static async start(o: OperatorEndpointsOptions): Promise<OperatorEndpoints> {
    const self = new OperatorEndpoints(o);
    if (o.bind) {
      const refused = (server: string) => () => o.metrics.httpConnectionsRefused.inc({ server });
      // An empty address disables that server, as kube-proxy's flags do.
      if (o.bind.healthz !== '') {
        const server = await startObservabilityServer(
          o.bind.healthz,
          { health: o.health, metrics: o.metrics },
          { now: o.now, onRefused: refused('healthz') },
        );
        self.servers.push(server);
        self.listening.healthz = hostPort(server);
      }
      if (o.bind.metrics !== '') {
        const server = await startObservabilityServer(
          o.bind.metrics,
          { metrics: o.metrics },
          { now: o.now, onRefused: refused('metrics') },
        );
        self.servers.push(server);
        self.listening.metrics = hostPort(server);
      }
    }
    return self;
  }

  /** After every successful sync: what the model's ports, as now programmed, say. Returns at once. */
  synced(signals: LocalEndpointSignals): void {
    const { internal, external } = signals.noLocalEndpoints;
    this.#o.metrics.recordNoLocalEndpoints(internal, external);
    if (this.healthChecks) void this.healthChecks.sync(signals.healthCheckServices(), healthCheckAddresses(this.#o.nodePortAddresses));
  }

  async close(): Promise<void> {
    await Promise.all([...this.servers.map((s) => s.close()), this.healthChecks?.close(), this.events.close()]);
  }
}

function hostPort(s: ObservabilityServer): string {
  return s.address.family === 'IPv6' ? `[${s.address.address}]:${s.address.port}` : `${s.address.address}:${s.address.port}`;
}

// The parts of prom-client the agent uses, loaded by their own paths. Its
// index also loads the Summary (with its t-digest), the Pushgateway (http,
// https), the cluster aggregator (node:cluster) and the default metrics, whose
// CPU counter loads @opentelemetry/api (51 modules) for exemplars: ~60 ms of a
// start-up on the slowest of these machines, where the parts take ~7. The
// default metrics are loaded when first wanted (ProxyMetrics.collectProcessMetrics).
// Types come from the package's own declarations.

import { createRequire } from 'node:module';
import type * as Prom from 'prom-client';

const load = createRequire(import.meta.url);

export const Registry = load('prom-client/lib/registry.js') as typeof Prom.Registry;
export const Counter = load('prom-client/lib/counter.js') as typeof Prom.Counter;
export const Gauge = load('prom-client/lib/gauge.js') as typeof Prom.Gauge;
export const Histogram = load('prom-client/lib/histogram.js') as typeof Prom.Histogram;

/** prom-client's default metrics (process_*, nodejs_*) into `register`; their modules are loaded on the first call. */
export function collectDefaultMetrics(register: Prom.Registry): void {
  (load('prom-client/lib/defaultMetrics.js') as typeof Prom.collectDefaultMetrics)({ register });
}

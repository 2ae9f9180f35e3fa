// Our own settings, those kube-proxy has no field for, as a configuration
// document of our own kind that may follow the KubeProxyConfiguration in the
// same --config file:
//
//   apiVersion: kubenftproxy.io/v1alpha1
//   kind: KubeNftProxyConfiguration
//   table: kube-nft-proxy
//   ...
//
// Every flag of ours has a field here. Pure.

import { isCIDR } from './validate-kube-proxy.ts';
import { ConfigError, S, type Schema } from './schema.ts';

export const OWN_API_VERSION = 'kubenftproxy.io/v1alpha1';
export const OWN_KIND = 'KubeNftProxyConfiguration';

export const OWN_SCHEMA: Schema = {
  apiVersion: S.string,
  kind: S.string,
  serviceProxyName: S.string,
  table: S.string,
  endpointShape: S.string,
  manifests: S.string,
  serviceCIDRs: S.stringList,
  fullSyncPeriod: S.duration,
  logLevel: S.string,
  offload: S.object({ packetThreshold: S.uint32, interfaces: S.stringList, excludeInterfaces: S.stringList }),
};

export interface KubeNftProxyConfiguration {
  apiVersion: string;
  kind: string;
  /** KEP-31: serve only Services labelled with this name ('' = the default proxy). */
  serviceProxyName: string;
  table: string;
  endpointShape: string;
  /** Read cluster state from this directory of YAML manifests instead of an API server ('' = API server). */
  manifests: string;
  serviceCIDRs: string[];
  /** Interval (ms) of the full re-assert of every rule. */
  fullSyncPeriod: number;
  /** A pino level that overrides logging.verbosity ('' = from the verbosity). */
  logLevel: string;
  offload: { packetThreshold: number; interfaces: string[]; excludeInterfaces: string[] };
}

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

type Partial2<T> = { [K in keyof T]?: T[K] extends unknown[] ? T[K] : T[K] extends object ? Partial<T[K]> : T[K] };

export function defaultedOwnConfiguration(d: Partial2<KubeNftProxyConfiguration> = {}): KubeNftProxyConfiguration {
  return {
    apiVersion: OWN_API_VERSION,
    kind: OWN_KIND,
    serviceProxyName: d.serviceProxyName ?? '',
    table: d.table || 'kube-nft-proxy',
    endpointShape: d.endpointShape || 'map',
    manifests: d.manifests ?? '',
    serviceCIDRs: d.serviceCIDRs ?? [],
    fullSyncPeriod: d.fullSyncPeriod || 3_600_000,
    logLevel: d.logLevel ?? '',
    offload: {
      packetThreshold: d.offload?.packetThreshold ?? 20,
      interfaces: d.offload?.interfaces ?? [],
      excludeInterfaces: d.offload?.excludeInterfaces ?? [],
    },
  };
}

// Short enough for the kernel and nft's identifier grammar, so `nft list table` works by hand.
// The reconciler's EndpointShape values (src/config sits below the reconciler, so
// it cannot import them; a test holds the two lists equal).
export const ENDPOINT_SHAPES = ['chains', 'map'] as const;

const TABLE_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
const LABEL_VALUE = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

export function ownConfigProblems(c: KubeNftProxyConfiguration): ConfigError[] {
  const out: ConfigError[] = [];
  if (!TABLE_NAME.test(c.table))
    out.push(
      new ConfigError(
        'table',
        `${JSON.stringify(c.table)} must start with a letter and hold only letters, digits, '-' and '_' (at most 64)`,
      ),
    );
  if (!(ENDPOINT_SHAPES as readonly string[]).includes(c.endpointShape))
    out.push(new ConfigError('endpointShape', `${JSON.stringify(c.endpointShape)} is not ${ENDPOINT_SHAPES.join(' or ')}`));
  if (c.serviceProxyName !== '' && !LABEL_VALUE.test(c.serviceProxyName))
    out.push(new ConfigError('serviceProxyName', `${JSON.stringify(c.serviceProxyName)} is not a valid label value`));
  c.serviceCIDRs.forEach((cidr, i) => {
    if (!isCIDR(cidr))
      out.push(new ConfigError(`serviceCIDRs[${i}]`, `${JSON.stringify(cidr)} is not a CIDR (expected e.g. 10.96.0.0/16)`));
  });
  if (c.fullSyncPeriod <= 0) out.push(new ConfigError('fullSyncPeriod', 'must be greater than 0'));
  if (c.logLevel !== '' && !(LOG_LEVELS as readonly string[]).includes(c.logLevel))
    out.push(new ConfigError('logLevel', `${JSON.stringify(c.logLevel)} is not one of ${LOG_LEVELS.join(', ')}`));
  return out;
}

// kube-proxy's own configuration file, `kubeproxy.config.k8s.io/v1alpha1`
// `KubeProxyConfiguration`, with the fields, defaults and checks of kube-proxy
// 1.32 (staging/src/k8s.io/kube-proxy/config/v1alpha1/types.go,
// pkg/proxy/apis/config/v1alpha1/defaults.go, .../validation/validation.go).
//
// Field names are the file's, so that the schema, the defaults, the checks and
// --write-config-to all speak the operator's vocabulary. Durations are held in
// milliseconds. Pure: no I/O.

import { S, type Schema } from './schema.ts';

export const KUBE_PROXY_API_VERSION = 'kubeproxy.config.k8s.io/v1alpha1';
export const KUBE_PROXY_KIND = 'KubeProxyConfiguration';

const formatOptions: Schema = { splitStream: S.bool, infoBufferSize: S.quantity };

const IPTABLES: Schema = {
  masqueradeBit: S.int32,
  masqueradeAll: S.bool,
  localhostNodePorts: S.bool,
  syncPeriod: S.duration,
  minSyncPeriod: S.duration,
};
const IPVS: Schema = {
  syncPeriod: S.duration,
  minSyncPeriod: S.duration,
  scheduler: S.string,
  excludeCIDRs: S.stringList,
  strictARP: S.bool,
  tcpTimeout: S.duration,
  tcpFinTimeout: S.duration,
  udpTimeout: S.duration,
};
const WINKERNEL: Schema = {
  networkName: S.string,
  sourceVip: S.string,
  enableDSR: S.bool,
  rootHnsEndpointName: S.string,
  forwardHealthCheckVip: S.bool,
};

export const KUBE_PROXY_SCHEMA: Schema = {
  apiVersion: S.string,
  kind: S.string,
  featureGates: S.boolMap,
  clientConnection: S.object({ kubeconfig: S.string, acceptContentTypes: S.string, contentType: S.string, qps: S.float, burst: S.int32 }),
  logging: S.object({
    format: S.string,
    flushFrequency: S.durationOrNs,
    verbosity: S.uint32,
    vmodule: S.list({ filePattern: S.string, verbosity: S.uint32 }),
    options: S.object({ text: S.object(formatOptions), json: S.object(formatOptions) }),
  }),
  hostnameOverride: S.string,
  bindAddress: S.string,
  healthzBindAddress: S.string,
  metricsBindAddress: S.string,
  bindAddressHardFail: S.bool,
  enableProfiling: S.bool,
  showHiddenMetricsForVersion: S.string,
  mode: S.string,
  iptables: S.object(IPTABLES),
  ipvs: S.object(IPVS),
  nftables: S.object({ masqueradeBit: S.int32, masqueradeAll: S.bool, syncPeriod: S.duration, minSyncPeriod: S.duration }),
  winkernel: S.object(WINKERNEL),
  detectLocalMode: S.string,
  detectLocal: S.object({ bridgeInterface: S.string, interfaceNamePrefix: S.string }),
  clusterCIDR: S.string,
  nodePortAddresses: S.stringList,
  oomScoreAdj: S.int32,
  conntrack: S.object({
    maxPerCore: S.int32,
    min: S.int32,
    tcpEstablishedTimeout: S.duration,
    tcpCloseWaitTimeout: S.duration,
    tcpBeLiberal: S.bool,
    udpTimeout: S.duration,
    udpStreamTimeout: S.duration,
  }),
  configSyncPeriod: S.duration,
  portRange: S.string,
  windowsRunAsService: S.bool,
};

export type DetectLocalMode = 'ClusterCIDR' | 'NodeCIDR' | 'BridgeInterface' | 'InterfaceNamePrefix';
export const DETECT_LOCAL_MODES: readonly DetectLocalMode[] = ['ClusterCIDR', 'NodeCIDR', 'BridgeInterface', 'InterfaceNamePrefix'];

interface FormatOptions {
  splitStream: boolean;
  infoBufferSize: string;
}

/** The defaulted configuration (durations in ms). */
export interface KubeProxyConfiguration {
  apiVersion: string;
  kind: string;
  featureGates: Record<string, boolean>;
  clientConnection: { kubeconfig: string; acceptContentTypes: string; contentType: string; qps: number; burst: number };
  logging: {
    format: string;
    flushFrequency: number;
    verbosity: number;
    vmodule: { filePattern: string; verbosity: number }[];
    options: { text: FormatOptions; json: FormatOptions };
  };
  hostnameOverride: string;
  bindAddress: string;
  healthzBindAddress: string;
  metricsBindAddress: string;
  bindAddressHardFail: boolean;
  enableProfiling: boolean;
  showHiddenMetricsForVersion: string;
  mode: string;
  iptables: { masqueradeBit: number; masqueradeAll: boolean; localhostNodePorts: boolean; syncPeriod: number; minSyncPeriod: number };
  ipvs: {
    syncPeriod: number;
    minSyncPeriod: number;
    scheduler: string;
    excludeCIDRs: string[];
    strictARP: boolean;
    tcpTimeout: number;
    tcpFinTimeout: number;
    udpTimeout: number;
  };
  nftables: { masqueradeBit: number; masqueradeAll: boolean; syncPeriod: number; minSyncPeriod: number };
  winkernel: { networkName: string; sourceVip: string; enableDSR: boolean; rootHnsEndpointName: string; forwardHealthCheckVip: boolean };
  detectLocalMode: string;
  detectLocal: { bridgeInterface: string; interfaceNamePrefix: string };
  clusterCIDR: string;
  nodePortAddresses: string[];
  oomScoreAdj: number;
  conntrack: {
    maxPerCore: number;
    min: number;
    tcpEstablishedTimeout: number;
    tcpCloseWaitTimeout: number;
    tcpBeLiberal: boolean;
    udpTimeout: number;
    udpStreamTimeout: number;
  };
  configSyncPeriod: number;
  portRange: string;
  windowsRunAsService: boolean;
}

const SECOND = 1000;

/**
 * kube-proxy 1.32's defaults (SetDefaults_KubeProxyConfiguration plus the
 * logging API's recommended configuration), applied where a field is unset or
 * zero exactly as kube-proxy applies them: kubeadm writes zeros and nulls and
 * relies on this. One deliberate difference: logging.format defaults to json.
 */
export function defaultedKubeProxyConfiguration(d: DeepPartial<KubeProxyConfiguration> = {}): KubeProxyConfiguration {
  const nz = <T>(v: T | undefined, zero: T, dflt: T): T => (v === undefined || v === zero ? dflt : v);
  const bindAddress = nz(d.bindAddress, '', '0.0.0.0');
  const v6 = bindAddress.includes(':');
  const logging = d.logging ?? {};
  const opts = logging.options ?? {};
  const fmt = (o: DeepPartial<FormatOptions> | undefined): FormatOptions => ({
    splitStream: o?.splitStream ?? false,
    infoBufferSize: o?.infoBufferSize ?? '0',
  });
  return {
    apiVersion: KUBE_PROXY_API_VERSION,
    kind: KUBE_PROXY_KIND,
    featureGates: { ...(d.featureGates as Record<string, boolean> | undefined) },
    clientConnection: {
      kubeconfig: d.clientConnection?.kubeconfig ?? '',
      acceptContentTypes: d.clientConnection?.acceptContentTypes ?? '',
      contentType: nz(d.clientConnection?.contentType, '', 'application/vnd.kubernetes.protobuf'),
      qps: nz(d.clientConnection?.qps, 0, 5),
      burst: nz(d.clientConnection?.burst, 0, 10),
    },
    logging: {
      format: nz(logging.format, '', 'json'),
      flushFrequency: nz(logging.flushFrequency, 0, 5 * SECOND),
      verbosity: logging.verbosity ?? 0,
      vmodule: (logging.vmodule ?? []) as { filePattern: string; verbosity: number }[],
      options: { text: fmt(opts.text), json: fmt(opts.json) },
    },
    hostnameOverride: d.hostnameOverride ?? '',
    bindAddress,
    healthzBindAddress: withPort(nz(d.healthzBindAddress, '', v6 ? '[::]' : '0.0.0.0'), 10256),
    metricsBindAddress: withPort(nz(d.metricsBindAddress, '', v6 ? '[::1]' : '127.0.0.1'), 10249),
    bindAddressHardFail: d.bindAddressHardFail ?? false,
    enableProfiling: d.enableProfiling ?? false,
    showHiddenMetricsForVersion: d.showHiddenMetricsForVersion ?? '',
    mode: d.mode ?? '',
    iptables: {
      masqueradeBit: d.iptables?.masqueradeBit ?? 14,
      masqueradeAll: d.iptables?.masqueradeAll ?? false,
      localhostNodePorts: d.iptables?.localhostNodePorts ?? true,
      syncPeriod: nz(d.iptables?.syncPeriod, 0, 30 * SECOND),
      minSyncPeriod: nz(d.iptables?.minSyncPeriod, 0, SECOND),
    },
    ipvs: {
      syncPeriod: nz(d.ipvs?.syncPeriod, 0, 30 * SECOND),
      minSyncPeriod: d.ipvs?.minSyncPeriod ?? 0,
      scheduler: d.ipvs?.scheduler ?? '',
      excludeCIDRs: (d.ipvs?.excludeCIDRs ?? []) as string[],
      strictARP: d.ipvs?.strictARP ?? false,
      tcpTimeout: d.ipvs?.tcpTimeout ?? 0,
      tcpFinTimeout: d.ipvs?.tcpFinTimeout ?? 0,
      udpTimeout: d.ipvs?.udpTimeout ?? 0,
    },
    nftables: {
      masqueradeBit: d.nftables?.masqueradeBit ?? 14,
      masqueradeAll: d.nftables?.masqueradeAll ?? false,
      syncPeriod: nz(d.nftables?.syncPeriod, 0, 30 * SECOND),
      minSyncPeriod: nz(d.nftables?.minSyncPeriod, 0, SECOND),
    },
    winkernel: {
      networkName: d.winkernel?.networkName ?? '',
      sourceVip: d.winkernel?.sourceVip ?? '',
      enableDSR: d.winkernel?.enableDSR ?? false,
      rootHnsEndpointName: d.winkernel?.rootHnsEndpointName ?? '',
      forwardHealthCheckVip: d.winkernel?.forwardHealthCheckVip ?? false,
    },
    detectLocalMode: d.detectLocalMode ?? '',
    detectLocal: { bridgeInterface: d.detectLocal?.bridgeInterface ?? '', interfaceNamePrefix: d.detectLocal?.interfaceNamePrefix ?? '' },
    clusterCIDR: d.clusterCIDR ?? '',
    nodePortAddresses: (d.nodePortAddresses ?? []) as string[],
    oomScoreAdj: d.oomScoreAdj ?? -999,
    conntrack: {
      maxPerCore: d.conntrack?.maxPerCore ?? 32 * 1024,
      min: d.conntrack?.min ?? 128 * 1024,
      tcpEstablishedTimeout: d.conntrack?.tcpEstablishedTimeout ?? 24 * 3600 * SECOND,
      tcpCloseWaitTimeout: d.conntrack?.tcpCloseWaitTimeout ?? 3600 * SECOND,
      tcpBeLiberal: d.conntrack?.tcpBeLiberal ?? false,
      udpTimeout: d.conntrack?.udpTimeout ?? 0,
      udpStreamTimeout: d.conntrack?.udpStreamTimeout ?? 0,
    },
    configSyncPeriod: nz(d.configSyncPeriod, 0, 15 * 60 * SECOND),
    portRange: d.portRange ?? '',
    windowsRunAsService: d.windowsRunAsService ?? false,
  };
}

/** kube-proxy's AppendPortIfNeeded: "1.2.3.4" → "1.2.3.4:PORT", "::1" → "[::1]:PORT". */
function withPort(addr: string, port: number): string {
  if (/^\[.*\]:\d+$/.test(addr) || /^[^:]*:\d+$/.test(addr)) return addr;
  if (addr.startsWith('[')) return `${addr}:${port}`;
  return addr.includes(':') ? `[${addr}]:${port}` : `${addr}:${port}`;
}

export type DeepPartial<T> = { [K in keyof T]?: T[K] extends (infer U)[] ? U[] : T[K] extends object ? DeepPartial<T[K]> : T[K] };

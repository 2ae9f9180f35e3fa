// kube-proxy 1.32's checks of a KubeProxyConfiguration
// (pkg/proxy/apis/config/validation), plus ours: the sections and fields an
// nftables proxy cannot honour are accepted at kube-proxy's defaults and
// otherwise refused with their path, never silently ignored. Pure.

import { isIP } from 'node:net';
import { ConfigError } from './schema.ts';
import {
  defaultedKubeProxyConfiguration,
  DETECT_LOCAL_MODES,
  type DetectLocalMode,
  type KubeProxyConfiguration,
} from './kube-proxy-config.ts';

export function isCIDR(text: string): boolean {
  const slash = text.indexOf('/');
  if (slash < 0) return false;
  const family = isIP(text.slice(0, slash));
  const bits = text.slice(slash + 1);
  return family !== 0 && /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

/** "IP:port" or "[IPv6]:port" with a port 0-65535. */
export function isHostPort(text: string): boolean {
  const colon = text.lastIndexOf(':');
  if (colon < 0) return false;
  const port = text.slice(colon + 1);
  const host = text.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  return /^\d{1,5}$/.test(port) && Number(port) <= 65535 && isIP(host) !== 0;
}

export function isDetectLocalMode(m: string): m is DetectLocalMode {
  return (DETECT_LOCAL_MODES as readonly string[]).includes(m);
}

type Problems = ConfigError[];

function sectionAtDefaults(section: 'iptables' | 'ipvs' | 'winkernel', c: KubeProxyConfiguration, out: Problems): void {
  const dflt = defaultedKubeProxyConfiguration()[section] as Record<string, unknown>;
  const given = c[section] as Record<string, unknown>;
  for (const [field, value] of Object.entries(given)) {
    if (JSON.stringify(value) === JSON.stringify(dflt[field])) continue;
    const hint =
      section === 'iptables' &&
      (field === 'masqueradeAll' || field === 'masqueradeBit' || field === 'syncPeriod' || field === 'minSyncPeriod')
        ? `; set nftables.${field} instead`
        : '';
    out.push(
      new ConfigError(
        `${section}.${field}`,
        `the ${section} section does not apply to kube-nft-proxy (an nftables proxy); leave it unset or at kube-proxy's ` +
          `default (${JSON.stringify(dflt[field])})${hint}`,
      ),
    );
  }
}

function validateCIDRs(c: KubeProxyConfiguration, out: Problems): void {
  if (c.clusterCIDR !== '') {
    const cidrs = c.clusterCIDR.split(',');
    const families = new Set<number>();
    for (const cidr of cidrs) {
      if (!isCIDR(cidr))
        out.push(new ConfigError('clusterCIDR', `${JSON.stringify(cidr)} must be a valid CIDR block (e.g. 10.244.0.0/16)`));
      else families.add(isIP(cidr.slice(0, cidr.indexOf('/'))));
    }
    const allValid = cidrs.every(isCIDR);
    if (allValid && (cidrs.length > 2 || families.size < cidrs.length))
      out.push(new ConfigError('clusterCIDR', 'only one CIDR allowed per IP family (a dual-stack pair at most)'));
  }
  c.nodePortAddresses.forEach((a, i) => {
    if (a !== 'primary' && !isCIDR(a))
      out.push(new ConfigError(`nodePortAddresses[${i}]`, `${JSON.stringify(a)} must be a valid CIDR or "primary"`));
  });
}

function validateLocalDetection(c: KubeProxyConfiguration, out: Problems): void {
  const mode = c.detectLocalMode;
  if (mode !== '' && !isDetectLocalMode(mode)) {
    out.push(
      new ConfigError(
        'detectLocalMode',
        `${JSON.stringify(mode)} must be one of ${DETECT_LOCAL_MODES.join(', ')} (or empty for ClusterCIDR)`,
      ),
    );
  }
  if (mode === 'BridgeInterface' && c.detectLocal.bridgeInterface === '')
    out.push(new ConfigError('detectLocal.bridgeInterface', 'must not be empty with detectLocalMode BridgeInterface'));
  if (mode === 'InterfaceNamePrefix' && c.detectLocal.interfaceNamePrefix === '') {
    out.push(new ConfigError('detectLocal.interfaceNamePrefix', 'must not be empty with detectLocalMode InterfaceNamePrefix'));
  }
  for (const [field, name] of [
    ['bridgeInterface', c.detectLocal.bridgeInterface],
    ['interfaceNamePrefix', c.detectLocal.interfaceNamePrefix],
  ] as const) {
    if (name !== '' && (Buffer.byteLength(name) > 15 || /[\s/:\0*]/.test(name)))
      out.push(
        new ConfigError(
          `detectLocal.${field}`,
          `${JSON.stringify(name)} is not an interface name (at most 15 bytes, no white space, "/", ":" or "*")`,
        ),
      );
  }
}

function validateLogging(c: KubeProxyConfiguration, out: Problems): void {
  const l = c.logging;
  if (l.format !== 'text' && l.format !== 'json')
    out.push(new ConfigError('logging.format', `${JSON.stringify(l.format)} is not text or json`));
  if (l.flushFrequency <= 0) out.push(new ConfigError('logging.flushFrequency', 'must be greater than 0'));
  if (l.vmodule.length > 0)
    out.push(
      new ConfigError(
        'logging.vmodule',
        'per-file verbosity has no meaning here (kube-nft-proxy is not built from Go files); use logging.verbosity',
      ),
    );
  for (const f of ['text', 'json'] as const) {
    if (l.options[f].splitStream)
      out.push(new ConfigError(`logging.options.${f}.splitStream`, 'not supported: every log line goes to stdout'));
  }
}

function validateNumbers(c: KubeProxyConfiguration, out: Problems): void {
  const n = c.nftables;
  if (n.masqueradeBit < 0 || n.masqueradeBit > 31)
    out.push(new ConfigError('nftables.masqueradeBit', `${n.masqueradeBit} must be within the range [0, 31]`));
  if (n.syncPeriod <= 0) out.push(new ConfigError('nftables.syncPeriod', 'must be greater than 0'));
  if (n.minSyncPeriod < 0) out.push(new ConfigError('nftables.minSyncPeriod', 'must be greater than or equal to 0'));
  if (c.configSyncPeriod <= 0) out.push(new ConfigError('configSyncPeriod', 'must be greater than 0'));
  if (c.oomScoreAdj < -1000 || c.oomScoreAdj > 1000)
    out.push(new ConfigError('oomScoreAdj', `${c.oomScoreAdj} must be within the range [-1000, 1000]`));
  if (c.clientConnection.burst < 0) out.push(new ConfigError('clientConnection.burst', 'must be non-negative'));
  if (c.clientConnection.qps < 0) out.push(new ConfigError('clientConnection.qps', 'must be non-negative'));
  for (const [field, value] of Object.entries(c.conntrack)) {
    if (typeof value === 'number' && value < 0) out.push(new ConfigError(`conntrack.${field}`, 'must be greater than or equal to 0'));
  }
}

const CONTENT_TYPES = new Set(['application/json', 'application/vnd.kubernetes.protobuf']);

function validateServing(c: KubeProxyConfiguration, out: Problems): void {
  if (isIP(c.bindAddress) === 0) out.push(new ConfigError('bindAddress', `${JSON.stringify(c.bindAddress)} must be a valid IP address`));
  for (const field of ['healthzBindAddress', 'metricsBindAddress'] as const) {
    if (c[field] !== '' && !isHostPort(c[field])) out.push(new ConfigError(field, `${JSON.stringify(c[field])} must be IP:port`));
  }
  if (!CONTENT_TYPES.has(c.clientConnection.contentType)) {
    out.push(
      new ConfigError(
        'clientConnection.contentType',
        `${JSON.stringify(c.clientConnection.contentType)} is not application/json or application/vnd.kubernetes.protobuf`,
      ),
    );
  }
  const accept = c.clientConnection.acceptContentTypes;
  if (accept !== '' && !accept.split(',').some((t) => t.trim() === 'application/json')) {
    out.push(
      new ConfigError(
        'clientConnection.acceptContentTypes',
        `${JSON.stringify(accept)} must include application/json: the only content type this client reads`,
      ),
    );
  }
  if (c.showHiddenMetricsForVersion !== '' && !/^\d+\.\d+$/.test(c.showHiddenMetricsForVersion)) {
    out.push(
      new ConfigError('showHiddenMetricsForVersion', `${JSON.stringify(c.showHiddenMetricsForVersion)} must be a version such as 1.31`),
    );
  }
  if (c.enableProfiling) out.push(new ConfigError('enableProfiling', 'there is no Go profiler to serve (/debug/pprof); leave it false'));
  if (c.windowsRunAsService) out.push(new ConfigError('windowsRunAsService', 'kube-nft-proxy runs on Linux only'));
  if (c.portRange !== '')
    out.push(new ConfigError('portRange', "was the userspace proxy's and does nothing in any current proxy; leave it empty"));
}

/** Every problem of a defaulted configuration, each with its path; empty when valid. */
export function kubeProxyConfigProblems(c: KubeProxyConfiguration): ConfigError[] {
  const out: Problems = [];
  if (c.mode === 'iptables' || c.mode === 'ipvs' || c.mode === 'kernelspace') {
    out.push(
      new ConfigError('mode', `${JSON.stringify(c.mode)}: kube-nft-proxy is an nftables proxy; set mode to nftables (or leave it empty)`),
    );
  } else if (c.mode !== '' && c.mode !== 'nftables') {
    out.push(new ConfigError('mode', `${JSON.stringify(c.mode)} must be nftables or blank`));
  }
  validateNumbers(c, out);
  validateServing(c, out);
  validateCIDRs(c, out);
  validateLocalDetection(c, out);
  validateLogging(c, out);
  sectionAtDefaults('iptables', c, out);
  sectionAtDefaults('ipvs', c, out);
  sectionAtDefaults('winkernel', c, out);
  return out;
}

/** Throws one ConfigError (the first problem's path, every problem in the message). */
export function throwProblems(problems: readonly ConfigError[]): void {
  if (problems.length === 0) return;
  const first = problems[0]!;
  if (problems.length === 1) throw first;
  throw new ConfigError(
    first.path,
    `${first.message.slice(first.path.length + 2)}\n${problems
      .slice(1)
      .map((p) => `  ${p.message}`)
      .join('\n')}`,
  );
}

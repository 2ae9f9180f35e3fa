// Command line of the agent, shaped like kube-proxy's so that an operator's
// muscle memory and kubeadm's DaemonSet carry over: kube-proxy's flags and
// --config with kube-proxy's precedence (the file is the configuration, except
// the logging flags and --hostname-override), our own flags beside them.
// Pure but for reading the --config file through an injected reader.

import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { AgentOptions } from '../agent/options.ts';
import { parseConfigFile, type Configuration } from '../config/config-file.ts';
import { FeatureGateError, featureGatesFromMap, formatFeatureGates } from '../config/feature-gates.ts';
import { defaultedKubeProxyConfiguration } from '../config/kube-proxy-config.ts';
import { defaultedOwnConfiguration, ownConfigProblems, type LogLevel } from '../config/own-config.ts';
import { ConfigError } from '../config/schema.ts';
import { isDetectLocalMode, kubeProxyConfigProblems } from '../config/validate-kube-proxy.ts';
import type { EndpointShape } from '../reconciler/config.ts';
import { FLAGS, FlagError, REFUSED_FLAGS } from './flag-table.ts';
import { usage } from './usage.ts';

export { FlagError, usage };

export interface RunCommand {
  command: 'run' | 'cleanup';
  options: AgentOptions;
  /** The effective configuration (what --write-config-to writes). */
  configuration: Configuration;
  logFormat: 'text' | 'json';
  oomScoreAdj: number;
  conntrack: Configuration['kubeProxy']['conntrack'];
  configFile?: string;
  /** The file's text as parsed: the watch compares against it, so that a change right after reading is not missed. */
  configText?: string;
  writeConfigTo?: string;
  /** kube-proxy's --init-only: what needs full root privileges (the conntrack sysctls), then exit. */
  initOnly: boolean;
  /** Flags given with --config that the file overrides (kube-proxy ignores them too); the CLI warns. */
  ignoredFlags: string[];
}

export type Command = RunCommand | { command: 'help' } | { command: 'version' };

/** kube-proxy's pflag takes `--flag=true|false` for booleans and `-v N`; parseArgs takes neither. */
function normalise(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (const arg of argv) {
    const m = /^--?([a-z0-9-]+)(?:=(.*))?$/i.exec(arg);
    const name = m?.[1];
    if (name !== undefined && Object.hasOwn(REFUSED_FLAGS, name)) throw new FlagError(`--${name} is not supported: ${REFUSED_FLAGS[name]}`);
    const spec = name !== undefined && Object.hasOwn(FLAGS, name) ? FLAGS[name] : undefined;
    if (spec?.type === 'boolean' && m?.[2] !== undefined) {
      if (/^(true|1|t)$/i.test(m[2])) out.push(`--${name}`);
      else if (/^(false|0|f)$/i.test(m[2])) out.push(`--no-${name}`);
      else throw new FlagError(`--${name}: ${JSON.stringify(m[2])} is not true or false`);
      continue;
    }
    out.push(arg === '-v' ? '--v' : /^-v=?\d+$/.test(arg) ? `--v=${arg.replace(/^-v=?/, '')}` : arg);
  }
  return out;
}

function parse(argv: readonly string[]) {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = {};
  for (const [name, spec] of Object.entries(FLAGS)) {
    options[name] = { type: spec.type, ...(name === 'help' ? { short: 'h' } : {}) };
    if (spec.type === 'boolean') options[`no-${name}`] = { type: 'boolean' };
  }
  try {
    return parseArgs({ args: normalise(argv), allowPositionals: true, strict: true, options, tokens: true });
  } catch (e) {
    if (e instanceof FlagError) throw e;
    throw new FlagError(`${(e as Error).message}\n\n${usage()}`);
  }
}

/** Flags in the order given, last one winning, booleans' `--no-X` as false. */
function givenFlags(parsed: ReturnType<typeof parse>): Map<string, string | boolean> {
  const given = new Map<string, string | boolean>();
  for (const t of parsed.tokens ?? []) {
    if (t.kind !== 'option') continue;
    const negated = t.name.startsWith('no-') && !Object.hasOwn(FLAGS, t.name);
    given.set(negated ? t.name.slice(3) : t.name, negated ? false : (t.value ?? true));
  }
  return given;
}

function problemsToFlagError(problems: ConfigError[], source: string): void {
  if (problems.length === 0) return;
  throw new FlagError(`${source}: ${problems.map((p) => p.message).join('; ')}`);
}

/** The --config file's configuration, or the defaults; flags applied with kube-proxy's precedence. */
function configurationFor(
  given: Map<string, string | boolean>,
  readConfig: (path: string) => string,
): { configuration: Configuration; ignoredFlags: string[]; text?: string } {
  const configFile = given.get('config') as string | undefined;
  let configuration: Configuration;
  let text: string | undefined;
  if (configFile !== undefined) {
    try {
      text = readConfig(configFile);
    } catch (e) {
      throw new FlagError(`--config: cannot read ${configFile}: ${(e as Error).message}`);
    }
    try {
      configuration = parseConfigFile(text);
    } catch (e) {
      if (e instanceof ConfigError || e instanceof FeatureGateError) throw new FlagError(`--config ${configFile}: ${e.message}`);
      throw e;
    }
  } else {
    configuration = { kubeProxy: defaultedKubeProxyConfiguration(), own: defaultedOwnConfiguration(), hasOwnDocument: false };
  }
  const ignoredFlags: string[] = [];
  for (const [name, value] of given) {
    const spec = FLAGS[name]!;
    if (!spec.apply) continue;
    const fileWins =
      configFile !== undefined &&
      (spec.group === 'kube-proxy' || (spec.group === 'ours' && configuration.hasOwnDocument)) &&
      name !== 'hostname-override';
    if (fileWins) ignoredFlags.push(`--${name}`);
    else spec.apply(configuration, value);
  }
  problemsToFlagError(
    [...kubeProxyConfigProblems(configuration.kubeProxy), ...ownConfigProblems(configuration.own)],
    configFile === undefined ? 'flags' : `--config ${configFile} with the flags`,
  );
  return { configuration, ignoredFlags, ...(text !== undefined ? { text } : {}) };
}

/** AgentOptions from a checked configuration and the command flags. */
function agentOptions(configuration: Configuration, given: Map<string, string | boolean>): AgentOptions {
  let gates: ReturnType<typeof featureGatesFromMap>;
  try {
    gates = featureGatesFromMap(configuration.kubeProxy.featureGates);
  } catch (e) {
    if (e instanceof FeatureGateError) throw new FlagError(`featureGates: ${e.message}`);
    throw e;
  }
  const { kubeProxy: kp, own } = configuration;
  if (own.manifests !== '' && kp.clientConnection.kubeconfig !== '') {
    throw new FlagError('--manifests and --kubeconfig are exclusive: choose one source of cluster state');
  }
  const mode = kp.detectLocalMode === '' ? 'ClusterCIDR' : kp.detectLocalMode;
  if (!isDetectLocalMode(mode)) throw new FlagError(`detectLocalMode ${JSON.stringify(mode)}`); // checked already; narrows the type
  return {
    kubeconfig: kp.clientConnection.kubeconfig || undefined,
    manifests: own.manifests || undefined,
    hostnameOverride: kp.hostnameOverride || undefined,
    clusterCIDRs: kp.clusterCIDR === '' ? [] : kp.clusterCIDR.split(','),
    serviceCIDRs: own.serviceCIDRs,
    nodePortAddresses: kp.nodePortAddresses.length === 0 ? ['primary'] : kp.nodePortAddresses,
    ...(kp.bindAddress !== '0.0.0.0' && kp.bindAddress !== '::' ? { bindAddress: kp.bindAddress } : {}),
    masqueradeAll: kp.nftables.masqueradeAll,
    masqueradeBit: kp.nftables.masqueradeBit,
    detectLocal: {
      mode,
      ...(mode === 'BridgeInterface' ? { bridgeInterface: kp.detectLocal.bridgeInterface } : {}),
      ...(mode === 'InterfaceNamePrefix' ? { interfaceNamePrefix: kp.detectLocal.interfaceNamePrefix } : {}),
    },
    minSyncPeriodMs: kp.nftables.minSyncPeriod,
    syncPeriodMs: kp.nftables.syncPeriod,
    fullSyncPeriodMs: own.fullSyncPeriod,
    featureGates: formatFeatureGates(gates),
    serviceProxyName: own.serviceProxyName || undefined,
    table: own.table,
    offloadPacketThreshold: own.offload.packetThreshold,
    offloadInterfaces: own.offload.interfaces,
    offloadExcludeInterfaces: own.offload.excludeInterfaces,
    metricsBindAddress: kp.metricsBindAddress,
    healthzBindAddress: kp.healthzBindAddress,
    endpointShape: own.endpointShape as EndpointShape,
    netns: given.get('netns') as string | undefined,
    dryRun: given.get('dry-run') === true,
    logLevel: logLevelFor(own.logLevel, kp.logging.verbosity),
    apiClient: {
      qps: kp.clientConnection.qps,
      burst: kp.clientConnection.burst,
      contentType: kp.clientConnection.contentType,
      acceptContentTypes: kp.clientConnection.acceptContentTypes,
      ...(given.has('master') ? { server: given.get('master') as string } : {}),
    },
  };
}

export function parseCommandLine(argv: readonly string[], readConfig: (path: string) => string = (p) => readFileSync(p, 'utf8')): Command {
  const parsed = parse(argv);
  const given = givenFlags(parsed);
  if (given.get('help') === true) return { command: 'help' };
  if (given.get('version') === true) return { command: 'version' };
  const [sub, ...rest] = parsed.positionals;
  if (rest.length > 0 || (sub !== undefined && sub !== 'run' && sub !== 'cleanup')) {
    throw new FlagError(`unexpected argument ${JSON.stringify(rest[0] ?? sub)}\n\n${usage()}`);
  }
  const { configuration, ignoredFlags, text } = configurationFor(given, readConfig);
  const configFile = given.get('config') as string | undefined;
  const kp = configuration.kubeProxy;
  return {
    command: sub === 'cleanup' || given.get('cleanup') === true ? 'cleanup' : 'run',
    options: agentOptions(configuration, given),
    configuration,
    logFormat: kp.logging.format === 'text' ? 'text' : 'json',
    oomScoreAdj: kp.oomScoreAdj,
    conntrack: kp.conntrack,
    ...(configFile !== undefined ? { configFile, configText: text } : {}),
    ...(given.has('write-config-to') ? { writeConfigTo: given.get('write-config-to') as string } : {}),
    initOnly: given.get('init-only') === true,
    ignoredFlags,
  };
}

/**
 * klog verbosity onto pino levels: V(0)-V(2) are what kube-proxy logs in steady
 * state (info), V(3)-V(4) its detail of changes (debug), V(5)+ trace. Our own
 * --log-level, when given, wins.
 */
export function logLevelFor(logLevel: string, verbosity: number): LogLevel {
  if (logLevel !== '') return logLevel as LogLevel;
  return verbosity <= 2 ? 'info' : verbosity <= 4 ? 'debug' : 'trace';
}

// Feature gates, spelled as kube-proxy spells them: --feature-gates=A=true,B=false.
//
// Accepted: the gates this proxy implements, and kube-proxy 1.32's gates that
// concern a proxy, with their real 1.32 stage and default (pkg/features,
// k8s.io/component-base/logs). A kube-proxy gate whose other value we cannot
// honour is refused with the reason. An unknown gate is an error rather than a
// warning: an operator who sets a gate expects a behaviour, and silently
// running without it is worse than refusing to start. As in Kubernetes, alpha
// gates are off and beta gates on unless turned the other way, and AllAlpha /
// AllBeta set every alpha / beta gate that is not named explicitly.

export interface FeatureGates {
  /**
   * KEP-2030: honour endpointslice.kubernetes.io/for-zone and for-region.
   * Alpha, so off unless turned on (kube-proxy never implemented the KEP): off
   * routes exactly as kube-proxy does.
   */
  readonly TopologyAwareProxying: boolean;
  /**
   * KEP-1860: skip LoadBalancer ingress IPs whose ipMode is Proxy. Default true:
   * beta and on by default in kube-proxy since 1.30; off means every ingress IP
   * is programmed, as before the KEP.
   */
  readonly LoadBalancerIPMode: boolean;
  /**
   * KEP-4963: offload established service connections to a flowtable once they
   * pass a packet threshold. Default true although the KEP is alpha: its stated
   * design ("Sane Defaults") is on by default with a threshold of 20 packets, so
   * short connections never take the fast path and most users gain without
   * configuration. Kernels without flowtable support (CONFIG_NF_FLOW_TABLE
   * unset) refuse the whole batch, so the renderer must probe before using it;
   * the gate says "wanted", not "available".
   */
  readonly KubeProxyAcceleration: boolean;
}

export type FeatureGateName = keyof FeatureGates;

export interface FeatureGateSpec {
  default: boolean;
  stage: 'alpha' | 'beta' | 'GA';
  kep: string;
}

export const FEATURE_GATE_SPECS: Readonly<Record<FeatureGateName, FeatureGateSpec>> = {
  TopologyAwareProxying: { default: false, stage: 'alpha', kep: 'KEP-2030' },
  LoadBalancerIPMode: { default: true, stage: 'beta', kep: 'KEP-1860' },
  KubeProxyAcceleration: { default: false, stage: 'alpha', kep: 'KEP-4963' },
};

export const DEFAULT_FEATURE_GATES: FeatureGates = Object.freeze({
  TopologyAwareProxying: FEATURE_GATE_SPECS.TopologyAwareProxying.default,
  LoadBalancerIPMode: FEATURE_GATE_SPECS.LoadBalancerIPMode.default,
  KubeProxyAcceleration: FEATURE_GATE_SPECS.KubeProxyAcceleration.default,
});

export type FeatureGateErrorCode = 'ERR_FEATURE_GATE_UNKNOWN' | 'ERR_FEATURE_GATE_VALUE' | 'ERR_FEATURE_GATE_SYNTAX';

export class FeatureGateError extends Error {
  readonly code: FeatureGateErrorCode;
  /** The gate name or the offending item as written. */
  readonly item: string;
  constructor(code: FeatureGateErrorCode, item: string, message: string) {
    super(message);
    this.name = 'FeatureGateError';
    this.code = code;
    this.item = item;
  }
}

/**
 * kube-proxy 1.32's gates that concern a proxy but change nothing we decide:
 * `fixed` is the only value we can honour (setting the other is refused with
 * the reason); gates without `fixed` take either value and change nothing here.
 */
export interface AcceptedGateSpec {
  default: boolean;
  stage: 'alpha' | 'beta' | 'GA';
  fixed?: { value: boolean; reason: string };
}

export const ACCEPTED_GATE_SPECS: Readonly<Record<string, AcceptedGateSpec>> = {
  AllAlpha: { default: false, stage: 'alpha' },
  AllBeta: { default: false, stage: 'beta' },
  ContextualLogging: { default: true, stage: 'beta' },
  LoggingAlphaOptions: { default: false, stage: 'alpha' },
  LoggingBetaOptions: { default: true, stage: 'beta' },
  KubeProxyDrainingTerminatingNodes: {
    default: true,
    stage: 'GA',
    fixed: { value: true, reason: 'GA and locked to true in 1.32; /healthz always reports a Node being deleted' },
  },
  MultiCIDRServiceAllocator: {
    default: false,
    stage: 'beta',
    fixed: { value: false, reason: 'ServiceCIDR objects are not watched; give the service ranges with --service-cluster-ip-range' },
  },
  NFTablesProxyMode: { default: true, stage: 'beta', fixed: { value: true, reason: 'kube-nft-proxy is the nftables proxy mode' } },
  ServiceTrafficDistribution: {
    default: true,
    stage: 'beta',
    fixed: { value: true, reason: 'spec.trafficDistribution hints are always honoured' },
  },
  TopologyAwareHints: { default: true, stage: 'beta', fixed: { value: true, reason: 'topology hints are always honoured' } },
};

function isGateName(name: string): name is FeatureGateName {
  return Object.hasOwn(FEATURE_GATE_SPECS, name);
}

function knownList(): string {
  return [...Object.keys(FEATURE_GATE_SPECS), ...Object.keys(ACCEPTED_GATE_SPECS)].sort().join(', ');
}

/** Checks a kube-proxy gate we accept; false when the name is none of them. */
function acceptGate(name: string, value: boolean): boolean {
  const spec = Object.hasOwn(ACCEPTED_GATE_SPECS, name) ? ACCEPTED_GATE_SPECS[name] : undefined;
  if (!spec) return false;
  if (spec.fixed && spec.fixed.value !== value) {
    throw new FeatureGateError('ERR_FEATURE_GATE_VALUE', name, `feature gate ${name}=${value} cannot be honoured: ${spec.fixed.reason}`);
  }
  return true;
}

// The spellings Go's strconv.ParseBool takes, which Kubernetes' feature gate parser uses.
const TRUE_WORDS = new Set(['1', 't', 'T', 'true', 'TRUE', 'True']);
const FALSE_WORDS = new Set(['0', 'f', 'F', 'false', 'FALSE', 'False']);

function parseBool(name: string, value: string): boolean {
  if (TRUE_WORDS.has(value)) return true;
  if (FALSE_WORDS.has(value)) return false;
  throw new FeatureGateError(
    'ERR_FEATURE_GATE_VALUE',
    name,
    `invalid value ${JSON.stringify(value)} for feature gate ${name}: expected true or false`,
  );
}

function withOverrides(
  overrides: Map<FeatureGateName, boolean>,
  base: FeatureGates,
  all: { alpha?: boolean; beta?: boolean } = {},
): FeatureGates {
  const gates: { -readonly [K in FeatureGateName]: boolean } = { ...base };
  for (const name of Object.keys(FEATURE_GATE_SPECS) as FeatureGateName[]) {
    const stage = FEATURE_GATE_SPECS[name].stage;
    if (stage === 'alpha' && all.alpha !== undefined) gates[name] = all.alpha;
    if (stage === 'beta' && all.beta !== undefined) gates[name] = all.beta;
  }
  for (const [name, value] of overrides) gates[name] = value;
  return Object.freeze(gates);
}

function noteAll(all: { alpha?: boolean; beta?: boolean }, name: string, value: boolean): void {
  if (name === 'AllAlpha') all.alpha = value;
  if (name === 'AllBeta') all.beta = value;
}

/**
 * Parses the value of --feature-gates ("A=true,B=false"; a leading
 * "--feature-gates=" is tolerated). Whitespace around items is ignored; an
 * empty string means all defaults; a gate given twice takes its last value.
 */
export function parseFeatureGates(text: string, base: FeatureGates = DEFAULT_FEATURE_GATES): FeatureGates {
  let s = text.trim();
  if (s.startsWith('--feature-gates=')) s = s.slice('--feature-gates='.length);
  const overrides = new Map<FeatureGateName, boolean>();
  const all: { alpha?: boolean; beta?: boolean } = {};
  if (s.trim() === '') return withOverrides(overrides, base);
  for (const raw of s.split(',')) {
    const item = raw.trim();
    const eq = item.indexOf('=');
    if (eq <= 0) {
      throw new FeatureGateError(
        'ERR_FEATURE_GATE_SYNTAX',
        item,
        `missing "=" in feature gate ${JSON.stringify(item)}: expected Name=true|false`,
      );
    }
    const name = item.slice(0, eq).trim();
    const value = parseBool(name, item.slice(eq + 1).trim());
    if (isGateName(name)) overrides.set(name, value);
    else if (acceptGate(name, value)) noteAll(all, name, value);
    else throw new FeatureGateError('ERR_FEATURE_GATE_UNKNOWN', name, `unknown feature gate ${name} (known: ${knownList()})`);
  }
  return withOverrides(overrides, base, all);
}

/** The config-file form (featureGates: {Name: true}); same checks as the flag. */
export function featureGatesFromMap(map: Readonly<Record<string, unknown>>, base: FeatureGates = DEFAULT_FEATURE_GATES): FeatureGates {
  const overrides = new Map<FeatureGateName, boolean>();
  const all: { alpha?: boolean; beta?: boolean } = {};
  for (const [name, raw] of Object.entries(map)) {
    let value: boolean;
    if (typeof raw === 'boolean') value = raw;
    else if (typeof raw === 'string') value = parseBool(name, raw.trim());
    else throw new FeatureGateError('ERR_FEATURE_GATE_VALUE', name, `invalid value for feature gate ${name}: expected a boolean`);
    if (isGateName(name)) overrides.set(name, value);
    else if (acceptGate(name, value)) noteAll(all, name, value);
    else throw new FeatureGateError('ERR_FEATURE_GATE_UNKNOWN', name, `unknown feature gate ${name} (known: ${knownList()})`);
  }
  return withOverrides(overrides, base, all);
}

/** "A=true,B=false" with every gate, sorted: for logs and --help. */
export function formatFeatureGates(gates: FeatureGates): string {
  return (Object.keys(FEATURE_GATE_SPECS) as FeatureGateName[])
    .sort()
    .map((name) => `${name}=${gates[name]}`)
    .join(',');
}

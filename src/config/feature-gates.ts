// Feature gates, spelled as kube-proxy spells them: --feature-gates=A=true,B=false.
//
// Only gates this proxy implements are accepted. An unknown gate is an error
// rather than a warning: an operator who sets a gate expects a behaviour, and
// silently running without it is worse than refusing to start.

export interface FeatureGates {
  /**
   * KEP-2030: honour endpointslice.kubernetes.io/for-zone and for-region.
   * Default true, unlike kube-proxy (which never implemented the alpha KEP):
   * topology aware proxying is one of the things this proxy exists to do, and
   * the default changes nothing where no producer labels its slices — the
   * labels appear only where a controller deliberately subsets endpoints, and
   * then honouring them is what that controller asked for. Set it to false to
   * route exactly as kube-proxy does.
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
  TopologyAwareProxying: { default: true, stage: 'alpha', kep: 'KEP-2030' },
  LoadBalancerIPMode: { default: true, stage: 'beta', kep: 'KEP-1860' },
  KubeProxyAcceleration: { default: true, stage: 'alpha', kep: 'KEP-4963' },
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

function isGateName(name: string): name is FeatureGateName {
  return Object.hasOwn(FEATURE_GATE_SPECS, name);
}

function knownList(): string {
  return Object.keys(FEATURE_GATE_SPECS).sort().join(', ');
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

function withOverrides(overrides: Map<FeatureGateName, boolean>, base: FeatureGates): FeatureGates {
  const gates: { -readonly [K in FeatureGateName]: boolean } = { ...base };
  for (const [name, value] of overrides) gates[name] = value;
  return Object.freeze(gates);
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
    if (!isGateName(name)) {
      throw new FeatureGateError('ERR_FEATURE_GATE_UNKNOWN', name, `unknown feature gate ${name} (known: ${knownList()})`);
    }
    overrides.set(name, parseBool(name, item.slice(eq + 1).trim()));
  }
  return withOverrides(overrides, base);
}

/** The config-file form (featureGates: {Name: true}); same checks as the flag. */
export function featureGatesFromMap(map: Readonly<Record<string, unknown>>, base: FeatureGates = DEFAULT_FEATURE_GATES): FeatureGates {
  const overrides = new Map<FeatureGateName, boolean>();
  for (const [name, value] of Object.entries(map)) {
    if (!isGateName(name)) {
      throw new FeatureGateError('ERR_FEATURE_GATE_UNKNOWN', name, `unknown feature gate ${name} (known: ${knownList()})`);
    }
    if (typeof value === 'boolean') overrides.set(name, value);
    else if (typeof value === 'string') overrides.set(name, parseBool(name, value.trim()));
    else {
      throw new FeatureGateError('ERR_FEATURE_GATE_VALUE', name, `invalid value for feature gate ${name}: expected a boolean`);
    }
  }
  return withOverrides(overrides, base);
}

/** "A=true,B=false" with every gate, sorted: for logs and --help. */
export function formatFeatureGates(gates: FeatureGates): string {
  return (Object.keys(FEATURE_GATE_SPECS) as FeatureGateName[])
    .sort()
    .map((name) => `${name}=${gates[name]}`)
    .join(',');
}

// kube-nft-proxy as a library: the pieces an embedder composes, each usable on
// its own — the nftables object model and its netlink dataplane, the cluster
// streams, the pure service model, the reconciler, and the whole agent.
// README's "Library API" documents every export; examples/library/ uses them.
//
// Importing this module loads no native code: the addon is loaded by
// loadAddon(), which only NetlinkDataplane and LinkMonitor call, when constructed.

// The agent
export { startAgent, netnsPath, MAX_FLOWTABLE_DEVICES, type Agent, type AgentDeps } from './agent/agent.ts';
export { dryRun, renderKernelText, DryRunError, type DryRunDeps } from './agent/dry-run.ts';
export { rulesetConfigFor } from './agent/ruleset-config.ts';
export { parseCommandLine, FlagError } from './cli/flags.ts';
export type { AgentOptions } from './agent/options.ts';
export { parseFeatureGates, DEFAULT_FEATURE_GATES, FeatureGateError, type FeatureGates } from './config/feature-gates.ts';

// nftables: objects, transactions, text, kernel
export type * from './nft/objects.ts';
export { objectKey } from './nft/objects.ts';
export { NftCommitError, type Dataplane, type OperationFailure, type TableListing } from './nft/dataplane.ts';
export { NetlinkDataplane, type NetlinkDataplaneOptions } from './nft/netlink/netlink-dataplane.ts';
export { FakeKernel } from './nft/fake/fake-kernel.ts';
export { Transaction, validateOperations, NftInvalidError, type OperationCount } from './nft/transaction.ts';
export { runOperations, type ElementRun, type GeneratedItem } from './nft/element-run.ts';
export { renderOperations, renderTableText } from './nft/render-text.ts';
export { probeFlowtables, type CapabilityAnswer } from './nft/capabilities.ts';
export { LinkMonitor } from './links/link-monitor.ts';
export { readSysfsLinks, staticLinkSource, type LinkSource } from './links/sysfs-links.ts';
export type { LinkInfo, LinkMap } from './links/link-state.ts';
export { flowtableDevices } from './links/flowtable-devices.ts';

// Cluster state
export { createClusterStreams, type ClusterStreams, type ClusterStreamsOptions } from './streams/cluster-streams.ts';
export type * from './k8s/types.ts';
export { packConditions, READY, SERVING, TERMINATING, type EndpointConditions } from './k8s/endpoint-conditions.ts';

// The pure service model
export * from './model/index.ts';

// The reconciler
export {
  Reconciler,
  SyncError,
  type ModelRead,
  type RejectedServicePort,
  type ReconcilerOptions,
  type SyncReport,
  type SyncRequest,
} from './reconciler/reconciler.ts';
export { syncRunner, type SyncResult } from './reconciler/sync-runner.ts';
export { renderRuleset, type Ruleset } from './reconciler/ruleset.ts';
export { defaultRulesetConfig, type RulesetConfig, type FamilyConfig } from './reconciler/config.ts';
export { rulesetListings } from './reconciler/listing.ts';

// The native addon (loaded only by loadAddon, on first use)
export { loadAddon, platformPackageName, NativeLoadError, type AddonAttempt } from './native/addon.ts';

// Observability
export { createLogger, type Logger } from './observability/logger.ts';
export { ProxyMetrics } from './observability/metrics.ts';
export { HealthState } from './observability/health.ts';

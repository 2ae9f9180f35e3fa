// --dry-run: the agent itself (streams, change tracker, config, renderer,
// reconciler, flowtable device derivation) runs its first sync against the
// kernel-modelling fake instead of the kernel, and what the fake then holds is
// printed as nft text. So the output is exactly what the agent would commit
// first, including the fake kernel's checks of references and base-chain paths.
//
// Nothing here loads the addon: the dataplane is the fake, and the link source
// reads /sys/class/net once instead of the native rtnetlink monitor. Flowtable
// support is assumed (the header says so) to show what offload would add.

import { FakeKernel } from '../nft/fake/fake-kernel.ts';
import type { Family } from '../nft/objects.ts';
import { renderTableText } from '../nft/render-text.ts';
import { readSysfsLinks, staticLinkSource, type LinkSource } from '../links/sysfs-links.ts';
import type { Logger } from '../observability/logger.ts';
import type { SyncResult } from '../reconciler/sync-runner.ts';
import type { ClusterStreams } from '../streams/cluster-streams.ts';
import { startAgent } from './agent.ts';
import type { AgentOptions } from './options.ts';

export interface DryRunDeps {
  /** Default: from options (--manifests or --kubeconfig). */
  streams?: ClusterStreams;
  /** Default: the interfaces in /sys/class/net, read once. */
  links?: () => LinkSource;
  /** The fake kernel to commit to (default: a new one with flowtables); it holds the result afterwards. */
  kernel?: FakeKernel;
}

/** The first sync did not go through; the dry run has nothing true to print. */
export class DryRunError extends Error {
  readonly code = 'ERR_DRY_RUN';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DryRunError';
  }
}

function firstSync(): { onSync: (r: SyncResult) => void; result: Promise<SyncResult> } {
  let resolve!: (r: SyncResult) => void;
  const result = new Promise<SyncResult>((r) => (resolve = r));
  return { onSync: (r) => resolve(r), result };
}

/** Every table the fake kernel holds, as `nft list ruleset` would print it. */
export function renderKernelText(kernel: FakeKernel): string {
  const out: string[] = [];
  for (const key of kernel.tableNames()) {
    const [family, name] = key.split(' ') as [Family, string];
    const listing = kernel.listSync(family, name);
    if (listing) out.push(renderTableText(listing));
  }
  return out.join('\n');
}

/**
 * Runs the agent's first sync against a FakeKernel and returns the ruleset it
 * committed as nft text, after a header. Fails with DryRunError when that sync
 * fails (the fake kernel refused the transaction, or the cluster state could
 * not be read).
 */
export async function dryRun(options: AgentOptions, logger: Logger, deps: DryRunDeps = {}): Promise<string> {
  const kernel = deps.kernel ?? new FakeKernel({ flowtables: true });
  const sync = firstSync();
  const agent = await startAgent(options, {
    // Every line the agent logs says that its kernel was the fake one.
    logger: logger.child({ dryRun: true }),
    dataplane: kernel,
    ...(deps.streams ? { streams: deps.streams } : {}),
    linkMonitor: deps.links ?? (() => staticLinkSource(readSysfsLinks())),
    serveHttp: false,
    releaseMemory: () => undefined,
    onSync: sync.onSync,
  });
  let result: SyncResult;
  try {
    result = await sync.result;
  } finally {
    await agent.stop();
  }
  if (!result.ok)
    throw new DryRunError(`the first sync failed: ${(result.error as Error)?.message ?? String(result.error)}`, { cause: result.error });
  const offload = agent.offload.wanted && agent.offload.supported;
  const header = [
    `# kube-nft-proxy --dry-run for node ${agent.nodeName}: ${result.report?.servicePorts ?? 0} service ports`,
    offload ? '# flowtable support assumed, not probed (a dry run touches no kernel)' : '# flowtable offload off',
  ];
  return `${header.join('\n')}\n${renderKernelText(kernel)}`;
}

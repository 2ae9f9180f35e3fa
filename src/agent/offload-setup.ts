// KEP-4963 flowtable offload, as the agent sets it up: whether to offload
// (the feature gate, the packet threshold, the kernel's answer) and the
// flowtable's devices following the node's interfaces.

import type { Subscription, SchedulerLike } from '../rx.ts';
import type { AgentOptions } from './options.ts';
import type { FeatureGates } from '../config/feature-gates.ts';
import type { FlowtableDeviceFilter } from '../links/flowtable-devices.ts';
import { LinkMonitor } from '../links/link-monitor.ts';
import { restartingLinkSource } from '../links/restarting-link-source.ts';
import type { LinkSource } from '../links/sysfs-links.ts';
import { probeFlowtables } from '../nft/capabilities.ts';
import type { Dataplane } from '../nft/dataplane.ts';
import type { Logger } from '../observability/logger.ts';
import type { ProxyMetrics } from '../observability/metrics.ts';
import { DEFAULT_DEVICE_MAX_WAIT_MS, DEFAULT_DEVICE_SETTLE_MS, followFlowtableDevices } from './flowtable-device-follower.ts';
import type { OffloadState } from './ruleset-config.ts';
import type { DeviceDepartures } from '../reconciler/departed-devices.ts';

/**
 * Kernels before the 2023 netfilter change that lifted the cap refuse a
 * flowtable with 256 or more devices (EFBIG), failing the whole batch.
 */
export const MAX_FLOWTABLE_DEVICES = 255;

function interfaceFilter(options: AgentOptions): FlowtableDeviceFilter {
  const asMatcher = (names: string[]) => (names.length === 1 && /^\/.*\/$/.test(names[0]!) ? new RegExp(names[0]!.slice(1, -1)) : names);
  return {
    ...(options.offloadInterfaces.length > 0 ? { include: asMatcher(options.offloadInterfaces) } : {}),
    ...(options.offloadExcludeInterfaces.length > 0 ? { exclude: asMatcher(options.offloadExcludeInterfaces) } : {}),
  };
}

/** KEP-4963: decide whether to offload and tell the operator clearly when the kernel cannot. */
export async function decideOffload(
  options: AgentOptions,
  gates: FeatureGates,
  dataplane: Dataplane,
  logger: Logger,
): Promise<OffloadState & { reason: string }> {
  if (!gates.KubeProxyAcceleration)
    return { wanted: false, supported: false, devices: [], reason: 'feature gate KubeProxyAcceleration is off' };
  if (options.offloadPacketThreshold === 0)
    return { wanted: false, supported: false, devices: [], reason: '--offload-packet-threshold is 0' };
  const answer = await probeFlowtables(dataplane);
  if (answer.status !== 'supported') {
    logger.warn(
      { capability: 'flowtable', status: answer.status, reason: answer.reason },
      'flowtable acceleration (KEP-4963) is OFF: this kernel has no nftables flowtables (needs CONFIG_NF_FLOW_TABLE, ' +
        'nf_flow_table_inet and nft_flow_offload); Service traffic is proxied without offload',
    );
    return { wanted: true, supported: false, devices: [], reason: answer.reason };
  }
  logger.info(
    { capability: 'flowtable', status: answer.status, reason: answer.reason, offloadPacketThreshold: options.offloadPacketThreshold },
    'flowtable acceleration (KEP-4963) is on: Service connections are offloaded after the packet threshold',
  );
  return { wanted: true, supported: true, devices: [], reason: answer.reason };
}

/** What following the node's interfaces takes from the agent's dependencies. */
export interface DeviceFollowingDeps {
  logger: Logger;
  /** The link source (default: a LinkMonitor on --netns). */
  linkMonitor?: (() => LinkSource) | undefined;
  scheduler?: SchedulerLike | undefined;
}

/**
 * Starts the flowtable's devices following the node's interfaces, calling
 * `changed` when offload.devices changes; returns the link source to stop
 * (undefined when offload is off).
 */
export function followDevices(
  d: { options: AgentOptions; offload: OffloadState; metrics: ProxyMetrics; subs: Subscription; netnsPath: string | undefined },
  deps: DeviceFollowingDeps,
  changed: (departed: DeviceDepartures) => void,
): LinkSource | undefined {
  const { offload, metrics } = d;
  const { logger } = deps;
  if (!offload.wanted || !offload.supported) return undefined;
  const make = () => (deps.linkMonitor ? deps.linkMonitor() : new LinkMonitor({ netns: d.netnsPath }));
  const monitor = restartingLinkSource(make, {
    logger,
    scheduler: deps.scheduler,
    onRestart: () => metrics.linkMonitorRestarts.inc(),
  });
  const follower = followFlowtableDevices(monitor.links$, {
    filter: interfaceFilter(d.options),
    maxDevices: MAX_FLOWTABLE_DEVICES,
    settleMs: DEFAULT_DEVICE_SETTLE_MS,
    maxWaitMs: DEFAULT_DEVICE_MAX_WAIT_MS,
    scheduler: deps.scheduler,
  });
  d.subs.add(
    follower.subscribe({
      next: ({ devices, matched, gone = [], renamed = [] }) => {
        if (matched > MAX_FLOWTABLE_DEVICES) {
          logger.warn(
            { interfaces: matched, limit: MAX_FLOWTABLE_DEVICES },
            'more interfaces than a flowtable takes on older kernels (EFBIG at 256); offloading through the first ones ' +
              'only (narrow the set with --offload-interfaces)',
          );
        }
        logger.info(
          { devices, ...(gone.length ? { gone } : {}), ...(renamed.length ? { renamed } : {}) },
          'flowtable devices follow the node interfaces',
        );
        offload.devices = devices;
        metrics.offloadDevices.set(devices.length);
        changed({ gone, renamed });
      },
      // A failed monitor is replaced (restartingLinkSource): only the follower itself can end here.
      error: (err: unknown) => logger.error({ err }, 'flowtable devices no longer follow the node interfaces'),
    }),
  );
  monitor.start();
  return monitor;
}

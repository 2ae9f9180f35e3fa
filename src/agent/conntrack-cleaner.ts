// Runs the conntrack cleanup after syncs: which entries are stale is decided by
// the pure conntrackTargets (src/reconciler/conntrack-targets.ts); this file
// only queues, calls the addon (whose dumps and deletes run off the JS thread,
// in batches of `batchSize` deletes) and reports.
//
// - After an incremental sync, only the ports that sync changed (the change
//   tracker's word), each by a dump the kernel filters on its frontend: only
//   that frontend's entries reach user space. The kernel still walks its whole
//   table for a dump, filtered or not (it has no index by destination), so the
//   cost grows with the table, ~10x slower than the change itself but ~10x
//   below kube-proxy's whole-table pass (bench:conntrack, 100k entries: 31 ms
//   against 300 ms).
// - After a full sync (start-up, the periodic resync), every port, from one
//   dump of the whole table: the safety net for whatever was missed.
// - One cleanup at a time; what arrives meanwhile is merged and runs next. It
//   never delays a sync: the sync has already committed when it is queued.
// - A failure is logged and counted, never thrown: stale entries time out by
//   themselves eventually, and the next full resync tries again.

import type { IPFamily } from '../k8s/types.ts';
import type { ServicePort } from '../model/service-port.ts';
import type { NativeConntrack, NativeConntrackCleanResult, NativeConntrackTarget } from '../native/conntrack-types.ts';
import type { Logger } from '../observability/logger.ts';
import type { ProxyMetrics } from '../observability/metrics.ts';
import { type ConntrackProtocol, type ConntrackTarget, conntrackTargets } from '../reconciler/conntrack-targets.ts';

export type ConntrackCleanupKind = 'changed' | 'full';

export interface ConntrackCleanerOptions {
  native: Pick<NativeConntrack, 'conntrackClean'>;
  /** Network namespace path the rules are programmed in. */
  netns?: string;
  logger: Logger;
  metrics: Pick<ProxyMetrics, 'conntrackEntriesDeleted' | 'conntrackCleanupFailures'>;
  /** Deletes per netlink send (default 256). */
  batchSize?: number;
}

/** What one cleanup did, over both families. */
export interface ConntrackCleanupReport {
  kind: ConntrackCleanupKind;
  targets: number;
  scanned: number;
  deleted: number;
  failed: number;
  durationMs: number;
}

export const DEFAULT_CONNTRACK_BATCH = 256;

/**
 * Past this many targets one unfiltered dump, matched against them all, is
 * cheaper than a filtered dump each: the kernel walks its whole table for
 * every dump, filtered or not. bench:conntrack: one filtered dump and its
 * deletes 6.9 / 31 ms against 56 / 300 ms for the whole-table pass at 10k /
 * 100k entries (a ratio of 8 to 10).
 */
export const FILTERED_DUMPS_MAX = 8;

const PROTOCOL_NUMBER: Record<ConntrackProtocol, number> = { UDP: 17, SCTP: 132 };
const FAMILY_NUMBER: Record<IPFamily, 4 | 6> = { IPv4: 4, IPv6: 6 };

function nativeTarget(t: ConntrackTarget): NativeConntrackTarget {
  return { protocol: PROTOCOL_NUMBER[t.protocol], ...(t.address !== undefined ? { address: t.address } : {}), port: t.port, keep: t.keep };
}

export class ConntrackCleaner {
  readonly #o: ConntrackCleanerOptions;
  readonly #batchSize: number;
  #pendingFull: readonly ServicePort[] | undefined;
  readonly #pendingChanged = new Map<string, ServicePort>();
  #running: Promise<void> | undefined;
  /** Every finished cleanup, for tests and embedders. */
  readonly reports: ConntrackCleanupReport[] = [];

  constructor(o: ConntrackCleanerOptions) {
    this.#o = o;
    this.#batchSize = o.batchSize ?? DEFAULT_CONNTRACK_BATCH;
  }

  /** Queues a cleanup for these ports (the ones a sync changed). */
  changed(ports: Iterable<ServicePort>): void {
    for (const sp of ports) this.#pendingChanged.set(sp.id, sp);
    if (this.#pendingChanged.size > 0) this.#kick();
  }

  /** Queues a cleanup of the whole table for every port; it covers the changes queued before it. */
  full(ports: readonly ServicePort[]): void {
    this.#pendingFull = ports;
    this.#pendingChanged.clear();
    this.#kick();
  }

  /** Resolves once nothing is queued or running. */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  #kick(): void {
    if (this.#running) return;
    this.#running = this.#drain().finally(() => {
      this.#running = undefined;
    });
  }

  async #drain(): Promise<void> {
    for (;;) {
      if (this.#pendingFull) {
        const ports = this.#pendingFull;
        this.#pendingFull = undefined;
        await this.#run('full', ports);
      } else if (this.#pendingChanged.size > 0) {
        const ports = [...this.#pendingChanged.values()];
        this.#pendingChanged.clear();
        await this.#run('changed', ports);
      } else {
        return;
      }
    }
  }

  async #run(kind: ConntrackCleanupKind, ports: readonly ServicePort[]): Promise<void> {
    const t0 = performance.now();
    const targets = conntrackTargets(ports);
    const report: ConntrackCleanupReport = { kind, targets: 0, scanned: 0, deleted: 0, failed: 0, durationMs: 0 };
    for (const family of ['IPv4', 'IPv6'] as const) {
      const list = targets[family];
      if (list.length === 0) continue;
      report.targets += list.length;
      let result: NativeConntrackCleanResult | undefined;
      try {
        result = await this.#o.native.conntrackClean(
          {
            family: FAMILY_NUMBER[family],
            full: kind === 'full' || list.length > FILTERED_DUMPS_MAX,
            batchSize: this.#batchSize,
            targets: list.map(nativeTarget),
          },
          this.#o.netns !== undefined ? { netns: this.#o.netns } : {},
        );
      } catch (err) {
        this.#o.metrics.conntrackCleanupFailures.inc({ kind });
        this.#o.logger.error(
          { err, family, kind },
          'conntrack cleanup failed; stale UDP/SCTP entries stay until they time out or the next full resync',
        );
        continue;
      }
      report.scanned += result.scanned;
      report.deleted += result.deleted;
      report.failed += result.failed;
      this.#o.metrics.conntrackEntriesDeleted.inc({ kind }, result.deleted);
      if (result.error !== undefined || result.failed > 0) {
        this.#o.metrics.conntrackCleanupFailures.inc({ kind });
        this.#o.logger.warn(
          { family, kind, error: result.error, errno: result.errno, deleted: result.deleted, failed: result.failed },
          'conntrack cleanup incomplete; what is left is tried again at the next full resync',
        );
      }
    }
    report.durationMs = performance.now() - t0;
    this.reports.push(report);
    const fields = { ...report, durationMs: Math.round(report.durationMs * 10) / 10 };
    if (report.deleted > 0) this.#o.logger.info(fields, 'deleted stale conntrack entries');
    else this.#o.logger.debug(fields, 'conntrack cleanup found nothing stale');
  }
}

// What the agent does with a sync's outcome, apart from the wiring in agent.ts:
// the ports whose conntrack cleanup follows a sync, the fields of its log line,
// and how a refused Service port is told (log, refused$, a Warning Event).

import { readFileSync } from 'node:fs';
import type { ServicePortChange } from '../model/change-tracker.ts';
import type { ServicePort } from '../model/service-port.ts';
import type { Logger } from '../observability/logger.ts';
import type { Dataplane } from '../nft/dataplane.ts';
import type { RejectedServicePort } from '../reconciler/reconciler.ts';
import type { SyncResult } from '../reconciler/sync-runner.ts';
import type { EventRecorder } from './event-recorder.ts';

/** The process's memory in MiB, for log lines. */
export function memoryMiB(): Record<string, number> {
  const m = process.memoryUsage();
  const mib = (b: number) => Math.round(b / 2 ** 20);
  return {
    rss: mib(m.rss),
    heapUsed: mib(m.heapUsed),
    heapTotal: mib(m.heapTotal),
    external: mib(m.external),
    arrayBuffers: mib(m.arrayBuffers),
  };
}

/** A full sync's log line's `cpuMs` (cpuMs()); bench:sync reads it back. */
export interface CpuMs {
  jsThread: number;
  process: number;
  jsThreadWaited?: number;
}

/**
 * CPU time since the process started, in ms: its JS thread's; the whole process's (beside it the addon's threads,
 * whose system time holds the kernel's commit work, and V8's helpers, compiling and marking); and how long the JS
 * thread was ready to run but waited for a core (Linux's schedstat, left out where the kernel keeps none).
 */
export function cpuMs(): CpuMs {
  const ms = (t: NodeJS.CpuUsage) => Math.round((t.user + t.system) / 1000);
  const waited = jsThreadWaitedMs();
  return {
    jsThread: ms(process.threadCpuUsage()),
    process: ms(process.cpuUsage()),
    ...(waited === undefined ? {} : { jsThreadWaited: waited }),
  };
}

function jsThreadWaitedMs(): number | undefined {
  try {
    // "<ns on a core> <ns runnable, waiting for one> <timeslices>"
    const waitedNs = Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[1]);
    return Number.isFinite(waitedNs) ? Math.round(waitedNs / 1e6) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Ports changed since the last successful sync, by id (undefined: removed):
 * their conntrack cleanup follows that sync. A failed sync keeps them for
 * the retry, which carries the same changes.
 */
export class PortsInFlight {
  #pending = new Map<string, ServicePort | undefined>();
  #inFlight = new Map<string, ServicePort | undefined>();

  /** A sync took these changes. */
  drained(changes: readonly ServicePortChange[]): void {
    for (const c of changes) this.#pending.set(c.id, c.kind === 'removed' ? undefined : c.current);
    this.#inFlight = this.#pending;
    this.#pending = new Map();
  }

  /** The sync succeeded: the ports it changed (removed ones left out), to clean now. */
  landed(): ServicePort[] {
    const changed = [...this.#inFlight.values()].filter((sp) => sp !== undefined);
    this.#inFlight = new Map();
    return changed;
  }

  /** The sync failed: what it carried goes back to pending, under anything newer. */
  failed(): void {
    for (const [id, sp] of this.#pending) this.#inFlight.set(id, sp);
    this.#pending = this.#inFlight;
    this.#inFlight = new Map();
  }
}

/** The kernel's share of a dataplane's commits, where it measures one: its time, and the transactions where it counts them. */
export interface KernelShare {
  ms: number;
  transactions?: number;
}

export function kernelShare(dp: Pick<Dataplane, 'kernelMs' | 'kernelTransactions'>): KernelShare | undefined {
  if (dp.kernelMs === undefined) return undefined;
  return dp.kernelTransactions === undefined ? { ms: dp.kernelMs } : { ms: dp.kernelMs, transactions: dp.kernelTransactions };
}

/** What the kernel's share grew by since `start` (kernelShare before a sync). */
export function kernelShareSince(
  dp: Pick<Dataplane, 'kernelMs' | 'kernelTransactions'>,
  start: KernelShare | undefined,
): KernelShare | undefined {
  const now = kernelShare(dp);
  if (!now || !start) return undefined;
  const ms = now.ms - start.ms;
  return now.transactions === undefined || start.transactions === undefined
    ? { ms }
    : { ms, transactions: now.transactions - start.transactions };
}

/** The fields of a sync's log line; `kernel` is the kernel's share of it when the dataplane measures one. */
export function syncLogFields(result: SyncResult, kernel: KernelShare | undefined): Record<string, unknown> {
  const r = result.report;
  return {
    reason: result.reason,
    kind: r?.kind ?? result.request.kind,
    ...(r?.mode ? { mode: r.mode } : {}),
    ...(r?.adoptionRefused ? { adoptionRefused: r.adoptionRefused } : {}),
    ops: r?.ops,
    servicePorts: r?.servicePorts,
    endpointChains: r?.endpointChains,
    staleChains: r?.staleChains,
    durationMs: Math.round(result.durationMs * 10) / 10,
    // The kernel's share of it (its commits' send → last answer): what no user space can go below.
    ...(kernel ? { kernelMs: Math.round(kernel.ms * 10) / 10 } : {}),
    ...(kernel?.transactions !== undefined ? { kernelTransactions: kernel.transactions } : {}),
    // Full syncs build the whole ruleset at once: where memory stands after one (MiB) shows what it cost, and the
    // CPU so far where it went (at a first sync, the JS thread's is what it cannot be quicker than on any cores).
    ...(r?.kind === 'full' ? { memoryMiB: memoryMiB(), cpuMs: cpuMs() } : {}),
  };
}

/** Tells a Service port set aside: an error line, refused$, and a Warning Event on its Service. */
export function reportRefused(
  x: RejectedServicePort,
  logger: Logger,
  events: EventRecorder,
  refused: (x: RejectedServicePort) => void,
): void {
  logger.error(
    {
      service: `${x.namespace}/${x.serviceName}`,
      servicePort: x.servicePortId,
      stage: x.stage,
      code: x.code,
      reason: x.message,
      keptLastApplied: x.keptLastApplied,
    },
    x.keptLastApplied
      ? 'service port set aside: its rules were refused; its previous rules stay until it changes'
      : 'service port set aside: its rules were refused; it is not programmed until it changes',
  );
  refused(x);
  events.recordServiceWarning(
    { namespace: x.namespace, name: x.serviceName },
    'FailedToProgramServiceRules',
    `rules of ${x.servicePortId} refused (${x.stage}): ${x.code} ${x.message}`,
  );
}

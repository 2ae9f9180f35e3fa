// The manifest source: the cluster state from a file or directory of YAML,
// watched for changes, fed through the same informers as the API server
// source, with the KEP-31 and headless selectors applied locally.
//
// Watching: fs.watch on the directory (on the parent directory for a single
// file), because both ways files get replaced (rename over the old file,
// ConfigMap-style `..data` symlink swap) show up as events on the directory,
// while a watch on the file itself would stay on the old inode. Every event
// schedules one debounced re-read of everything; the informers then emit only
// what changed. A directory path is watched from its parent too, for its own
// name: when it is a symlink swapped as a whole (`current -> v2`), nothing in
// the old directory changes, and without that second watch the change would be
// lost. The watcher is re-armed when the directory's real path changes. A
// re-read that hits a file vanishing mid-swap keeps the previous state and
// tries again.

import { watch, type FSWatcher } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { Logger } from 'pino';
import { matchesLabels, parseLabelSelector, type Requirement } from '../k8s/label-selector.ts';
import type { EndpointSliceInfo, NodeInfo, ServiceInfo } from '../k8s/types.ts';
import { serviceProxySelector } from '../k8s/well-known.ts';
import { systemClock, type Clock, type TimerHandle } from './clock.ts';
import type { Informer } from './informer.ts';
import { readManifests } from './manifest-files.ts';
import { ReportOnce } from './report-once.ts';
import { isObject } from './validate-common.ts';

export interface ManifestSourceOptions {
  path: string;
  nodeName?: string;
  serviceProxyName?: string;
  logger: Logger;
  clock?: Clock;
  /** Coalesce bursts of fs events (default 100 ms). */
  debounceMs?: number;
  /** Also re-read this often, in case an fs event was missed (default 0: off). */
  pollIntervalMs?: number;
}

export class ManifestSourceError extends Error {
  readonly code = 'ERR_MANIFEST_SOURCE';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ManifestSourceError';
  }
}

function labelsOf(raw: Record<string, unknown>): Record<string, string> | undefined {
  const meta = isObject(raw.metadata) ? raw.metadata : undefined;
  return meta && isObject(meta.labels) ? (meta.labels as Record<string, string>) : undefined;
}

/** kubectl's default: a namespaced object without a namespace lands in 'default'. */
function withDefaultNamespace(raw: Record<string, unknown>): Record<string, unknown> {
  const meta = raw.metadata;
  if (isObject(meta) && (meta.namespace === undefined || meta.namespace === null || meta.namespace === '')) {
    return { ...raw, metadata: { ...meta, namespace: 'default' } };
  }
  return raw;
}

export interface ManifestInformers {
  services: Informer<ServiceInfo>;
  endpointSlices: Informer<EndpointSliceInfo>;
  node: Informer<NodeInfo>;
}

export class ManifestSource {
  private readonly o: ManifestSourceOptions;
  private readonly clock: Clock;
  private readonly selector: Requirement[];
  private readonly problems: ReportOnce;
  private watcher: FSWatcher | undefined;
  /** On the parent of a directory path, for events on the path's own name. */
  private parentWatcher: FSWatcher | undefined;
  private watchedDir = '';
  private timer: TimerHandle | undefined;
  private poll: TimerHandle | undefined;
  private loading: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  /** Completed loads, for logs and tests. */
  loads = 0;

  private readonly informers: ManifestInformers;

  constructor(o: ManifestSourceOptions, informers: ManifestInformers) {
    this.o = o;
    this.informers = informers;
    this.clock = o.clock ?? systemClock;
    this.selector = parseLabelSelector(serviceProxySelector(o.serviceProxyName));
    this.problems = new ReportOnce(o.logger);
  }

  async start(): Promise<void> {
    try {
      await stat(this.o.path);
    } catch (e) {
      throw new ManifestSourceError(`manifest path ${this.o.path} is not readable`, { cause: e });
    }
    await this.arm();
    await this.reload();
    if (this.o.pollIntervalMs) this.schedulePoll();
  }

  private async arm(): Promise<void> {
    const st = await stat(this.o.path);
    const dir = st.isDirectory() ? this.o.path : dirname(this.o.path);
    if (st.isDirectory() && !this.parentWatcher) {
      const name = basename(this.o.path);
      this.parentWatcher = watch(dirname(this.o.path), { persistent: false }, (_event, file) => {
        if (file === null || file === name) this.schedule();
      });
      this.parentWatcher.on('error', () => {
        this.parentWatcher?.close();
        this.parentWatcher = undefined;
        this.schedule();
      });
    }
    const real = await realpath(dir);
    if (this.watcher && real === this.watchedDir) return;
    this.watcher?.close();
    this.watchedDir = real;
    this.watcher = watch(dir, { persistent: false }, () => this.schedule());
    this.watcher.on('error', (err) => {
      this.o.logger.warn({ err: err.message, dir }, 'manifest watcher failed; re-arming');
      this.watcher?.close();
      this.watcher = undefined;
      this.schedule();
    });
  }

  private schedulePoll(): void {
    this.poll = this.clock.setTimeout(() => {
      this.schedule();
      if (!this.stopped) this.schedulePoll();
    }, this.o.pollIntervalMs!);
  }

  private schedule(delay = this.o.debounceMs ?? 100): void {
    if (this.stopped) return;
    this.timer?.cancel();
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      void this.reload();
    }, delay);
  }

  /** Re-reads everything; concurrent calls coalesce into one more pass. */
  reload(): Promise<void> {
    if (this.loading) {
      this.again = true;
      return this.loading;
    }
    this.loading = (async () => {
      do {
        this.again = false;
        await this.loadOnce();
      } while (this.again && !this.stopped);
    })().finally(() => (this.loading = undefined));
    return this.loading;
  }

  private async loadOnce(): Promise<void> {
    if (this.stopped) return;
    let read: Awaited<ReturnType<typeof readManifests>>;
    try {
      await this.arm();
      read = await readManifests(this.o.path);
    } catch (e) {
      this.o.logger.warn({ err: (e as Error).message, path: this.o.path }, 'manifests unreadable; keeping the previous state');
      this.schedule(500);
      return;
    }
    if (read.problems.some((p) => p.document < 0)) {
      this.o.logger.debug({ problems: read.problems }, 'a manifest file vanished while reading; retrying');
      this.schedule();
      return;
    }
    for (const p of read.problems) {
      this.problems.report(`${p.file}#${p.document}`, p.reason, { file: p.file, document: p.document }, 'manifest document skipped');
    }
    const services: unknown[] = [];
    const slices: unknown[] = [];
    const nodes: unknown[] = [];
    for (const raw of read.objects) {
      switch (raw.kind) {
        case 'Service':
          if (matchesLabels(this.selector, labelsOf(raw))) services.push(withDefaultNamespace(raw));
          break;
        case 'EndpointSlice':
          if (matchesLabels(this.selector, labelsOf(raw))) slices.push(withDefaultNamespace(raw));
          break;
        case 'Node': {
          const name = isObject(raw.metadata) ? raw.metadata.name : undefined;
          if (this.o.nodeName === undefined ? nodes.length === 0 : name === this.o.nodeName) nodes.push(raw);
          break;
        }
        default:
          this.o.logger.debug({ kind: raw.kind }, 'manifest object of another kind ignored');
      }
    }
    this.informers.services.replaceAll(services);
    this.informers.endpointSlices.replaceAll(slices);
    this.informers.node.replaceAll(nodes);
    this.loads++;
    this.o.logger.debug({ services: services.length, slices: slices.length, files: read.files.length }, 'manifests loaded');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    this.poll?.cancel();
    this.watcher?.close();
    this.parentWatcher?.close();
    await this.loading;
  }
}

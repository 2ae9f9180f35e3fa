// Contract between native/link-monitor.cc and src/links/link-monitor.ts.
// src/native/addon.ts types the addon's `LinkMonitor` export with
// NativeLinkMonitorConstructor; nothing else here is loaded at run time.

/** One interface as rtnetlink reports it (field meanings are the kernel's). */
export interface NativeLinkRecord {
  /** ifindex: the identity of a link in its namespace; survives renames. */
  index: number;
  name: string;
  /** IFF_* flags of struct ifinfomsg. */
  flags: number;
  /** IFLA_INFO_KIND ("veth", "bridge", ...); "" when the device has none (lo, most NICs). */
  kind: string;
  /** IFLA_MTU; 0 when absent. */
  mtu: number;
  /** IFLA_OPERSTATE (RFC 2863: 0 unknown, 2 down, 6 up, ...). */
  operState: number;
  /** IFLA_MASTER ifindex (bridge or bond), 0 for none. */
  master: number;
}

export interface NativeLinkChange {
  /** True for RTM_DELLINK; false for RTM_NEWLINK (creation or any change). */
  removed: boolean;
  link: NativeLinkRecord;
}

/** Why a full snapshot was taken. */
export type NativeResyncReason = 'initial' | 'overrun' | 'interrupted';

/**
 * What one read of the socket produced. With `resync`, `links` is the complete
 * list of interfaces and replaces everything known before; `changes` then apply
 * on top of it, in order (they arrived while the dump ran).
 */
export interface NativeLinkBatch {
  resync?: NativeResyncReason;
  links?: NativeLinkRecord[];
  changes: NativeLinkChange[];
}

export interface NativeLinkMonitorOptions {
  /** Path of a network namespace (e.g. /var/run/netns/NAME); default: the process's own. */
  netns?: string;
  /**
   * SO_RCVBUF(FORCE) for the socket, 0 for the system default. Bigger means
   * fewer overrun resyncs under link churn; tests make it tiny to force them.
   */
  receiveBufferBytes?: number;
  /** Keep the event loop alive while running (default false: only until the initial dump is delivered). */
  keepAlive?: boolean;
}

export interface NativeLinkMonitorStats {
  /** Receive-queue overruns seen (each leads to a re-dump). */
  overruns: number;
  /** RTM_GETLINK dumps requested, the initial one included. */
  dumps: number;
  /**
   * Dumps the kernel left stalled after an overrun dropped their next part;
   * each one's socket was replaced by a fresh one that dumped again.
   */
  stalledDumps: number;
  /** SO_RCVBUF as the kernel granted it (it doubles the request); 0 when not running. */
  receiveBufferBytes: number;
}

export interface NativeLinkMonitor {
  /**
   * Opens the socket (inside `netns` if given), requests the initial dump and
   * starts the reader thread. Throws (code ERR_LINK_MONITOR_OPEN, with errno)
   * when the socket cannot be opened, ERR_LINK_MONITOR_RUNNING when started.
   * onBatch/onError run on the JS thread; after onError the monitor is stopped
   * (error code ERR_LINK_MONITOR_SOCKET, with errno).
   */
  start(onBatch: (batch: NativeLinkBatch) => void, onError: (error: Error) => void): void;
  /** Idempotent. No callback runs after it returns. */
  stop(): void;
  stats(): NativeLinkMonitorStats;
  readonly running: boolean;
}

export interface NativeLinkMonitorConstructor {
  /** Throws a TypeError (code ERR_INVALID_ARG_TYPE / ERR_INVALID_ARG_VALUE) on bad options. */
  new (options?: NativeLinkMonitorOptions): NativeLinkMonitor;
}

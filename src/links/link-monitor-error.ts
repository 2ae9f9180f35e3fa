// Errors of the link monitor, with stable codes to branch on.

export type LinkMonitorErrorCode =
  /** The rtnetlink socket could not be opened (bad namespace path, no permission, ...). */
  | 'ERR_LINK_MONITOR_OPEN'
  /** The socket failed while running; the monitor has stopped. */
  | 'ERR_LINK_MONITOR_SOCKET'
  /** start() on a monitor that was already started or stopped. */
  | 'ERR_LINK_MONITOR_STATE';

export class LinkMonitorError extends Error {
  override readonly name = 'LinkMonitorError';
  readonly code: LinkMonitorErrorCode;
  /** The errno of the failing syscall, when one failed. */
  readonly errno: number | undefined;

  constructor(message: string, code: LinkMonitorErrorCode, errno?: number, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.errno = errno;
  }

  /** Wraps an error the addon threw or reported, keeping its code and errno. */
  static fromNative(e: unknown, fallback: LinkMonitorErrorCode): LinkMonitorError {
    const err = e as { message?: unknown; code?: unknown; errno?: unknown };
    const code = err?.code === 'ERR_LINK_MONITOR_OPEN' || err?.code === 'ERR_LINK_MONITOR_SOCKET' ? err.code : fallback;
    const errno = typeof err?.errno === 'number' ? err.errno : undefined;
    return new LinkMonitorError(String(err?.message ?? e), code, errno, { cause: e });
  }
}

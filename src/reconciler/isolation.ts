// Failure isolation: a sync whose transaction fails is committed anyway, with
// the ServicePorts responsible set aside (their last applied version stays in
// force, or they stay out). No I/O of its own: the reconciler hands it a way
// to plan and commit with some ports held back, and learns whom to set aside.
//
// - A failure that names its operations (the transaction's checks, the batch
//   builder, the kernel's errors) sets their owners aside at once, and the
//   sync is planned again without them: one more commit.
// - A failure that names none (an error without an operation, or one naming
//   only the skeleton's operations, which a port's rules can provoke: a loop,
//   a reference) is bisected over the ServicePorts whose operations were in the
//   transaction. First everything but them is committed: if that fails too, it
//   is not theirs and the sync fails (the skeleton cannot be programmed).
//   Then half of the group known to hold a culprit is released at a time: a
//   half that commits is applied and done with, one that fails holds the
//   culprit. One culprit among n costs about log2(n) + 2 commits, never a
//   retry of the same transaction.
// - Errors about the moment rather than the rules (ENOMEM, EBUSY...) set
//   nothing aside: the sync fails and the runner retries it whole.

/** Why a ServicePort was set aside. */
export interface Refusal {
  /**
   * Who refused: the transaction's checks, the dataplane (encoder, batch builder or kernel) naming its operation, or bisection of a refusal
   * that named none.
   */
  stage: 'validation' | 'dataplane' | 'bisection';
  /** The kernel's errno (0 for the transaction's checks). */
  errno: number;
  /** Symbolic errno, or the error's code. */
  code: string;
  message: string;
}

/** Whose a failed attempt was. */
export type Blame =
  | { kind: 'transient' }
  | { kind: 'owners'; owners: ReadonlyMap<string, Refusal> }
  /** `suspects`: the ServicePorts whose operations were in the failed transaction. */
  | { kind: 'unattributed'; suspects: () => readonly string[] };

export type Attempt = { ok: true } | { ok: false; error: unknown; blame: Blame };

export interface IsolationOptions {
  /** Plans and commits with these ServicePorts held back (their last applied version, or none). */
  attempt(held: ReadonlySet<string>): Promise<Attempt>;
  /** Sets a ServicePort aside until it changes or a full sync runs. */
  setAside(id: string, refusal: Refusal): void;
  /** Attempts (commits tried) before giving up; what was set aside by then stays aside. */
  maxAttempts: number;
}

/** The sync could not be committed: `cause` is the error of the attempt that decided it. */
export class IsolationFailed extends Error {
  readonly code = 'ERR_SYNC_ISOLATION';
  readonly transient: boolean;
  constructor(cause: unknown, reason: string, transient = false) {
    super(`${reason}: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = 'IsolationFailed';
    this.transient = transient;
  }
}

const NONE: ReadonlySet<string> = new Set();

function refusalOf(error: unknown): Refusal {
  const e = error as { code?: unknown; errno?: unknown; message?: unknown };
  return {
    stage: 'bisection',
    errno: typeof e?.errno === 'number' ? e.errno : 0,
    code: typeof e?.code === 'string' ? e.code : 'ERROR',
    message: typeof e?.message === 'string' ? e.message : String(error),
  };
}

/** Commits, setting aside whom the failures point at; resolves once a commit landed (or nothing was left to commit). */
export async function commitIsolating(o: IsolationOptions): Promise<void> {
  // Bisection state: `pending` suspects not yet known good nor set aside
  // (those not released are held back), `group` a part of them that fails
  // when released, `released` what the current attempt releases.
  let pending: string[] = [];
  let group: string[] = [];
  let released: string[] = [];
  let cause: unknown;
  let held: ReadonlySet<string> = NONE;
  let lastError: unknown;
  for (let n = 0; ; n++) {
    if (n >= o.maxAttempts) throw new IsolationFailed(lastError, `gave up after ${n} attempts; what was set aside stays aside`);
    const a = await o.attempt(held);
    if (!a.ok) lastError = a.error;
    if (a.ok) {
      if (pending.length === 0) return;
      const good = new Set(released);
      pending = pending.filter((id) => !good.has(id));
      group = group.filter((id) => !good.has(id));
      if (pending.length === 0) return;
    } else {
      const blame = a.blame;
      switch (blame.kind) {
        case 'transient':
          throw new IsolationFailed(a.error, 'the kernel refused the transaction for now', true);
        case 'owners':
          for (const [id, why] of blame.owners) o.setAside(id, why);
          // Whatever was known of the rest, try all of it again without them.
          pending = pending.filter((id) => !blame.owners.has(id));
          group = [];
          released = pending;
          held = NONE;
          continue;
        case 'unattributed':
          if (pending.length === 0) {
            pending = [...blame.suspects()];
            if (pending.length === 0) throw new IsolationFailed(a.error, 'the transaction failed and no service port had operations in it');
            // First everything but the suspects: releasing them all is known to fail.
            group = pending;
            cause = a.error;
            released = [];
            held = new Set(pending);
            continue;
          }
          if (released.length === 0) throw new IsolationFailed(a.error, 'the transaction fails without any of the service ports in it');
          group = released;
          cause = a.error;
          break;
        default:
          throw new Error(`unknown blame ${JSON.stringify(blame satisfies never)}`);
      }
    }
    if (group.length === 1) {
      const culprit = group[0]!;
      o.setAside(culprit, refusalOf(cause));
      pending = pending.filter((id) => id !== culprit);
      group = [];
      if (pending.length === 0) {
        released = [];
        held = NONE;
        continue;
      }
    }
    released = group.length === 0 ? pending : group.slice(0, Math.ceil(group.length / 2));
    const out = new Set(released);
    held = new Set(pending.filter((id) => !out.has(id)));
  }
}

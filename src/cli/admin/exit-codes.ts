/**
 * The exit codes of `svc admin …` (docs/CLI.md) and the one failure type its commands throw:
 * scripts branch on the code, people read the message (one line on stderr).
 */
export const ADMIN_EXIT = {
  /** Done. */
  ok: 0,
  /** The server said no, or the operation failed (a job failed, a refused change). */
  failed: 1,
  /** Bad arguments: unknown command or flag, missing value. */
  usage: 2,
  /** Not logged in, the session expired, or the login was refused. */
  auth: 3,
  /** The server cannot be reached. */
  unreachable: 4,
} as const;

export type AdminExitCode = typeof ADMIN_EXIT[keyof typeof ADMIN_EXIT];

/** A failure with its exit code; the message is printed after "svc: ". */
export class AdminCliError extends Error {
  constructor(readonly exitCode: AdminExitCode, message: string) {
    super(message);
    this.name = "AdminCliError";
  }
}

export const usageError = (message: string) => new AdminCliError(ADMIN_EXIT.usage, message);

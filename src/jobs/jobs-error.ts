/**
 * The error a job refusal raises: an unknown job, a bucket that cannot be moved, an action the
 * job's kind does not have. Jobs do not know the admin API: its error renderer
 * (src/admin/admin-error.ts) gives each code its status and the JSON answer
 * `{"error": code, "message": ...}`, and fails to compile if a code here is not one of its own.
 */
export type JobsErrorCode =
  | "bad_request"
  | "not_found"
  | "method_not_allowed"
  | "conflict"
  | "unavailable";

export class JobsError extends Error {
  readonly code: JobsErrorCode;
  constructor(code: JobsErrorCode, message: string) {
    super(message);
    this.name = "JobsError";
    this.code = code;
  }
}

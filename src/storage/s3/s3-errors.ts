/**
 * What a backend failure means to svc. A backend answer that is not a success becomes a
 * `BackendError` (status, S3 code, message); `svcErrorFromBackend` then decides what the client sees:
 *
 * - NoSuchBucket (also inside a 403, which some stores send for a missing bucket) → NoSuchBucket;
 * - 503, 429 and the throttling codes → SlowDown (503), which clients retry;
 * - a backend that cannot be reached or does not answer in time (after the retries) → SlowDown
 *   too: an outage is temporary and retryable from the client's side, and a 500 would tell
 *   clients svc itself is broken;
 * - codes a client caused and understands (BucketNotEmpty, MetadataTooLarge, …) → the same code;
 * - no space (ENOSPC/EDQUOT while spooling, or a backend's 507) → 507 InsufficientStorage;
 * - anything else → InternalError, with the backend's status, code and message in the message
 *   (the S3 surface logs it; it never contains credentials, only what the backend said).
 *
 * Absence (404 NoSuchKey) is not an error at all: the backend methods turn it into null before
 * it gets here, and only for requests where a 404 can only mean "no such key".
 */
import { diskFullError, type ErrorCode, isNoSpaceError, SvcError } from "../../lib/mod.ts";

export class BackendError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly backendMessage: string,
    /** What was being done, e.g. `PUT bucket/key`; for messages only. */
    readonly operation: string,
    readonly retryable: boolean,
  ) {
    super(
      `Backend answered ${status}${code ? ` ${code}` : ""} to ${operation}${
        backendMessage ? `: ${backendMessage}` : ""
      }`,
    );
    this.name = "BackendError";
  }
}

/** The backend could not be reached, or did not answer in time; `retryable` as for responses. */
export class BackendUnavailableError extends Error {
  constructor(message: string, readonly operation: string, options?: ErrorOptions) {
    super(`${message} (${operation})`, options);
    this.name = "BackendUnavailableError";
  }
}

const THROTTLING_CODES = new Set([
  "SlowDown",
  "ServiceUnavailable",
  "Throttling",
  "ThrottlingException",
  "RequestLimitExceeded",
  "TooManyRequests",
  "RequestThrottled",
]);

/** Codes passed to the client unchanged: its own request caused them, and it can act on them. */
const PASSED_THROUGH = new Set<ErrorCode>([
  "NoSuchBucket",
  "BucketAlreadyExists",
  "BucketAlreadyOwnedByYou",
  "BucketNotEmpty",
  "InvalidBucketName",
  "MetadataTooLarge",
  "KeyTooLongError",
  // What a svc used as the backend refuses about a key (its filesystem rules).
  "InvalidObjectName",
  "ObjectPathConflict",
  "EntityTooLarge",
  "InvalidRange",
]);

/** Whether a response status or code asks us to come back later (safe to retry any request). */
export function isThrottling(status: number, code: string): boolean {
  return status === 503 || status === 429 || THROTTLING_CODES.has(code);
}

/** Server-side failures that the SDKs retry: the request may be sent again after a pause. */
export function isTransientStatus(status: number, code: string): boolean {
  return isThrottling(status, code) || status === 500 || status === 502 || status === 504 ||
    code === "InternalError" || code === "RequestTimeout";
}

/** A commit refused on its condition (the staged bytes stay for another commit). */
export function isRefusal(err: unknown): boolean {
  return err instanceof SvcError && err.code === "PreconditionFailed";
}

export function isNoSuchBucket(err: unknown): boolean {
  return err instanceof BackendError && err.code === "NoSuchBucket";
}

/** The SvcError a client sees for a backend failure; SvcErrors pass unchanged. */
export function svcErrorFromBackend(err: unknown, bucket?: string, key?: string): SvcError {
  if (err instanceof SvcError) return err;
  // A full local spool, or a backend that says it is full (507, e.g. MinIO's XMinioStorageFull).
  if (isNoSpaceError(err) || (err instanceof BackendError && err.status === 507)) {
    return diskFullError(err instanceof Error ? err.message : String(err));
  }
  const details: Record<string, string> = {};
  if (bucket !== undefined) details.BucketName = bucket;
  if (key !== undefined) details.Key = key;
  if (err instanceof BackendError) {
    if (err.code === "NoSuchBucket") {
      return new SvcError("NoSuchBucket", `Bucket "${bucket}" does not exist`, details, {
        cause: err,
      });
    }
    if (isThrottling(err.status, err.code)) {
      return new SvcError("SlowDown", `The storage backend is busy: ${err.message}`, details, {
        cause: err,
      });
    }
    if (PASSED_THROUGH.has(err.code as ErrorCode)) {
      return new SvcError(err.code as ErrorCode, err.backendMessage || err.message, details, {
        cause: err,
      });
    }
    return new SvcError("InternalError", err.message, details, { cause: err });
  }
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof BackendUnavailableError) {
    return new SvcError("SlowDown", `The storage backend is unavailable: ${message}`, details, {
      cause: err,
    });
  }
  return new SvcError("InternalError", `Storage backend failure: ${message}`, details, {
    cause: err,
  });
}

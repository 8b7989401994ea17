/**
 * The error a client sees from the S3 surface. Every layer throws it with an S3 error code; the S3
 * surface renders it as an XML error document, the admin API as JSON. The status comes from the
 * code's table so a code always answers with the same status.
 *
 * It is not the only error class: a room whose failures are its own (a config that does not
 * validate, a backend that answers 5xx, an encrypted frame that does not authenticate, a job in
 * the wrong state) throws its own class, and the room above translates it at its edge
 * (docs/ARCHITECTURE.md, "The error classes", lists them). Only SvcError and AdminError reach a
 * client.
 */

/** S3 error codes svc returns, with their HTTP status. */
export const ERROR_STATUS = {
  AccessDenied: 403,
  AuthorizationHeaderMalformed: 400,
  AuthorizationQueryParametersError: 400,
  InvalidAccessKeyId: 403,
  InvalidPolicyDocument: 400,
  MaxPostPreDataLengthExceeded: 400,
  MalformedPOSTRequest: 400,
  IncorrectNumberOfFilesInPostRequest: 400,
  MissingSecurityHeader: 400,
  RequestTimeTooSkewed: 403,
  SignatureDoesNotMatch: 403,
  BadDigest: 400,
  /** S3's answer to more than 10 tags on an object. */
  BadRequest: 400,
  BucketAlreadyExists: 409,
  BucketAlreadyOwnedByYou: 409,
  BucketNotEmpty: 409,
  EntityTooLarge: 400,
  EntityTooSmall: 400,
  IncompleteBody: 400,
  /**
   * The local disk (data directory, spool, temp files) is full or over quota: 507, which neither
   * the AWS SDKs nor botocore retry (they retry 500/502/503/504), so a client learns at once.
   */
  InsufficientStorage: 507,
  InternalError: 500,
  InvalidArgument: 400,
  InvalidBucketName: 400,
  InvalidDigest: 400,
  InvalidObjectName: 400,
  InvalidPart: 400,
  InvalidPartOrder: 400,
  /** GET/HEAD `?partNumber=N` past the object's last part. */
  InvalidPartNumber: 416,
  InvalidRange: 416,
  InvalidRequest: 400,
  InvalidTag: 400,
  IllegalLocationConstraintException: 400,
  KeyTooLongError: 400,
  MalformedXML: 400,
  MetadataTooLarge: 400,
  MethodNotAllowed: 405,
  MissingContentLength: 411,
  NoSuchBucket: 404,
  NoSuchKey: 404,
  NoSuchUpload: 404,
  NotImplemented: 501,
  NotModified: 304,
  ObjectPathConflict: 409,
  PreconditionFailed: 412,
  /** A bucket's soft quota (storage.buckets.<bucket>.quota_bytes) refuses the write. */
  QuotaExceeded: 403,
  ConditionalRequestConflict: 409,
  RequestTimeout: 504,
  ServiceUnavailable: 503,
  SlowDown: 503,
  XAmzContentSHA256Mismatch: 400,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class SvcError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Extra elements for the S3 error document (e.g. BucketName, Key, UploadId). */
  readonly details: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    details: Record<string, string> = {},
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = "SvcError";
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.details = details;
  }
}

/** Wraps anything thrown into an SvcError; unknown failures become InternalError. */
export function toSvcError(err: unknown): SvcError {
  if (err instanceof SvcError) return err;
  if (isNoSpaceError(err)) return diskFullError(err instanceof Error ? err.message : String(err));
  const message = err instanceof Error ? err.message : String(err);
  return new SvcError("InternalError", "We encountered an internal error. Please try again.", {}, {
    cause: err ?? new Error(message),
  });
}

/**
 * Error codes of a write that failed for lack of space (ENOSPC, or EDQUOT over a disk quota);
 * SQLITE_FULL is recognised too.
 */
const NO_SPACE_CODES = new Set(["ENOSPC", "EDQUOT"]);

/** Whether `err` (or an error it wraps as `cause`) is the system's "no space" error. */
export function isNoSpaceError(err: unknown, depth = 0): boolean {
  if (err instanceof SvcError) return err.code === "InsufficientStorage";
  if (!(err instanceof Error) || depth > 5) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" && NO_SPACE_CODES.has(code)) return true;
  // SQLite's "database or disk is full" (the config database on a full disk).
  if (code === "SQLITE_FULL" || err.message.startsWith("SQLITE_FULL")) return true;
  if (/\(os error (28|122)\)/.test(err.message)) return true;
  return isNoSpaceError(err.cause, depth + 1);
}

/**
 * The InsufficientStorage answer; `detail` goes to the cause (the log), not to the client.
 * `consequence` says what did not happen (a write by default).
 */
export function diskFullError(
  detail?: string,
  consequence = "the write was not stored",
): SvcError {
  return new SvcError(
    "InsufficientStorage",
    `Insufficient storage: the server's disk is full (or over its quota); ${consequence}. ` +
      "Retrying will fail until space is freed.",
    {},
    detail === undefined ? undefined : { cause: new Error(detail) },
  );
}

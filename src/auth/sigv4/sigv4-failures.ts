/**
 * SigV4 refusals and the auth failure counter each belongs to. One S3 code (AccessDenied,
 * InvalidRequest) can come from either form, so the counter is recorded when the error is made.
 */
import { SvcError } from "../../lib/mod.ts";

export type FailureReason = "missing_header" | "invalid_presigned" | "invalid_signature";

/**
 * The metrics reason of each error made here, recorded when it is made, since one code
 * (AccessDenied, InvalidRequest) can come from either form. Untagged errors map by code.
 */
const reasons = new WeakMap<SvcError, FailureReason>();

export function fail(
  reason: FailureReason,
  code: ConstructorParameters<typeof SvcError>[0],
  message: string,
  details: Record<string, string> = {},
): SvcError {
  const err = new SvcError(code, message, details);
  reasons.set(err, reason);
  return err;
}

/**
 * The auth failure counter an error belongs to (SPEC Authentication 12):
 * - `missing_header`: header-form problems before any key is involved: malformed or unsupported
 *   Authorization, no or bad x-amz-content-sha256, no usable date, both forms at once.
 * - `invalid_presigned`: everything that fails a presigned URL: malformed parameters (also SigV2
 *   query auth), expired or not yet valid, unknown key, wrong signature, unsigned x-amz-* headers.
 * - `invalid_signature`: a well-formed header signature that fails (unknown key, clock skew,
 *   wrong signature, unsigned x-amz-* headers), and anything else, e.g. chunk signatures.
 * An unsigned request refused for want of a signature is the caller's `missing_header`.
 */
export function failureReason(err: unknown): FailureReason {
  if (!(err instanceof SvcError)) return "invalid_signature";
  const tagged = reasons.get(err);
  if (tagged) return tagged;
  if (err.code === "AuthorizationQueryParametersError") return "invalid_presigned";
  const missing = err.code === "AuthorizationHeaderMalformed" ||
    err.code === "MissingSecurityHeader";
  return missing ? "missing_header" : "invalid_signature";
}

/**
 * Tests an S3 endpoint and credentials before anything is saved (`POST /backends`, `POST
 * /test-s3`): one signed ListBuckets through the project's own S3 client, one attempt, bounded by
 * the backend timeouts (`s3_connect_timeout_secs` + `s3_read_timeout_secs`, never more than
 * `s3_operation_attempt_timeout_secs`) and cancelled when that time is up.
 *
 * What a failure answers: the backend refusing the request (4xx: wrong key or secret, no
 * permission, a signature it cannot verify) is 400 `bad_request`, since the operator's input is
 * wrong; no answer, a timeout, a 5xx or an answer that is not S3 is 502 `bad_gateway`. Both carry
 * `ok: false` and, when the backend answered, its status and code. Messages quote what the
 * backend said, never the secret (the S3 client never puts it in a message).
 */
import {
  type AdvancedS3,
  BackendError,
  parseListBuckets,
  type S3BackendConfig,
  S3Client,
  s3OptionsFromConfig,
} from "../../storage/mod.ts";
import { AdminError } from "../admin-error.ts";

export type ProbeTimeouts = AdvancedS3;

/** Bucket names shown by a successful probe, at most. */
const MAX_LISTED = 1000;

/** The probe's time bound in ms. */
export function probeTimeoutMs(advanced: ProbeTimeouts): number {
  const answer = (advanced.s3_connect_timeout_secs + advanced.s3_read_timeout_secs) * 1000;
  return Math.min(answer, advanced.s3_operation_attempt_timeout_secs * 1000);
}

/** Lists the endpoint's buckets with the credentials; throws AdminError (see the header). */
export async function probeS3(spec: S3BackendConfig, advanced: ProbeTimeouts): Promise<string[]> {
  let options;
  try {
    // The spool directory is never used: a ListBuckets has no body.
    options = s3OptionsFromConfig(spec, advanced, "/nonexistent");
  } catch (err) {
    throw new AdminError("bad_request", (err as Error).message, { ok: false });
  }
  const client = new S3Client({ ...options, maxAttempts: 1 });
  const timeoutMs = probeTimeoutMs(advanced);
  const endpoint = options.endpoint;
  let text: string;
  try {
    const response = await client.send({
      method: "GET",
      idempotent: true,
      signal: AbortSignal.timeout(timeoutMs),
    });
    text = response.text;
  } catch (err) {
    if (err instanceof BackendError) {
      const details = { ok: false, backend_status: err.status, backend_code: err.code };
      if (err.status >= 400 && err.status < 500) {
        throw new AdminError(
          "bad_request",
          `The S3 backend "${endpoint}" refused the request: ${err.message}`,
          details,
        );
      }
      throw new AdminError(
        "bad_gateway",
        `The S3 backend "${endpoint}" failed: ${err.message}`,
        details,
      );
    }
    const reason = err instanceof DOMException && err.name === "TimeoutError"
      ? `no answer within ${timeoutMs / 1000} s`
      : err instanceof Error
      ? err.message
      : String(err);
    throw new AdminError(
      "bad_gateway",
      `The S3 backend "${endpoint}" could not be reached: ${reason}`,
      {
        ok: false,
      },
    );
  }
  try {
    return parseListBuckets(text ?? "").buckets.slice(0, MAX_LISTED).map((bucket) => bucket.name);
  } catch {
    throw new AdminError(
      "bad_gateway",
      `The answer of "${endpoint}" to ListBuckets is not an S3 document`,
      { ok: false },
    );
  }
}

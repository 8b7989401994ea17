/**
 * Which repeats of a mutating request may be answered with the first answer (the effect is
 * idempotent, so the client saw, or would see, nothing else), and how the repeat's body is known
 * to be the first one's.
 *
 * - `none`: no body that matters (DeleteObject, DeleteBucket, AbortMultipartUpload).
 * - `small`: a small XML document that decides the effect (CreateBucket's configuration,
 *   DeleteObjects' key list, CompleteMultipartUpload's part list).
 * - `object`: an object or part body (PutObject, UploadPart), compared through its MD5, which is
 *   the ETag the first answer returned.
 *
 * Two kinds are executed again instead (`rerunsOnRepeat`): CreateMultipartUpload, whose repeat
 * only makes another empty upload (parallel uploaders send identical ones; the idle TTL and
 * `max_multipart_uploads` bound them), and any write carrying a precondition, whose first answer
 * depended on the state then: replaying it would tell a second writer it created what the first
 * one did.
 *
 * Everything else (copies, configuration subresources, browser POSTs) would create something new
 * or is not listed: its repeat is refused.
 */
import type { RequestContext } from "../../http/mod.ts";
import { UNSIGNED_PAYLOAD } from "../sigv4/sigv4-request.ts";

export type ReplayBody = "none" | "small" | "object";

export interface ReplayRule {
  operation: string;
  body: ReplayBody;
}

/** Query names that never change what an operation does (AWS SDK v3 adds `x-id`). */
const NEUTRAL = new Set(["x-id"]);

function queryIs(request: RequestContext, names: string[]): boolean {
  const present = [...request.query.keys()].filter((name) => !NEUTRAL.has(name));
  return present.length === names.length && names.every((name) => request.query.has(name));
}

/** Request headers that make a write conditional on the object's state. */
const PRECONDITIONS = ["if-match", "if-none-match", "if-modified-since", "if-unmodified-since"];

/** Whether a repeat of this request is executed again (see the header) rather than answered. */
export function rerunsOnRepeat(request: RequestContext): boolean {
  if (PRECONDITIONS.some((name) => request.headers.has(name))) return true;
  return request.method === "POST" && request.key !== null && queryIs(request, ["uploads"]);
}

/** The rule of an idempotent operation, or null when a repeat must be refused. */
export function replayRule(request: RequestContext): ReplayRule | null {
  const { method, bucket, key } = request;
  if (bucket === null) return null;
  const copy = request.headers.has("x-amz-copy-source");
  if (key === null) {
    if (method === "PUT" && queryIs(request, [])) {
      return { operation: "CreateBucket", body: "small" };
    }
    if (method === "DELETE" && queryIs(request, [])) {
      return { operation: "DeleteBucket", body: "none" };
    }
    if (method === "POST" && queryIs(request, ["delete"])) {
      return { operation: "DeleteObjects", body: "small" };
    }
    return null;
  }
  if (method === "PUT" && !copy && queryIs(request, [])) {
    return { operation: "PutObject", body: "object" };
  }
  if (method === "PUT" && !copy && queryIs(request, ["partNumber", "uploadId"])) {
    return { operation: "UploadPart", body: "object" };
  }
  if (method === "DELETE" && (queryIs(request, []) || queryIs(request, ["versionId"]))) {
    return { operation: "DeleteObject", body: "none" };
  }
  if (method === "DELETE" && queryIs(request, ["uploadId"])) {
    return { operation: "AbortMultipartUpload", body: "none" };
  }
  if (method === "POST" && queryIs(request, ["uploadId"])) {
    return { operation: "CompleteMultipartUpload", body: "small" };
  }
  return null;
}

/**
 * Whether the verified signature pins the body: a hex x-amz-content-sha256, or signed
 * aws-chunked (every chunk chains from the seed signature). UNSIGNED-PAYLOAD and the unsigned
 * trailer forms leave the body free, so a repeat's body must be compared.
 */
export function bodyIsSigned(payloadHash: string): boolean {
  return payloadHash !== UNSIGNED_PAYLOAD && !payloadHash.startsWith("STREAMING-UNSIGNED");
}

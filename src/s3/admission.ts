/**
 * Runs the admission chain on an S3 request before authentication. `allow-anonymous` admits an
 * unsigned read (GET, HEAD, OPTIONS) without authentication (a signed one is always
 * authenticated: a signature is checked, never ignored; a write goes on to authentication); `deny` and `reject` refuse; `continue` or no match goes on to
 * authentication.
 */
import type { AdmissionChain } from "../admission/build.ts";
import { type AdmissionRequest, evaluateChain, type RequestKind } from "../admission/chain.ts";
import { clientIp } from "../auth/client-ip.ts";
import { ANONYMOUS_METHODS } from "../config/schema-admission.ts";
import { SvcError } from "../errors.ts";
import type { S3Request } from "./request.ts";

/** How an unsigned request was let in. */
export interface AnonymousAdmission {
  /** The block that admitted it. */
  block: string;
  /** Set when the block admits only these key prefixes: listings are filtered to them. */
  publicPrefixes?: readonly string[];
}

/** An operator `reject` answer: the configured status with an S3 error document. */
export class AdmissionRejection extends SvcError {
  override readonly status: number;
  constructor(block: string, status: number, message: string | undefined) {
    const code = status === 429 || status === 503
      ? "SlowDown"
      : status >= 500
      ? "ServiceUnavailable"
      : "AccessDenied";
    super(code, message ?? `The request was rejected by admission block "${block}"`);
    this.status = status;
  }
}

/** Query parameters a plain GetObject/HeadObject may carry (`x-id` is added by AWS SDKs). */
const READ_PARAMS = new Set(["versionId", "partNumber", "x-id"]);
const LIST_PARAMS = new Set([
  "list-type",
  "prefix",
  "delimiter",
  "max-keys",
  "continuation-token",
  "start-after",
  "encoding-type",
  "fetch-owner",
  "marker",
  "x-id",
]);
const SIGNATURE_PARAMS = [
  "X-Amz-Algorithm",
  "X-Amz-Credential",
  "X-Amz-Signature",
  "AWSAccessKeyId",
  "Signature",
];

export function requestKind(request: S3Request): RequestKind {
  const names = [...request.query.keys()];
  if (request.bucket === null) return "other";
  if (request.key !== null) {
    const read = request.method === "GET" || request.method === "HEAD";
    const plain = names.every((name) => READ_PARAMS.has(name) || name.startsWith("response-"));
    return read && plain ? "object-read" : "other";
  }
  return request.method === "GET" && names.every((name) => LIST_PARAMS.has(name))
    ? "listing"
    : "other";
}

/** Whether the request carries credentials of any form (checked later by authentication). */
export function isSigned(request: S3Request): boolean {
  if (request.headers.has("authorization")) return true;
  if (SIGNATURE_PARAMS.some((name) => request.query.has(name))) return true;
  const type = request.headers.get("content-type")?.toLowerCase() ?? "";
  return request.method === "POST" && request.key === null &&
    type.startsWith("multipart/form-data");
}

export function admissionRequestOf(
  request: S3Request,
  remoteAddress: string | undefined,
  trustProxyHeaders: boolean,
): AdmissionRequest {
  return {
    method: request.method,
    bucket: request.bucket,
    key: request.key,
    kind: requestKind(request),
    signed: isSigned(request),
    clientIp: clientIp(request.headers, remoteAddress, trustProxyHeaders),
  };
}

/**
 * The admission decision: an AnonymousAdmission when the request is admitted without
 * authentication, null when it goes on to authentication; throws when a block refuses it.
 */
export function admit(
  chain: AdmissionChain,
  request: S3Request,
  remoteAddress: string | undefined,
): AnonymousAdmission | null {
  if (chain.blocks.length === 0) return null;
  const facts = admissionRequestOf(request, remoteAddress, chain.trustProxyHeaders);
  const block = evaluateChain(chain.blocks, facts);
  if (block === null || block.action === "continue") return null;
  if (block.action === "deny") {
    throw new SvcError("AccessDenied", `Access Denied by admission block "${block.name}"`);
  }
  if (block.action === "allow-anonymous") {
    // Anonymous writes are never admitted (SPEC Authentication 6): config validation refuses a
    // block listing a write method, and a block without a method list admits only reads; any
    // other request it matches goes on to authentication, which refuses it unsigned.
    if (facts.signed || !ANONYMOUS_METHODS.includes(request.method)) return null;
    return { block: block.name, publicPrefixes: block.match.publicPrefixes };
  }
  throw new AdmissionRejection(block.name, block.action.status, block.action.message);
}

/**
 * Runs the admission chain on an S3 request before authentication. `allow-anonymous` admits an
 * unsigned read (GET, HEAD, OPTIONS) without authentication (a signed one is always
 * authenticated: a signature is checked, never ignored; a write goes on to authentication); `deny` and `reject` refuse; `continue` or no match goes on to
 * authentication.
 */
import {
  type AdmissionChain,
  type AdmissionRequest,
  decideAdmission,
  type RequestKind,
  requestKindOf,
} from "../admission/mod.ts";
import { clientIp } from "../auth/mod.ts";
import { SvcError } from "../lib/mod.ts";
import type { AnonymousAdmission, S3Request } from "./request.ts";

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

const SIGNATURE_PARAMS = [
  "X-Amz-Algorithm",
  "X-Amz-Credential",
  "X-Amz-Signature",
  "AWSAccessKeyId",
  "Signature",
];

export function requestKind(request: S3Request): RequestKind {
  return requestKindOf(request);
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
 * The admission decision (src/admission/decide.ts, shared with the trace): an AnonymousAdmission
 * when the request is admitted without authentication, null when it goes on to authentication;
 * throws when a block refuses it.
 */
export function admit(
  chain: AdmissionChain,
  request: S3Request,
  remoteAddress: string | undefined,
): AnonymousAdmission | null {
  if (chain.blocks.length === 0) return null;
  const facts = admissionRequestOf(request, remoteAddress, chain.trustProxyHeaders);
  const decision = decideAdmission(chain.blocks, facts);
  switch (decision.outcome) {
    case "authenticate":
      return null;
    case "anonymous":
      return { block: decision.block.name, publicPrefixes: decision.block.match.publicPrefixes };
    case "deny":
      throw new SvcError(
        "AccessDenied",
        `Access Denied by admission block "${decision.block.name}"`,
      );
    case "reject":
      throw new AdmissionRejection(decision.block.name, decision.status, decision.message);
  }
}

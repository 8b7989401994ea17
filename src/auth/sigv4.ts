/**
 * AWS Signature Version 4 for S3 requests: the Authorization-header form and the presigned
 * (query) form. parseSignedRequest() reads what the client claims; verifySignedRequest() checks
 * it against a CredentialStore and the clock. Streaming chunk signatures build on the result
 * (chunk-signatures.ts); the canonical forms and their decisions are in sigv4-canonical.ts.
 *
 * Decisions where S3's behaviour had to be chosen:
 * - A missing `x-amz-content-sha256` on header auth is refused as S3 does (400 InvalidRequest
 *   "Missing required header for this request: x-amz-content-sha256"), not taken as unsigned.
 * - Another Authorization scheme (SigV2 `AWS AKID:sig`, SigV4a) or SigV2 query parameters are
 *   refused as S3 does in its SigV4-only regions: 400 InvalidRequest "The authorization mechanism
 *   you have provided is not supported. Please use AWS4-HMAC-SHA256." Both an Authorization
 *   header and query auth: 400 InvalidArgument with S3's "Only one auth mechanism allowed" text.
 * - `x-amz-*` request headers left out of the signed headers are refused (403 AccessDenied with
 *   HeadersNotSigned, as S3 does), except x-amz-content-sha256 (and x-amz-date on header auth),
 *   whose values are in the string to sign anyway. Otherwise a captured presigned PUT could gain
 *   an unsigned x-amz-copy-source or x-amz-tagging.
 * - Any region is accepted (svc is one endpoint); the service must be `s3`.
 */

import { SvcError } from "../lib/errors.ts";
import type { CredentialStore, Principal } from "../iam/credentials.ts";
import {
  amzTime,
  canonicalRequest,
  canonicalUri,
  isoBasic,
  isoSeconds,
  spacedHex,
  stringToSign,
} from "./sigv4-canonical.ts";
import { hmacHex, signaturesEqual, signingKey } from "./signing-key.ts";

export { canonicalQuery, canonicalRequest, canonicalUri, stringToSign } from "./sigv4-canonical.ts";

export const ALGORITHM = "AWS4-HMAC-SHA256";
export const UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD";
const MAX_EXPIRES = 604800;
const PAYLOAD_MARKERS = new Set([
  UNSIGNED_PAYLOAD,
  "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
  "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
  "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
]);
const HEX_SHA256 = /^[0-9a-f]{64}$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;
/** The presigned parameters in the order parseQueryForm reads them; the first three mark one. */
const QUERY_PARAMS = [
  ...["X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Signature"],
  ...["X-Amz-Date", "X-Amz-SignedHeaders", "X-Amz-Expires"],
];

/** S3's own wording, so clients and their users see familiar errors. */
const MESSAGES = {
  unsupported:
    "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.",
  twoForms: "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, " +
    "Signature query string parameter or the Authorization header should be specified",
  components:
    "the authorization header requires three components: Credential, SignedHeaders, and Signature.",
  noContentSha256: "Missing required header for this request: x-amz-content-sha256",
  badContentSha256: "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, " +
    "STREAMING-UNSIGNED-PAYLOAD-TRAILER, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, " +
    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER, or a valid sha256 value.",
  noDate: "AWS authentication requires a valid Date or x-amz-date header",
  queryParams: "Query-string authentication version 4 requires the X-Amz-Algorithm, " +
    "X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires " +
    "parameters.",
  queryDate: `X-Amz-Date must be in the ISO8601 Long Format "yyyyMMdd'T'HHmmss'Z'"`,
  credential:
    `the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".`,
  unknownKey: "The AWS Access Key Id you provided does not exist in our records.",
  skewed: "The difference between the request time and the current time is too large.",
  mismatch: "The request signature we calculated does not match the signature you provided. " +
    "Check your key and signing method.",
  notSigned: "There were headers present in the request which were not signed",
};

export interface SignedRequestInput {
  method: string;
  /** The path exactly as sent (splitRawUrl), still percent-encoded. */
  rawPath: string;
  /** The query exactly as sent, without `?`. */
  rawQuery: string;
  headers: Headers;
}

export interface SignedRequest {
  presigned: boolean;
  accessKeyId: string;
  /** `<yyyymmdd>/<region>/s3/aws4_request` */
  scope: string;
  region: string;
  /** The request time, `YYYYMMDDTHHMMSSZ`, as it enters the string to sign. */
  amzDate: string;
  /** Milliseconds since the epoch of amzDate. */
  time: number;
  /** The signed header names, in the order the client listed them. */
  signedHeaders: string[];
  signature: string;
  /** Presigned only: X-Amz-Expires in seconds. */
  expires?: number;
  /** The canonical request's last line: x-amz-content-sha256, or UNSIGNED-PAYLOAD presigned. */
  payloadHash: string;
}

export interface VerifiedRequest {
  principal: Principal;
  accessKeyId: string;
  presigned: boolean;
  signingKey: Uint8Array;
  /** The request signature (lowercase hex): the seed of a streaming chunk-signature chain. */
  signature: string;
  scope: string;
  amzDate: string;
  /** Milliseconds since the epoch of amzDate (replay memory lasts while it can verify). */
  requestTime: number;
  /** What the body must honour: a hex sha256, UNSIGNED-PAYLOAD or a STREAMING-* marker. */
  payloadHash: string;
}

export type FailureReason = "missing_header" | "invalid_presigned" | "invalid_signature";

/**
 * The metrics reason of each error made here, recorded when it is made, since one code
 * (AccessDenied, InvalidRequest) can come from either form. Untagged errors map by code.
 */
const reasons = new WeakMap<SvcError, FailureReason>();

function fail(
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

/** Reads the claimed signature; null when the request carries none (anonymous). */
export function parseSignedRequest(input: SignedRequestInput): SignedRequest | null {
  const authorization = input.headers.get("authorization");
  const query = new URLSearchParams(input.rawQuery);
  const presigned = QUERY_PARAMS.slice(0, 3).some((name) => query.has(name));
  if (authorization !== null && (presigned || query.has("Signature"))) {
    throw fail("missing_header", "InvalidArgument", MESSAGES.twoForms);
  }
  if (authorization !== null) return parseHeaderForm(authorization, input.headers);
  if (presigned) return parseQueryForm(query, input.headers);
  if (query.has("AWSAccessKeyId") || query.has("Signature")) {
    throw fail("invalid_presigned", "InvalidRequest", MESSAGES.unsupported);
  }
  return null;
}

function headerMalformed(detail: string): SvcError {
  const message = `The authorization header is malformed; ${detail}`;
  return fail("missing_header", "AuthorizationHeaderMalformed", message);
}

function parseHeaderForm(authorization: string, headers: Headers): SignedRequest {
  const space = authorization.indexOf(" ");
  if (authorization.slice(0, space) !== ALGORITHM) {
    throw fail("missing_header", "InvalidRequest", MESSAGES.unsupported);
  }
  // `Credential=…, SignedHeaders=…, Signature=…`, spaces after the commas optional.
  const parts = new Map<string, string>();
  for (const part of authorization.slice(space + 1).split(",")) {
    const eq = part.indexOf("=");
    const name = part.slice(0, eq).trim();
    if (eq < 0 || parts.has(name)) throw headerMalformed(`"${part.trim()}" is not understood.`);
    parts.set(name, part.slice(eq + 1).trim());
  }
  const credential = parts.get("Credential");
  const signedHeaders = parts.get("SignedHeaders");
  const signature = parts.get("Signature");
  if (!credential || !signedHeaders || !signature || parts.size !== 3) {
    throw headerMalformed(MESSAGES.components);
  }
  const scope = parseCredential(credential, headerMalformed);
  const { amzDate, time } = requestDate(headers);
  if (scope.date !== amzDate.slice(0, 8)) throw headerMalformed(dateMismatch(scope.date, amzDate));
  const payloadHash = headers.get("x-amz-content-sha256");
  if (payloadHash === null) {
    throw fail("missing_header", "InvalidRequest", MESSAGES.noContentSha256);
  }
  if (!PAYLOAD_MARKERS.has(payloadHash) && !HEX_SHA256.test(payloadHash)) {
    throw fail("missing_header", "InvalidArgument", MESSAGES.badContentSha256);
  }
  return {
    presigned: false,
    ...scope,
    amzDate,
    time,
    signedHeaders: parseSignedHeaders(signedHeaders, headerMalformed),
    signature,
    payloadHash,
  };
}

function queryError(message: string): SvcError {
  return fail("invalid_presigned", "AuthorizationQueryParametersError", message);
}

function parseQueryForm(query: URLSearchParams, headers: Headers): SignedRequest {
  const values = QUERY_PARAMS.map((name) => query.getAll(name));
  // A repeated parameter is refused: which copy was meant is not ours to guess.
  if (values.some((all) => all.length !== 1 || all[0] === "")) {
    throw queryError(MESSAGES.queryParams);
  }
  const [algorithm, credential, signature, amzDate, signedHeaders, expiresText] = values.map(
    (all) => all[0],
  );
  if (algorithm !== ALGORITHM) throw queryError(`X-Amz-Algorithm only supports "${ALGORITHM}"`);
  const scope = parseCredential(
    credential,
    (detail) => queryError(`Error parsing the X-Amz-Credential parameter; ${detail}`),
  );
  const time = amzTime(amzDate);
  if (time === undefined) throw queryError(MESSAGES.queryDate);
  if (scope.date !== amzDate.slice(0, 8)) throw queryError(dateMismatch(scope.date, amzDate));
  if (!/^\d{1,7}$/.test(expiresText)) throw queryError("X-Amz-Expires should be a number");
  const expires = Number(expiresText);
  if (expires > MAX_EXPIRES) {
    throw queryError(`X-Amz-Expires must be less than a week (in seconds) that is ${MAX_EXPIRES}`);
  }
  const list = parseSignedHeaders(signedHeaders, queryError);
  // The SDK presigner hoists x-amz-content-sha256 into the query (keeping its lowercase name);
  // a header it kept signed is what it hashed too. Otherwise presigned URLs sign UNSIGNED-PAYLOAD.
  let payloadHash = list.includes("x-amz-content-sha256")
    ? headers.get("x-amz-content-sha256")
    : null;
  for (const [name, value] of query) {
    if (name.toLowerCase() === "x-amz-content-sha256") payloadHash = value;
  }
  return {
    presigned: true,
    ...scope,
    amzDate,
    time,
    signedHeaders: list,
    signature,
    expires,
    payloadHash: payloadHash ?? UNSIGNED_PAYLOAD,
  };
}

function dateMismatch(scopeDate: string, amzDate: string): string {
  const day = amzDate.slice(0, 8);
  return `Invalid credential date "${scopeDate}". This date is not the same as X-Amz-Date: "${day}".`;
}

interface Scope {
  accessKeyId: string;
  scope: string;
  region: string;
  date: string;
}

function parseCredential(credential: string, error: (detail: string) => SvcError): Scope {
  const parts = credential.split("/");
  if (parts.length < 5 || parts.some((part) => part === "")) throw error(MESSAGES.credential);
  const [date, region, service, terminal] = parts.slice(-4);
  if (!/^\d{8}$/.test(date)) throw error(`incorrect date format "${date}", expecting yyyyMMdd.`);
  if (service !== "s3") {
    throw error(`incorrect service "${service}". This endpoint belongs to "s3".`);
  }
  if (terminal !== "aws4_request") {
    throw error(`incorrect terminal "${terminal}". This endpoint uses "aws4_request".`);
  }
  // Everything before the scope is the key id (AWS ids have no `/`; svc's own ids need not care).
  const accessKeyId = parts.slice(0, -4).join("/");
  return { accessKeyId, scope: `${date}/${region}/s3/aws4_request`, region, date };
}

function parseSignedHeaders(list: string, error: (detail: string) => SvcError): string[] {
  const names = list.split(";");
  if (names.some((name) => !HEADER_NAME.test(name))) {
    throw error(`the SignedHeaders "${list}" must be lowercase header names separated by ";".`);
  }
  if (!names.includes("host")) throw error("the SignedHeaders must include host.");
  return names;
}

/** The header-form request time: x-amz-date, else Date (in ISO basic or HTTP-date form). */
function requestDate(headers: Headers): { amzDate: string; time: number } {
  const amz = headers.get("x-amz-date");
  const date = amz === null ? headers.get("date") : null;
  const time = amz !== null
    ? amzTime(amz)
    : date === null
    ? undefined
    : amzTime(date) ?? Date.parse(date);
  if (time === undefined || !Number.isFinite(time)) {
    throw fail("missing_header", "AccessDenied", MESSAGES.noDate);
  }
  return { amzDate: amz ?? isoBasic(time), time };
}

/** Checks the key, time and signature of a parsed request; throws the S3 error on failure. */
export function verifySignedRequest(
  signed: SignedRequest,
  input: SignedRequestInput,
  store: CredentialStore,
  now: number,
  options: { clockSkewSeconds: number },
): VerifiedRequest {
  const reason: FailureReason = signed.presigned ? "invalid_presigned" : "invalid_signature";
  const credential = store.lookup(signed.accessKeyId);
  if (credential === null) {
    const details = { AWSAccessKeyId: signed.accessKeyId };
    throw fail(reason, "InvalidAccessKeyId", MESSAGES.unknownKey, details);
  }
  const skew = options.clockSkewSeconds * 1000;
  if (signed.presigned) {
    if (signed.time - now > skew) throw fail(reason, "AccessDenied", "Request is not valid yet");
    const expiry = signed.time + signed.expires! * 1000;
    // X-Amz-Expires=0 is a URL that was never valid: expired, as S3 answers it (403, not 400).
    if (now > expiry || signed.expires === 0) {
      throw fail(reason, "AccessDenied", "Request has expired", {
        "X-Amz-Expires": String(signed.expires),
        Expires: isoSeconds(expiry),
        ServerTime: isoSeconds(now),
      });
    }
  } else if (Math.abs(now - signed.time) > skew) {
    throw fail(reason, "RequestTimeTooSkewed", MESSAGES.skewed, {
      RequestTime: signed.amzDate,
      ServerTime: isoSeconds(now),
      MaxAllowedSkewMilliseconds: String(skew),
    });
  }
  const key = signingKey(credential.secretAccessKey, signed.scope.slice(0, 8), signed.region, "s3");
  const uri = canonicalUri(input.rawPath);
  const canonical = canonicalRequest(signed, input, uri);
  const toSign = stringToSign(signed, canonical);
  let ok = signaturesEqual(hmacHex(key, toSign), signed.signature);
  if (!ok && uri !== input.rawPath) {
    // The path exactly as sent (see sigv4-canonical.ts): only tried when the first fails.
    const rawToSign = stringToSign(signed, canonicalRequest(signed, input, input.rawPath));
    ok = signaturesEqual(hmacHex(key, rawToSign), signed.signature);
  }
  if (!ok) {
    throw fail(reason, "SignatureDoesNotMatch", MESSAGES.mismatch, {
      AWSAccessKeyId: signed.accessKeyId,
      StringToSign: toSign,
      SignatureProvided: signed.signature,
      StringToSignBytes: spacedHex(toSign),
      CanonicalRequest: canonical,
      CanonicalRequestBytes: spacedHex(canonical),
    });
  }
  const unsigned = unsignedAmzHeaders(signed, input.headers);
  if (unsigned.length > 0) {
    const details = { HeadersNotSigned: unsigned.join(", ") };
    throw fail(reason, "AccessDenied", MESSAGES.notSigned, details);
  }
  return {
    principal: credential.principal,
    accessKeyId: signed.accessKeyId,
    presigned: signed.presigned,
    signingKey: key,
    signature: signed.signature.toLowerCase(),
    scope: signed.scope,
    amzDate: signed.amzDate,
    requestTime: signed.time,
    payloadHash: signed.payloadHash,
  };
}

/** x-amz-* headers the signature does not cover (see the file header for the exceptions). */
function unsignedAmzHeaders(signed: SignedRequest, headers: Headers): string[] {
  const unsigned: string[] = [];
  // forEach, not for-of: Deno's Headers iterator costs ~10 µs a request, forEach ~1 µs.
  headers.forEach((_value, name) => {
    if (!name.startsWith("x-amz-") || name === "x-amz-content-sha256") return;
    if (!signed.presigned && name === "x-amz-date") return;
    if (!signed.signedHeaders.includes(name)) unsigned.push(name);
  });
  return unsigned.sort();
}

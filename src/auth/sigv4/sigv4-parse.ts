/**
 * Reads what a SigV4 request claims, in either form: the Authorization header or the presigned
 * query. Nothing is verified here (sigv4.ts does that); what is malformed, unsupported or
 * ambiguous is refused with S3's own errors (the decisions are listed in sigv4.ts).
 */
import { SvcError } from "../../lib/mod.ts";
import { amzTime, isoBasic } from "./sigv4-canonical.ts";
import { fail } from "./sigv4-failures.ts";
import {
  ALGORITHM,
  type SignedRequest,
  type SignedRequestInput,
  UNSIGNED_PAYLOAD,
} from "./sigv4-request.ts";

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
};

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
  // A negative lifetime is what boto3 writes for a URL presigned as already expired: S3 reads it
  // as expired (403 at verification), not as a malformed parameter.
  if (!/^-?\d{1,7}$/.test(expiresText)) throw queryError("X-Amz-Expires should be a number");
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

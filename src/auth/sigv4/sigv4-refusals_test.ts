/**
 * What SigV4 verification refuses, with the S3 error code, the details S3 puts beside it and the
 * metrics reason (failureReason). Most start from a request a real signer made valid.
 */
import assert from "node:assert/strict";
import { SvcError } from "../../lib/errors.ts";
import { BootstrapCredentials } from "../../iam/credentials.ts";
import { failureReason } from "./sigv4-failures.ts";
import { parseSignedRequest } from "./sigv4-parse.ts";
import type { SignedRequestInput } from "./sigv4-request.ts";
import {
  AKID,
  NOW,
  refuses,
  sdkPath,
  smithyPresigned,
  smithySigned,
  verify,
} from "../../testing/sigv4-test-signers.ts";

const SIG = "0".repeat(64);
const CREDENTIAL = `${AKID}/20260101/us-east-1/s3/aws4_request`;

function withHeaders(input: SignedRequestInput, changes: Record<string, string | null>) {
  const headers = new Headers(input.headers);
  for (const [name, value] of Object.entries(changes)) {
    if (value === null) headers.delete(name);
    else headers.set(name, value);
  }
  return { ...input, headers };
}

function parseRefuses(input: SignedRequestInput, code: string, reason: string): SvcError {
  let caught: unknown;
  try {
    parseSignedRequest(input);
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof SvcError, `expected ${code} (${reason})`);
  assert.equal(caught.code, code, caught.message);
  assert.equal(failureReason(caught), reason, caught.message);
  return caught;
}

function bytes(text: string): string {
  return Array.from(new TextEncoder().encode(text), (b) => b.toString(16).padStart(2, "0"))
    .join(" ");
}

Deno.test("a wrong secret is SignatureDoesNotMatch with S3's details", async () => {
  const input = await smithySigned("GET", sdkPath("b", "k y"), { prefix: "p" });
  const err = refuses(input, "SignatureDoesNotMatch", NOW, new BootstrapCredentials(AKID, "x"));
  assert.equal(failureReason(err), "invalid_signature");
  assert.equal(err.status, 403);
  const d = err.details;
  assert.equal(d.AWSAccessKeyId, AKID);
  assert.equal(d.SignatureProvided, parseSignedRequest(input)!.signature);
  assert.match(d.StringToSign, /^AWS4-HMAC-SHA256\n20260101T120000Z\n20260101\/eu-central-1\//);
  assert.match(d.CanonicalRequest, /^GET\n\/b\/k%20y\nprefix=p\n/);
  assert.equal(d.StringToSignBytes, bytes(d.StringToSign));
  assert.equal(d.CanonicalRequestBytes, bytes(d.CanonicalRequest));
});

Deno.test("an unknown key is InvalidAccessKeyId naming the key", async () => {
  const input = await smithySigned("GET", "/b/k");
  const other = new BootstrapCredentials("SOMEONEELSE", "s");
  const err = refuses(input, "InvalidAccessKeyId", NOW, other);
  assert.equal(err.details.AWSAccessKeyId, AKID);
  assert.equal(failureReason(err), "invalid_signature");
  const presigned = await smithyPresigned("GET", "/b/k");
  assert.equal(
    failureReason(refuses(presigned, "InvalidAccessKeyId", NOW, other)),
    "invalid_presigned",
  );
});

Deno.test("tampering with what was signed is refused; unsigned headers are free", async () => {
  const input = await smithySigned("PUT", "/b/k", { tagging: "" }, {
    "x-amz-meta-a": "1",
    "content-type": "text/plain",
  });
  verify(input);
  refuses({ ...input, method: "POST" }, "SignatureDoesNotMatch");
  refuses({ ...input, rawPath: "/b/K" }, "SignatureDoesNotMatch");
  refuses({ ...input, rawPath: "/b/k/" }, "SignatureDoesNotMatch");
  refuses({ ...input, rawQuery: "tagging=x" }, "SignatureDoesNotMatch");
  refuses({ ...input, rawQuery: "tagging=&acl=" }, "SignatureDoesNotMatch");
  refuses(withHeaders(input, { "x-amz-meta-a": "2" }), "SignatureDoesNotMatch");
  refuses(withHeaders(input, { "content-type": null }), "SignatureDoesNotMatch");
  refuses(withHeaders(input, { host: "evil:9000" }), "SignatureDoesNotMatch");
  refuses(withHeaders(input, { "x-amz-content-sha256": "a".repeat(64) }), "SignatureDoesNotMatch");
  // Headers outside the signature may change or appear, except x-amz-* ones.
  verify(withHeaders(input, { "user-agent": "other", "content-md5": "abc", accept: "*/*" }));
  const err = refuses(withHeaders(input, { "x-amz-copy-source": "/b/secret" }), "AccessDenied");
  assert.equal(err.message, "There were headers present in the request which were not signed");
  assert.equal(err.details.HeadersNotSigned, "x-amz-copy-source");
  const presigned = await smithyPresigned("PUT", "/b/k");
  const both = withHeaders(presigned, { "x-amz-tagging": "a=b", "x-amz-acl": "public-read" });
  const denied = refuses(both, "AccessDenied");
  assert.equal(denied.details.HeadersNotSigned, "x-amz-acl, x-amz-tagging");
  assert.equal(failureReason(denied), "invalid_presigned");
  verify(withHeaders(presigned, { "x-amz-content-sha256": "UNSIGNED-PAYLOAD" }));
});

Deno.test("header auth allows the configured clock skew both ways, no more", async () => {
  const input = await smithySigned("GET", "/b/k");
  verify(input, NOW + 300_000);
  verify(input, NOW - 300_000);
  for (const now of [NOW + 300_001, NOW - 300_001]) {
    const err = refuses(input, "RequestTimeTooSkewed", now);
    assert.deepEqual(err.details, {
      RequestTime: "20260101T120000Z",
      ServerTime: new Date(now).toISOString().replace(/\.\d{3}Z$/, "Z"),
      MaxAllowedSkewMilliseconds: "300000",
    });
    assert.equal(failureReason(err), "invalid_signature");
  }
});

Deno.test("presigned URLs: not valid yet beyond the skew, expired after X-Amz-Expires", async () => {
  const input = await smithyPresigned("GET", "/b/k", {}, 600);
  verify(input, NOW - 300_000);
  verify(input, NOW + 600_000);
  const early = refuses(input, "AccessDenied", NOW - 300_001);
  assert.equal(early.message, "Request is not valid yet");
  const late = refuses(input, "AccessDenied", NOW + 600_001);
  assert.equal(late.message, "Request has expired");
  assert.deepEqual(late.details, {
    "X-Amz-Expires": "600",
    Expires: "2026-01-01T12:10:00Z",
    ServerTime: "2026-01-01T12:10:00Z",
  });
  assert.equal(failureReason(late), "invalid_presigned");
  const never = await smithyPresigned("GET", "/b/k", {}, 0);
  assert.equal(refuses(never, "AccessDenied", NOW).message, "Request has expired");
});

function headerRequest(authorization: string | null, extra: Record<string, string> = {}) {
  const headers = new Headers({
    host: "h",
    "x-amz-date": "20260101T120000Z",
    "x-amz-content-sha256": "UNSIGNED-PAYLOAD",
    ...extra,
  });
  if (authorization !== null) headers.set("authorization", authorization);
  return { method: "GET", rawPath: "/b/k", rawQuery: "", headers };
}

Deno.test("malformed or unsupported Authorization headers are refused as S3 does", () => {
  const ok =
    `AWS4-HMAC-SHA256 Credential=${CREDENTIAL}, SignedHeaders=host;x-amz-date, Signature=${SIG}`;
  assert.equal(parseSignedRequest(headerRequest(ok))!.signature, SIG);
  const compact = ok.replaceAll(", ", ",");
  assert.deepEqual(
    parseSignedRequest(headerRequest(compact)),
    parseSignedRequest(headerRequest(ok)),
  );
  assert.equal(parseSignedRequest(headerRequest(null)), null);
  // deno-fmt-ignore
  const malformed = [
    `AWS4-HMAC-SHA256 Credential=${CREDENTIAL}, SignedHeaders=host`,
    `AWS4-HMAC-SHA256 Credential=${CREDENTIAL}, SignedHeaders=host, Signature=${SIG}, Extra=1`,
    `AWS4-HMAC-SHA256 Credential=${CREDENTIAL}, Credential=${CREDENTIAL}, Signature=${SIG}`,
    `AWS4-HMAC-SHA256 Credential=${CREDENTIAL} SignedHeaders=host Signature=${SIG}`,
    `AWS4-HMAC-SHA256 Credential=${AKID}/20260101/us-east-1/s3, SignedHeaders=host, Signature=${SIG}`,
    `AWS4-HMAC-SHA256 Credential=${AKID}/20260101/us-east-1/ec2/aws4_request, SignedHeaders=host, Signature=${SIG}`,
    `AWS4-HMAC-SHA256 Credential=${AKID}/20260101/us-east-1/s3/aws5_request, SignedHeaders=host, Signature=${SIG}`,
    `AWS4-HMAC-SHA256 Credential=${AKID}/2026-01-01/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=${SIG}`,
    `AWS4-HMAC-SHA256 Credential=${AKID}/20260102/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=${SIG}`,
    `AWS4-HMAC-SHA256 Credential=${CREDENTIAL}, SignedHeaders=x-amz-date, Signature=${SIG}`,
    `AWS4-HMAC-SHA256 Credential=${CREDENTIAL}, SignedHeaders=Host;X-Amz-Date, Signature=${SIG}`,
  ];
  for (const header of malformed) {
    parseRefuses(headerRequest(header), "AuthorizationHeaderMalformed", "missing_header");
  }
  for (
    const header of ["AWS AKID:c2lnbmF0dXJl", "AWS4-ECDSA-P256-SHA256 Credential=x", "Bearer x"]
  ) {
    const err = parseRefuses(headerRequest(header), "InvalidRequest", "missing_header");
    assert.match(err.message, /authorization mechanism you have provided is not supported/);
  }
  const noSha = parseRefuses(
    withHeaders(headerRequest(ok), { "x-amz-content-sha256": null }),
    "InvalidRequest",
    "missing_header",
  );
  assert.equal(noSha.message, "Missing required header for this request: x-amz-content-sha256");
  parseRefuses(
    headerRequest(ok, { "x-amz-content-sha256": "STREAMING-SOMETHING" }),
    "InvalidArgument",
    "missing_header",
  );
  for (const date of ["2026-01-01T12:00:00Z", "20260101T250000Z", "20260231T120000Z", ""]) {
    parseRefuses(headerRequest(ok, { "x-amz-date": date }), "AccessDenied", "missing_header");
  }
  const noDate = withHeaders(headerRequest(ok), { "x-amz-date": null });
  parseRefuses(noDate, "AccessDenied", "missing_header");
  // The Date header stands in for x-amz-date; its day must still match the scope.
  const dated = withHeaders(noDate, { date: "Thu, 01 Jan 2026 12:00:00 GMT" });
  assert.equal(parseSignedRequest(dated)!.amzDate, "20260101T120000Z");
  const both = { ...headerRequest(ok), rawQuery: `X-Amz-Algorithm=AWS4-HMAC-SHA256` };
  parseRefuses(both, "InvalidArgument", "missing_header");
});

Deno.test("malformed presigned parameters are AuthorizationQueryParametersError", () => {
  const params: Record<string, string> = {
    "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
    "X-Amz-Credential": CREDENTIAL,
    "X-Amz-Date": "20260101T120000Z",
    "X-Amz-Expires": "600",
    "X-Amz-SignedHeaders": "host",
    "X-Amz-Signature": SIG,
  };
  const request = (changes: Record<string, string | null>, extra = "") => {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries({ ...params, ...changes })) {
      if (value !== null) query.set(name, value);
    }
    const rawQuery = query.toString() + extra;
    return { method: "GET", rawPath: "/b/k", rawQuery, headers: new Headers({ host: "h" }) };
  };
  assert.equal(parseSignedRequest(request({}))!.expires, 600);
  assert.equal(parseSignedRequest(request({ "X-Amz-Expires": "604800" }))!.expires, 604800);
  assert.equal(
    parseSignedRequest(request({ "X-Amz-Expires": "0" }))!.expires,
    0,
    "expired, not malformed",
  );
  assert.equal(
    parseSignedRequest(request({ "X-Amz-Expires": "-5" }))!.expires,
    -5,
    "boto3's already-expired URL: expired (403 at verification), not malformed",
  );
  const bad: Record<string, string | null>[] = [
    { "X-Amz-Date": null },
    { "X-Amz-Expires": null },
    { "X-Amz-Signature": "" },
    { "X-Amz-Algorithm": "AWS4-HMAC-SHA1" },
    { "X-Amz-Credential": `${AKID}/20260101/us-east-1/s3` },
    { "X-Amz-Credential": `${AKID}/20260101/us-east-1/sqs/aws4_request` },
    { "X-Amz-Credential": `${AKID}/20251231/us-east-1/s3/aws4_request` },
    { "X-Amz-Date": "20260101120000" },
    { "X-Amz-Expires": "604801" },
    { "X-Amz-Expires": "--5" },
    { "X-Amz-Expires": "1e3" },
    { "X-Amz-SignedHeaders": "x-amz-date" },
  ];
  for (const changes of bad) {
    parseRefuses(request(changes), "AuthorizationQueryParametersError", "invalid_presigned");
  }
  parseRefuses(
    request({}, `&X-Amz-Date=20260101T120000Z`),
    "AuthorizationQueryParametersError",
    "invalid_presigned",
  );
  // SigV2 query authentication is not supported.
  const v2 = { ...request({}), rawQuery: "AWSAccessKeyId=AKID&Expires=1&Signature=abc" };
  parseRefuses(v2, "InvalidRequest", "invalid_presigned");
});

Deno.test("failureReason maps untagged errors by code", () => {
  assert.equal(failureReason(new SvcError("AuthorizationHeaderMalformed", "x")), "missing_header");
  assert.equal(failureReason(new SvcError("MissingSecurityHeader", "x")), "missing_header");
  assert.equal(
    failureReason(new SvcError("AuthorizationQueryParametersError", "x")),
    "invalid_presigned",
  );
  assert.equal(failureReason(new SvcError("SignatureDoesNotMatch", "x")), "invalid_signature");
  assert.equal(failureReason(new Error("x")), "invalid_signature");
});

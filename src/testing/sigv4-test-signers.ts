/**
 * Real signers for the SigV4 tests (not a test file itself): @smithy/signature-v4 configured as
 * @aws-sdk/client-s3 configures it, the S3 client with its requests captured before they leave,
 * and aws4fetch, plus the keys that exercise encoding.
 */
import assert from "node:assert/strict";
import { createHash, createHmac, type Hash, type Hmac } from "node:crypto";
import { S3Client } from "@aws-sdk/client-s3";
import { buildQueryString, HttpRequest } from "@smithy/core/protocols";
import { SignatureV4 } from "@smithy/signature-v4";
import { AwsClient } from "aws4fetch";
import { SvcError } from "../lib/errors.ts";
import { splitRawUrl } from "../http/request-context.ts";
import { BootstrapCredentials } from "../iam/credentials.ts";
import { parseSignedRequest } from "../auth/sigv4/sigv4-parse.ts";
import type { SignedRequestInput } from "../auth/sigv4/sigv4-request.ts";
import { verifySignedRequest } from "../auth/sigv4/sigv4.ts";

export const AKID = "AKIDSVCTEST0001";
export const SECRET = "svc/Secret+Key=with/odd chars";
export const store = new BootstrapCredentials(AKID, SECRET);
export const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);
export const HOST = "127.0.0.1:9000";

export function verify(input: SignedRequestInput, now = NOW, credentials = store) {
  const signed = parseSignedRequest(input);
  assert.ok(signed, "the request carries a signature");
  return verifySignedRequest(signed, input, credentials, now, { clockSkewSeconds: 300 });
}

export function refuses(
  input: SignedRequestInput,
  code: string,
  now = NOW,
  credentials = store,
): SvcError {
  let caught: unknown;
  try {
    verify(input, now, credentials);
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof SvcError, `expected ${code}, got ${caught}`);
  assert.equal(caught.code, code, caught.message);
  return caught;
}

/** node:crypto behind smithy's hash interface (what @aws-crypto gives the SDK). */
class NodeSha256 {
  readonly #hash: Hash | Hmac;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    const key = secret === undefined || typeof secret === "string"
      ? secret
      : ArrayBuffer.isView(secret)
      ? new Uint8Array(secret.buffer, secret.byteOffset, secret.byteLength)
      : new Uint8Array(secret);
    this.#hash = key === undefined ? createHash("sha256") : createHmac("sha256", key);
  }
  update(data: Uint8Array) {
    this.#hash.update(data);
  }
  digest() {
    return Promise.resolve(new Uint8Array(this.#hash.digest()));
  }
  reset() {}
}

/** Configured as @aws-sdk/client-s3 configures it: the path is signed as sent. */
export const smithy = new SignatureV4({
  credentials: { accessKeyId: AKID, secretAccessKey: SECRET },
  region: "eu-central-1",
  service: "s3",
  sha256: NodeSha256,
  uriEscapePath: false,
});

type Query = Record<string, string | string[]>;

function sdkRequest(method: string, path: string, query: Query, headers: Record<string, string>) {
  return new HttpRequest({
    method,
    protocol: "http:",
    hostname: "127.0.0.1",
    port: 9000,
    path,
    query,
    headers: { host: HOST, ...headers },
  });
}

/** The request as svc receives it: the path and query as the SDK's HTTP handler sends them. */
export function received(request: HttpRequest): SignedRequestInput {
  return {
    method: request.method,
    rawPath: request.path,
    rawQuery: buildQueryString(request.query),
    headers: new Headers(request.headers),
  };
}

export async function smithySigned(
  method: string,
  path: string,
  query: Query = {},
  headers: Record<string, string> = {},
): Promise<SignedRequestInput> {
  const request = sdkRequest(method, path, query, headers);
  return received(await smithy.sign(request, { signingDate: new Date(NOW) }) as HttpRequest);
}

export async function smithyPresigned(
  method: string,
  path: string,
  query: Query = {},
  expiresIn = 600,
): Promise<SignedRequestInput> {
  // As @aws-sdk/s3-request-presigner does: the payload is declared unsigned, then hoisted.
  const request = sdkRequest(method, path, query, { "x-amz-content-sha256": "UNSIGNED-PAYLOAD" });
  const presigned = await smithy.presign(request, { signingDate: new Date(NOW), expiresIn });
  return received(presigned as HttpRequest);
}

/** A key encoded as the S3 SDK encodes it into the path (RFC 3986, `/` kept). */
export function sdkPath(bucket: string, key: string): string {
  const encode = (s: string) =>
    encodeURIComponent(s).replace(/[!'()*]/g, (c) => "%" + c.charCodeAt(0).toString(16));
  return `/${bucket}/${key.split("/").map(encode).join("/")}`;
}

export const KEYS = [
  "plain.txt",
  "with space/and+plus.txt",
  "unicode/é漢字🙂.bin",
  "pct%25/100%",
  "tilde~bang!quote'(paren)*star",
  "dots/../and/./slashes//x",
  "semi;colon,comma=eq&amp?q#h@at:colon$dollar",
];

class Captured extends Error {}

/** The SDK's requests as they would leave, signed with the real clock. */
export async function captureSdk(calls: ((client: S3Client) => Promise<unknown>)[]) {
  let last: HttpRequest | undefined;
  const client = new S3Client({
    region: "us-east-1",
    endpoint: `http://${HOST}`,
    forcePathStyle: true,
    maxAttempts: 1,
    // Quiet: the retry middleware warns about the streaming request the capture aborts.
    logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {} },
    credentials: { accessKeyId: AKID, secretAccessKey: SECRET },
    requestHandler: {
      handle: (request: HttpRequest) => {
        last = request;
        return Promise.reject(new Captured("captured"));
      },
    },
  });
  // The body too: a streaming upload's is the aws-chunked encoding the SDK would send.
  const inputs: (SignedRequestInput & { body: unknown })[] = [];
  for (const call of calls) {
    await assert.rejects(call(client), Captured);
    inputs.push({ ...received(last!), body: last!.body });
  }
  client.destroy();
  return inputs;
}

export function aws4fetch(): AwsClient {
  return new AwsClient({
    accessKeyId: AKID,
    secretAccessKey: SECRET,
    service: "s3",
    region: "us-east-1",
  });
}

/** An aws4fetch Request as svc receives it (Host is added by fetch on the wire). */
export function fromFetch(request: Request): SignedRequestInput {
  const { path, search } = splitRawUrl(request.url);
  const headers = new Headers(request.headers);
  headers.set("host", new URL(request.url).host);
  return { method: request.method, rawPath: path, rawQuery: search, headers };
}

export const STAMP = "20260101T120000Z";

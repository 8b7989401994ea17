/**
 * Streaming chunk signatures, trailer signatures and checksums, over decodeAwsChunked as svc
 * runs it: AWS's published examples, bodies whose chain the test computes itself, and the body
 * @aws-sdk/client-s3 really sends for a streaming upload.
 */
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { Readable } from "node:stream";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { SvcError } from "../lib/errors.ts";
import { decodeAwsChunked } from "./aws-chunked.ts";
import { crc32c, toBase64 } from "./checksums/checksums.ts";
import { BodyChecksum, chunkSignatureHooks, unsignedTrailerHooks } from "./chunk-signatures.ts";
import { BootstrapCredentials } from "../iam/credentials.ts";
import { parseSignedRequest } from "../auth/sigv4/sigv4-parse.ts";
import type { VerifiedRequest } from "../auth/sigv4/sigv4-request.ts";
import { verifySignedRequest } from "../auth/sigv4/sigv4.ts";
import { captureSdk } from "../testing/sigv4-test-signers.ts";

const enc = new TextEncoder();
const SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const EMPTY = createHash("sha256").digest("hex");

/** The request of AWS's chunked-upload examples, verified as svc verifies it. */
function docRequest(trailer: boolean, seed: string): VerifiedRequest {
  const signedHeaders = trailer
    ? "content-encoding;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class;x-amz-trailer"
    : "content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class";
  const headers = new Headers({
    host: "s3.amazonaws.com",
    "content-encoding": "aws-chunked",
    "x-amz-content-sha256": `STREAMING-AWS4-HMAC-SHA256-PAYLOAD${trailer ? "-TRAILER" : ""}`,
    "x-amz-date": "20130524T000000Z",
    "x-amz-decoded-content-length": "66560",
    "x-amz-storage-class": "REDUCED_REDUNDANCY",
    ...(trailer ? { "x-amz-trailer": "x-amz-checksum-crc32c" } : { "content-length": "66824" }),
    authorization: "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/" +
      `aws4_request,SignedHeaders=${signedHeaders},Signature=${seed}`,
  });
  const input = { method: "PUT", rawPath: "/examplebucket/chunkObject.txt", rawQuery: "", headers };
  const store = new BootstrapCredentials("AKIAIOSFODNN7EXAMPLE", SECRET);
  const verified = verifySignedRequest(
    parseSignedRequest(input)!,
    input,
    store,
    Date.UTC(2013, 4, 24),
    {
      clockSkewSeconds: 900,
    },
  );
  assert.equal(verified.signature, seed);
  return verified;
}

function frame(chunks: Uint8Array[], signatures: string[], trailer = ""): Uint8Array {
  const parts: Uint8Array[] = [];
  [...chunks, new Uint8Array(0)].forEach((chunk, i) => {
    parts.push(enc.encode(`${chunk.length.toString(16)};chunk-signature=${signatures[i]}\r\n`));
    if (chunk.length > 0) parts.push(chunk, enc.encode("\r\n"));
  });
  parts.push(enc.encode(`${trailer}\r\n`));
  return new Uint8Array(Buffer.concat(parts));
}

/** Runs a body through the decoder with the hooks; reports what was released and how it ended. */
async function decode(
  body: Uint8Array,
  hooks: ReturnType<typeof unsignedTrailerHooks>,
  signed = true,
  trailer = true,
) {
  const source = ReadableStream.from([body.subarray(0, 1000), body.subarray(1000)]);
  const decoded = decodeAwsChunked(source, { signed, trailer, ...hooks });
  let released = 0;
  try {
    for await (const piece of decoded.stream) released += piece.length;
    return { released, error: undefined };
  } catch (error) {
    return { released, error: error as SvcError };
  }
}

const A_65536 = new Uint8Array(65536).fill(0x61);
const A_1024 = new Uint8Array(1024).fill(0x61);

Deno.test("AWS's published chunked upload decodes, signature by signature", async () => {
  const verified = docRequest(
    false,
    "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
  );
  const signatures = [
    "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
    "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
    "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
  ];
  const body = frame([A_65536, A_1024], signatures);
  assert.equal(body.length, 66824); // the example's Content-Length
  const ok = await decode(body, chunkSignatureHooks(verified, null), true, false);
  assert.deepEqual(ok, { released: 66560, error: undefined });
  // Chunk 2 with one flipped byte: chunk 1 is released, nothing of chunk 2 is.
  const flipped = body.slice();
  flipped[body.indexOf(0x61, 65536 + 100) + 10] = 0x62;
  const bad = await decode(flipped, chunkSignatureHooks(verified, null), true, false);
  assert.equal(bad.error?.code, "SignatureDoesNotMatch");
  assert.equal(bad.released, 65536);
  // The final chunk's signature matters as well.
  const last = frame([A_65536, A_1024], [signatures[0], signatures[1], signatures[0]]);
  const end = await decode(last, chunkSignatureHooks(verified, null), true, false);
  assert.deepEqual([end.released, end.error?.code], [66560, "SignatureDoesNotMatch"]);
});

const TRAILER_SEED = "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e";
const TRAILER_SIGNATURES = [
  "b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2",
  "1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7",
  "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992",
];
const TRAILER_SIGNATURE = "d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435";

Deno.test("AWS's published chunked upload with a signed checksum trailer decodes", async () => {
  const verified = docRequest(true, TRAILER_SEED);
  const trailer =
    `x-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:${TRAILER_SIGNATURE}\r\n`;
  const body = frame([A_65536, A_1024], TRAILER_SIGNATURES, trailer);
  const hooks = () => chunkSignatureHooks(verified, "x-amz-checksum-crc32c");
  assert.deepEqual(await decode(body, hooks()), { released: 66560, error: undefined });
  const forged = enc.encode(new TextDecoder().decode(body).replace("sOO8/Q==", "AAAAAA=="));
  assert.equal((await decode(forged, hooks())).error?.code, "SignatureDoesNotMatch");
  const unsigned = enc.encode(new TextDecoder().decode(body).replace("d81f82fc", "d81f82fd"));
  assert.equal((await decode(unsigned, hooks())).error?.code, "SignatureDoesNotMatch");
});

/** A signer for the chain, written from AWS's description, to make bodies the docs lack. */
function signBody(v: VerifiedRequest, chunks: Uint8Array[], trailers: [string, string][] = []) {
  const sign = (text: string) => createHmac("sha256", v.signingKey).update(text).digest("hex");
  const hash = (data: Uint8Array | string) => createHash("sha256").update(data).digest("hex");
  let previous = v.signature;
  const signatures = [...chunks, new Uint8Array(0)].map((chunk) =>
    previous = sign(
      `AWS4-HMAC-SHA256-PAYLOAD\n${v.amzDate}\n${v.scope}\n${previous}\n${EMPTY}\n${hash(chunk)}`,
    )
  );
  const lines = trailers.map(([name, value]) => `${name}:${value}\n`).join("");
  const signature = sign(
    `AWS4-HMAC-SHA256-TRAILER\n${v.amzDate}\n${v.scope}\n${previous}\n${hash(lines)}`,
  );
  const trailer = lines.replaceAll("\n", "\r\n") + `x-amz-trailer-signature:${signature}\r\n`;
  return frame(chunks, signatures, trailer);
}

Deno.test("trailer checksums: right, wrong, missing, unannounced, unsupported", async () => {
  const v = docRequest(true, TRAILER_SEED);
  const data = [enc.encode("hello "), enc.encode("world")];
  const right = toBase64(bigEndian(crc32c(enc.encode("hello world"))));
  const hooks = (announced: string | null) => chunkSignatureHooks(v, announced);
  const crc = "x-amz-checksum-crc32c";
  assert.equal((await decode(signBody(v, data, [[crc, right]]), hooks(crc))).error, undefined);
  const wrong = await decode(signBody(v, data, [[crc, "AAAAAA=="]]), hooks(crc));
  assert.equal(wrong.error?.code, "BadDigest");
  assert.equal(
    wrong.error?.message,
    "The CRC32C you specified did not match the calculated checksum.",
  );
  assert.equal(
    (await decode(signBody(v, data, [[crc, "AAAA"]]), hooks(crc))).error?.code,
    "InvalidRequest",
  );
  assert.equal((await decode(signBody(v, data), hooks(crc))).error?.code, "IncompleteBody");
  assert.equal(
    (await decode(signBody(v, data, [[crc, right]]), hooks(null))).error?.code,
    "InvalidRequest",
  );
  assert.throws(() => hooks("x-amz-checksum-crc128"), { code: "InvalidRequest" });
  assert.throws(() => hooks("x-amz-meta-a"), { code: "InvalidRequest" });
  // A signer's own chain, no trailer at all, over many small chunks.
  const many = Array.from({ length: 20 }, (_, i) => enc.encode(`chunk ${i};`));
  assert.deepEqual(await decode(signBody(v, many), hooks(null)), {
    released: 170,
    error: undefined,
  });
});

Deno.test("a missing chunk signature is SignatureDoesNotMatch, even past the decoder", () => {
  const hooks = chunkSignatureHooks(
    docRequest(false, "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"),
    null,
  );
  assert.throws(() => hooks.onChunk(undefined, [A_1024]), { code: "SignatureDoesNotMatch" });
  assert.throws(() => hooks.onTrailers(new Map(), undefined), { code: "SignatureDoesNotMatch" });
  assert.throws(
    () =>
      chunkSignatureHooks({
        ...docRequest(false, "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"),
        payloadHash: "UNSIGNED-PAYLOAD",
      }, null),
    TypeError,
  );
});

function bigEndian(value: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, value);
  return out;
}

Deno.test("the SDK's unsigned streaming upload: its trailer checksum is verified", async () => {
  const payload = new Uint8Array(100_000).map((_, i) => i % 251);
  const [put] = await captureSdk([(client) =>
    client.send(
      new PutObjectCommand({
        Bucket: "b",
        Key: "k",
        Body: Readable.from([payload.subarray(0, 70_000), payload.subarray(70_000)]),
        ContentLength: payload.length,
      }),
    )]);
  assert.equal(put.headers.get("x-amz-content-sha256"), "STREAMING-UNSIGNED-PAYLOAD-TRAILER");
  const parts: Uint8Array[] = [];
  for await (const part of put.body as AsyncIterable<Uint8Array>) parts.push(part);
  const body = new Uint8Array(Buffer.concat(parts));
  const announced = put.headers.get("x-amz-trailer");
  const ok = await decode(body, unsignedTrailerHooks(announced), false, true);
  assert.deepEqual(ok, { released: 100_000, error: undefined });
  const corrupt = body.slice();
  corrupt[50_000] ^= 1;
  const bad = await decode(corrupt, unsignedTrailerHooks(announced), false, true);
  assert.equal(bad.error?.code, "BadDigest");
  assert.equal(
    bad.error?.message,
    "The CRC32 you specified did not match the calculated checksum.",
  );
});

Deno.test("a plain body's x-amz-checksum header is verified", async () => {
  const read = async (checksum: BodyChecksum, text: string) => {
    const stream = ReadableStream.from([enc.encode(text)]).pipeThrough(checksum.transform());
    let out = "";
    for await (const piece of stream) out += new TextDecoder().decode(piece);
    return out;
  };
  assert.equal(BodyChecksum.fromHeaders(new Headers({ "x-amz-checksum-mode": "ENABLED" })), null);
  // The value the SDK sends with PutObject({ Body: "hello" }).
  const sdk = BodyChecksum.fromHeaders(new Headers({ "x-amz-checksum-crc32": "NhCmhg==" }))!;
  assert.equal(await read(sdk, "hello"), "hello");
  const wrong = BodyChecksum.fromHeaders(new Headers({ "x-amz-checksum-crc32": "NhCmhg==" }))!;
  await assert.rejects(read(wrong, "hellO"), { code: "BadDigest" });
  const sha = createHash("sha256").update("hello").digest("base64");
  const byUpdate = BodyChecksum.fromHeaders(new Headers({ "x-amz-checksum-sha256": sha }))!;
  byUpdate.update(enc.encode("hel"));
  byUpdate.update(enc.encode("lo"));
  byUpdate.verify();
  assert.equal(byUpdate.algorithm, "sha256");
  const sha1 = createHash("sha1").update("x").digest("base64");
  assert.throws(() => {
    const c = BodyChecksum.fromHeaders(new Headers({ "x-amz-checksum-sha1": sha1 }))!;
    c.update(enc.encode("y"));
    c.verify();
  }, {
    code: "BadDigest",
    message: "The SHA1 you specified did not match the calculated checksum.",
  });
  const two = new Headers({ "x-amz-checksum-crc32": "NhCmhg==", "x-amz-checksum-sha1": sha1 });
  assert.throws(() => BodyChecksum.fromHeaders(two), { code: "InvalidRequest" });
  const unknown = new Headers({ "x-amz-checksum-crc128": "AAAAAAAAAAA=" });
  assert.throws(() => BodyChecksum.fromHeaders(unknown), { code: "InvalidRequest" });
  // CRC-64/NVME: the catalogue's check value of "123456789", and a wrong one.
  const nvme = BodyChecksum.fromHeaders(
    new Headers({ "x-amz-checksum-crc64nvme": "rosUhgp5mIg=" }),
  )!;
  nvme.update(enc.encode("123456789"));
  nvme.verify();
  assert.throws(() => {
    const c = BodyChecksum.fromHeaders(
      new Headers({ "x-amz-checksum-crc64nvme": "AAAAAAAAAAA=" }),
    )!;
    c.update(enc.encode("123456789"));
    c.verify();
  }, { code: "BadDigest" });
  const short = BodyChecksum.fromHeaders(new Headers({ "x-amz-checksum-crc32": "Nh==" }))!;
  assert.throws(() => short.verify(), { code: "InvalidRequest" });
});

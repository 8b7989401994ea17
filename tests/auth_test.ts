/**
 * Black-box tests of header-signed authentication (SPEC Authentication 1-6): the SDK and aws4fetch
 * accepted; anonymous, wrong, tampered, skewed and malformed requests refused; hand-built
 * aws-chunked bodies with their chunk-signature chain and trailer checksums; replays (refusal is in
 * auth_presign_test.ts) and the per-IP lockout with and without trusted proxy headers; and
 * `authentication: none`. Every refused upload is then checked with a valid client: not stored.
 */
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { Readable } from "node:stream";
import { crc32 } from "node:zlib";
import * as S3 from "@aws-sdk/client-s3";
import { AwsClient } from "aws4fetch";
import { assertError, assertSdkError, codeOf } from "./helpers/assertions.ts";
import { ACCESS_KEY, bytesOf, randomBytes, SECRET_KEY, startSvc } from "./helpers/svc.ts";

const Bucket = "auth-bucket";
const enc = new TextEncoder();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const sha256Hex = (data: Uint8Array | string) => createHash("sha256").update(data).digest("hex");
const hmac = (key: Uint8Array | string, data: string) =>
  new Uint8Array(createHmac("sha256", key).update(data).digest());
const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
const amzDate = (ms: number) => new Date(ms).toISOString().replace(/[:-]|\.\d{3}/g, "");
const bytes = (size: number) => new Uint8Array(randomBytes(size));
const crcBase64 = (data: Uint8Array) => {
  const c = crc32(data);
  return btoa(String.fromCharCode(c >>> 24, (c >>> 16) & 255, (c >>> 8) & 255, c & 255));
};
function concat(parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (out.set(p, at), at + p.length), 0);
  return out;
}

const keys = { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY };
const aws4 = new AwsClient({ ...keys, service: "s3", region: "us-east-1" });
type Signing = { secret?: string; accessKey?: string; at?: number };

/** A header-signed Request (aws4fetch), not yet sent; `at` is the signing time in ms. */
function sign(url: string, init: RequestInit = {}, s: Signing = {}): Promise<Request> {
  const datetime = s.at === undefined ? undefined : amzDate(s.at);
  const aws = { secretAccessKey: s.secret ?? SECRET_KEY, accessKeyId: s.accessKey ?? ACCESS_KEY };
  return aws4.sign(url, { ...init, aws: { ...aws, datetime } });
}

type Res = Promise<Response>;
const put = (body: BodyInit, headers: HeadersInit = {}) => ({ method: "PUT", body, headers });

/** A server with the test bucket, a valid SDK client and the helpers every test uses. */
async function serve(env: Record<string, string> = {}) {
  const svc = await startSvc({ env });
  const s3 = svc.client();
  await s3.send(new S3.CreateBucketCommand({ Bucket }));
  const url = (key: string) => `${svc.url}/${Bucket}/${key}`;
  const absent = async (...keys: string[]) => {
    for (const Key of keys) {
      await assertSdkError(s3.send(new S3.HeadObjectCommand({ Bucket, Key })), 404, "NotFound");
    }
  };
  /** PUTs `body` to `key` with exactly these headers. */
  const send = (key: string, headers: HeadersInit, body: BodyInit) =>
    fetch(url(key), put(body, headers));
  /** Asserts the S3 error, then that none of `keys` was stored. */
  const refused = async (res: Res, status: number, code: string, ...keys: string[]) => {
    await assertError(res, status, code);
    await absent(...keys);
  };
  const got = async (Key: string) =>
    await bytesOf((await s3.send(new S3.GetObjectCommand({ Bucket, Key }))).Body);
  const dispose = async () => (s3.destroy(), await svc.stop());
  return { svc, s3, url, absent, send, refused, got, [Symbol.asyncDispose]: dispose };
}

type ChunkMode = "signed" | "signed-trailer" | "unsigned-trailer";
type Tamper = { flip?: number; crc?: string; signedCrc?: string };
const MODES: Record<ChunkMode, string> = {
  "signed": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
  "signed-trailer": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
  "unsigned-trailer": "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
};

/**
 * A header-signed aws-chunked PUT built by hand in 16 KiB chunks: aws4fetch signs the headers (its
 * signature seeds the chain), node:crypto signs each chunk, the final chunk and the trailer.
 * `flip`: flip a byte of that chunk after signing it; `crc`: the trailer value sent; `signedCrc`:
 * the value the trailer signature covers. `finalAt` is where the final chunk starts in `body`.
 */
async function chunked(url: string, data: Uint8Array, mode: ChunkMode, o: Tamper = {}) {
  const trailer = mode !== "signed";
  const request = await sign(url, {
    method: "PUT",
    headers: {
      "content-encoding": "aws-chunked",
      "x-amz-decoded-content-length": `${data.length}`,
      "x-amz-content-sha256": MODES[mode],
      ...(trailer ? { "x-amz-trailer": "x-amz-checksum-crc32" } : {}),
    },
  });
  const date = request.headers.get("x-amz-date")!;
  const prefix = `${date}\n${date.slice(0, 8)}/us-east-1/s3/aws4_request\n`;
  let key = hmac(`AWS4${SECRET_KEY}`, date.slice(0, 8));
  for (const part of ["us-east-1", "s3", "aws4_request"]) key = hmac(key, part);
  let previous = /Signature=(\w+)/.exec(request.headers.get("authorization")!)![1];
  const chain = (kind: string, hash: string) =>
    previous = hex(hmac(key, `AWS4-HMAC-SHA256-${kind}\n${prefix}${previous}\n${hash}`));
  const parts: Uint8Array[] = [];
  let finalAt = 0;
  for (let i = 0; finalAt === 0; i++) {
    const piece = data.slice(i * 16384, (i + 1) * 16384);
    if (piece.length === 0) finalAt = concat(parts).length;
    const signature = mode === "unsigned-trailer"
      ? ""
      : `;chunk-signature=${chain("PAYLOAD", `${sha256Hex("")}\n${sha256Hex(piece)}`)}`;
    if (i === o.flip) piece[piece.length >> 1] ^= 0x01;
    parts.push(enc.encode(`${piece.length.toString(16)}${signature}\r\n`), piece);
    if (piece.length > 0) parts.push(enc.encode("\r\n"));
  }
  if (trailer) {
    const crc = o.crc ?? crcBase64(data);
    let lines = `x-amz-checksum-crc32:${crc}\r\n`;
    if (mode === "signed-trailer") {
      const signed = chain("TRAILER", sha256Hex(`x-amz-checksum-crc32:${o.signedCrc ?? crc}\n`));
      lines += `x-amz-trailer-signature:${signed}\r\n`;
    }
    parts.push(enc.encode(lines));
  }
  parts.push(enc.encode("\r\n"));
  return { headers: request.headers, body: concat(parts), finalAt };
}

Deno.test("auth: header signatures against one server", async (t) => {
  await using ctx = await serve();
  const { svc, s3, url, send, refused, absent, got } = ctx;
  await t.step("SDK put/get/list with default checksums, plain and aws-chunked", async () => {
    const small = bytes(1000);
    await s3.send(new S3.PutObjectCommand({ Bucket, Key: "sdk/plain", Body: small }));
    assert.deepEqual(await got("sdk/plain"), small);
    const big = bytes(300_000);
    const Body = Readable.from([big.subarray(0, 100_000), big.subarray(100_000)]);
    const streamed = { Bucket, Key: "sdk/streamed", Body, ContentLength: big.length };
    await s3.send(new S3.PutObjectCommand(streamed));
    assert.deepEqual(await got("sdk/streamed"), big);
    const listed = await s3.send(new S3.ListObjectsV2Command({ Bucket, Prefix: "sdk/" }));
    assert.deepEqual(listed.Contents?.map((c) => c.Key), ["sdk/plain", "sdk/streamed"]);
  });
  await t.step("SDK multipart upload with streamed parts", async () => {
    const parts = [bytes(5 * 1024 * 1024), bytes(1234)];
    const Key = "sdk/multipart";
    const { UploadId } = await s3.send(new S3.CreateMultipartUploadCommand({ Bucket, Key }));
    const Parts = [];
    for (const [i, data] of parts.entries()) {
      const Body = Readable.from([data]);
      const part = { Bucket, Key, UploadId, PartNumber: i + 1, Body, ContentLength: data.length };
      const uploaded = await s3.send(new S3.UploadPartCommand(part));
      Parts.push({ PartNumber: i + 1, ETag: uploaded.ETag });
    }
    const done = { Bucket, Key, UploadId, MultipartUpload: { Parts } };
    await s3.send(new S3.CompleteMultipartUploadCommand(done));
    assert.deepEqual(await got(Key), concat(parts));
  });
  await t.step("aws4fetch header-signed PUT and GET, unsigned and hex payload", async () => {
    const body = bytes(50_000);
    const hexed = put(body, { "x-amz-content-sha256": sha256Hex(body) });
    for (const [key, init] of [["a4f/unsigned", put(body)], ["a4f/hex", hexed]] as const) {
      const res = await fetch(await sign(url(key), init));
      assert.equal(res.status, 200, await res.text());
      const back = await fetch(await sign(url(key)));
      assert.equal(back.status, 200);
      assert.deepEqual(new Uint8Array(await back.arrayBuffer()), body);
    }
  });
  await t.step("anonymous: 403 AccessDenied, except HEAD / and /_/health", async () => {
    await assertError(fetch(url("a4f/hex")), 403, "AccessDenied");
    await assertError(fetch(`${svc.url}/${Bucket}?list-type=2`), 403, "AccessDenied");
    await assertError(fetch(`${svc.url}/`), 403, "AccessDenied");
    await refused(fetch(url("anon"), put("x")), 403, "AccessDenied", "anon");
    assert.equal((await fetch(url("a4f/hex"), { method: "HEAD" })).status, 403);
    assert.equal((await fetch(`${svc.url}/`, { method: "HEAD" })).status, 200);
    const health = await fetch(`${svc.url}/_/health`);
    assert.equal(health.status, 200, await health.text());
  });
  await t.step("wrong secret: 403 SignatureDoesNotMatch with the string to sign", async () => {
    const res = await fetch(await sign(url("wrong"), put("x"), { secret: "wrong-secret" }));
    const text = (await res.text()).replaceAll("&#xA;", "\n");
    assert.equal(res.status, 403, text);
    assert.equal(codeOf(text), "SignatureDoesNotMatch");
    assert.match(text, /<StringToSign>AWS4-HMAC-SHA256\n\d{8}T\d{6}Z\n/);
    assert.match(text, /<CanonicalRequest>PUT\n\/auth-bucket\/wrong\n/);
    const unknown = await sign(url("wrong"), put("x"), { accessKey: "AKIAUNKNOWN000000000" });
    await refused(fetch(unknown), 403, "InvalidAccessKeyId", "wrong");
  });
  await t.step("tampered path, query and signed header: 403", async () => {
    const { headers } = await sign(url("signed"), put("x", { "x-amz-meta-note": "original" }));
    await refused(send("other", headers, "x"), 403, "SignatureDoesNotMatch", "other", "signed");
    const q = await sign(`${url("signed")}?x-id=PutObject`, put("x"));
    for (const query of ["?x-id=Other", "?x-id=PutObject&extra=1", ""]) {
      const res = fetch(`${url("signed")}${query}`, put("x", q.headers));
      await refused(res, 403, "SignatureDoesNotMatch", "signed");
    }
    const edited = new Headers(headers);
    edited.set("x-amz-meta-note", "edited");
    await refused(send("signed", edited, "x"), 403, "SignatureDoesNotMatch", "signed");
    const added = new Headers(headers);
    added.set("x-amz-meta-added", "1");
    await refused(send("signed", added, "x"), 403, "AccessDenied", "signed");
  });
  await t.step("tampered body under a hex sha256: 400 XAmzContentSHA256Mismatch", async () => {
    const body = bytes(10_000);
    const sha = { "x-amz-content-sha256": sha256Hex(body) };
    const { headers } = await sign(url("body"), put(body, sha));
    body[5000] ^= 1;
    await refused(send("body", headers, body), 400, "XAmzContentSHA256Mismatch", "body");
  });
  await t.step("hand-built aws-chunked bodies: all three modes accepted", async () => {
    const data = bytes(70_000);
    for (const mode of Object.keys(MODES) as ChunkMode[]) {
      const { headers, body } = await chunked(url(`chunked/${mode}`), data, mode);
      const res = await send(`chunked/${mode}`, headers, body);
      assert.equal(res.status, 200, `${mode}: ${await res.text()}`);
      assert.deepEqual(await got(`chunked/${mode}`), data);
    }
  });
  await t.step("a flipped byte in a signed chunk: 403 SignatureDoesNotMatch", async () => {
    for (const mode of ["signed", "signed-trailer"] as const) {
      const { headers, body } = await chunked(url(mode), bytes(70_000), mode, { flip: 1 });
      await refused(send(mode, headers, body), 403, "SignatureDoesNotMatch", mode);
    }
  });
  await t.step("truncated aws-chunked bodies: 4xx", async () => {
    for (const mode of Object.keys(MODES) as ChunkMode[]) {
      const { headers, body, finalAt } = await chunked(url(mode), bytes(70_000), mode);
      for (const end of [finalAt, 20_000]) {
        const res = await send(mode, headers, body.slice(0, end));
        const text = await res.text();
        assert.ok(res.status >= 400 && res.status < 500, `${mode}/${end}: ${res.status} ${text}`);
        assert.ok(codeOf(text), text);
        await absent(mode);
      }
    }
  });
  await t.step("wrong trailer checksum: 400 BadDigest; edited signed trailer: 403", async () => {
    const wrong = crcBase64(enc.encode("something else"));
    for (const mode of ["unsigned-trailer", "signed-trailer"] as const) {
      const { headers, body } = await chunked(url(mode), bytes(40_000), mode, { crc: wrong });
      await refused(send(mode, headers, body), 400, "BadDigest", mode);
    }
    const data = bytes(40_000);
    const edited = { crc: crcBase64(data), signedCrc: wrong };
    const { headers, body } = await chunked(url("edited"), data, "signed-trailer", edited);
    await refused(send("edited", headers, body), 403, "SignatureDoesNotMatch", "edited");
  });
  await t.step("clock skew of 20 minutes either way: 403 RequestTimeTooSkewed", async () => {
    for (const offset of [-20 * 60_000, 20 * 60_000]) {
      const at = Date.now() + offset;
      const res = fetch(await sign(url("skewed"), put("x"), { at }));
      await refused(res, 403, "RequestTimeTooSkewed", "skewed");
      await assertError(fetch(await sign(url("a4f/hex"), {}, { at })), 403, "RequestTimeTooSkewed");
    }
  });
  await t.step("malformed Authorization headers: 400 AuthorizationHeaderMalformed", async () => {
    const now = amzDate(Date.now());
    const scope = (day = now.slice(0, 8), service = "s3", end = "aws4_request") =>
      `${ACCESS_KEY}/${day}/us-east-1/${service}/${end}`;
    const v4 = (parts: string) => `AWS4-HMAC-SHA256 ${parts}`;
    const full = (cred: string, signed = "host") =>
      v4(`Credential=${cred}, SignedHeaders=${signed}, Signature=${"0".repeat(64)}`);
    const malformed = [
      v4(`Credential=${scope()}`),
      v4(`Credential=${scope()}, SignedHeaders=host;x-amz-date`),
      v4(`Credential=${scope()}, SignedHeaders=host, Signature=`),
      `${full(scope())}, Extra=1`,
      full(scope()).replaceAll(",", ";"),
      v4("garbage"),
      full(ACCESS_KEY),
      full(scope(undefined, "ec2")),
      full(scope(undefined, "s3", "aws5_request")),
      full(scope("2024-1-1")),
      full(scope("20000101")),
      full(scope(), "x-amz-date"),
      full(scope(), "Host;X-Amz-Date"),
    ];
    for (const authorization of malformed) {
      const headers = { authorization, "x-amz-date": now, "x-amz-content-sha256": sha256Hex("x") };
      await refused(send("bad", headers, "x"), 400, "AuthorizationHeaderMalformed", "bad");
    }
  });
  await t.step("AWS SigV2 Authorization: 400 InvalidRequest", async () => {
    const authorization = `AWS ${ACCESS_KEY}:${btoa("not-a-signature-0000")}`;
    const headers = { authorization, date: new Date().toUTCString() };
    await refused(send("v2", headers, "x"), 400, "InvalidRequest", "v2");
    await assertError(fetch(url("a4f/hex"), { headers }), 400, "InvalidRequest");
  });
  await t.step(
    "an identical signed PUT twice is answered 200 twice (replay detection on)",
    async () => {
      const signed = await sign(url("replay-on"), put("same bytes"));
      const again = signed.clone();
      const first = await fetch(signed);
      assert.equal(first.status, 200);
      const second = await fetch(again);
      assert.equal(second.status, 200);
      assert.equal(second.headers.get("etag"), first.headers.get("etag"));
    },
  );
});

Deno.test("auth: lockout with trusted proxy headers; replays do not count", async (t) => {
  await using ctx = await serve({ SVC_REPLAY_WINDOW_SECS: "2", SVC_TRUST_PROXY_HEADERS: "true" });
  const { s3, url, absent, got } = ctx;
  await s3.send(new S3.PutObjectCommand({ Bucket, Key: "existing", Body: "here" }));
  // The test plays the trusted proxy: it appends the address it saw (the rightmost entry); what
  // is left of it is whatever the client sent. Proxy headers are signed here; the signature does
  // not change whose address it is.
  const xff = (ip: string) => ({ "x-forwarded-for": `203.0.113.66, ${ip}` });
  const forged = (key: string, headers: HeadersInit) =>
    sign(url(key), put("x", headers), { secret: "wrong" });
  await t.step(
    "100 failures from one forwarded IP lock out its forgeries, not its valid requests",
    async () => {
      for (let i = 0; i < 100; i++) {
        await assertError(
          fetch(await forged(`locked-${i}`, xff("10.1.1.1"))),
          403,
          "SignatureDoesNotMatch",
        );
      }
      await assertError(fetch(await forged("late", xff("10.1.1.1"))), 503, "SlowDown");
      await assertError(fetch(await forged("late", { "x-real-ip": "10.1.1.1" })), 503, "SlowDown");
      await assertError(fetch(url("existing"), { headers: xff("10.1.1.1") }), 503, "SlowDown");
      // A valid signature proves the secret the lockout guards: served from the locked address.
      const valid = await fetch(await sign(url("existing"), { headers: xff("10.1.1.1") }));
      assert.equal(valid.status, 200, await valid.text());
      const write = await fetch(await sign(url("valid-write"), put("ok", xff("10.1.1.1"))));
      assert.equal(write.status, 200, await write.text());
      assert.deepEqual(await got("valid-write"), enc.encode("ok"));
      await assertError(
        fetch(await forged("other", xff("10.2.2.2"))),
        403,
        "SignatureDoesNotMatch",
      );
      await absent("locked-0", "locked-99", "late", "other");
    },
  );
  await t.step("150 refused replays from one IP do not count toward lockout", async () => {
    // A copy: a repeat would create something new, so it is refused.
    assert.equal((await fetch(await sign(url("storm-source"), put("x")))).status, 200);
    const source = new URL(url("storm-source")).pathname;
    const signed = await sign(url("storm"), {
      method: "PUT",
      headers: { ...xff("10.3.3.3"), "x-amz-copy-source": source },
    });
    const copies = Array.from({ length: 151 }, () => signed.clone());
    assert.equal((await fetch(copies[0])).status, 200);
    const results: string[] = [];
    for (let i = 1; i < copies.length; i += 30) {
      const batch = await Promise.all(copies.slice(i, i + 30).map((c) => fetch(c)));
      for (const res of batch) results.push(`${res.status} ${codeOf(await res.text())}`);
    }
    // The 2 s window could lapse on a slow machine: then a copy is simply served again.
    const replays = results.filter((r) => r === "400 InvalidRequest").length;
    assert.ok(replays > 100, `replay rejections: ${replays} of ${results.length}`);
    const others = results.filter((r) => !["400 InvalidRequest", "200 undefined"].includes(r));
    assert.deepEqual(others, []);
    await assertError(fetch(await forged("probe", xff("10.3.3.3"))), 403, "SignatureDoesNotMatch");
  });
});

Deno.test("auth: a forged X-Forwarded-For neither locks out a victim nor dodges a lockout", async () => {
  const env = { SVC_TRUST_PROXY_HEADERS: "true", SVC_RATE_LIMIT_MAX_ATTEMPTS: "5" };
  await using ctx = await serve(env);
  const { url, absent } = ctx;
  const attempt = async (forwardedFor: string) =>
    await fetch(
      await sign(url("forged"), put("x", { "x-forwarded-for": forwardedFor }), { secret: "no" }),
    );
  // The attacker (10.4.4.4, as the proxy saw it) names the victim 10.5.5.5 in the header.
  for (let i = 0; i < 5; i++) {
    await assertError(attempt("10.5.5.5, 10.4.4.4"), 403, "SignatureDoesNotMatch");
  }
  await assertError(attempt("10.5.5.5"), 403, "SignatureDoesNotMatch");
  for (let i = 0; i < 5; i++) {
    await assertError(attempt(`198.51.100.${i}, 10.4.4.4`), 503, "SlowDown");
  }
  await absent("forged");
});

Deno.test("auth: lockout expiry, and X-Forwarded-For ignored without trust", async (t) => {
  const env = { SVC_RATE_LIMIT_MAX_ATTEMPTS: "3", SVC_RATE_LIMIT_LOCKOUT_SECS: "1" };
  await using ctx = await serve(env);
  const { svc, url, absent } = ctx;
  const list = () => sign(`${svc.url}/${Bucket}?list-type=2`);
  const bad = async (key: string, headers = {}) => {
    const request = await sign(url(key), put("x", headers), { secret: "wrong" });
    await assertError(fetch(request), 403, "SignatureDoesNotMatch");
  };
  const lockedOut = async (headers = {}) => {
    const request = await sign(url("probe"), put("x", headers), { secret: "wrong" });
    await assertError(fetch(request), 503, "SlowDown");
  };
  await t.step(
    "3 failures lock the address but not its valid requests; 1.5 s later it is free",
    async () => {
      for (let i = 0; i < 3; i++) await bad(`bad-${i}`);
      await lockedOut();
      await assertError(fetch(`${svc.url}/${Bucket}?list-type=2`), 503, "SlowDown");
      const valid = await fetch(await list());
      assert.equal(valid.status, 200, await valid.text());
      await sleep(1500);
      await bad("after");
      await absent("bad-0", "bad-1", "bad-2", "after", "probe");
    },
  );
  await t.step("different X-Forwarded-For values share the loopback bucket", async () => {
    for (let i = 0; i < 2; i++) await bad(`xff-${i}`, { "x-forwarded-for": `10.9.9.${i}` });
    await lockedOut({ "x-forwarded-for": "10.9.9.9" });
    await lockedOut();
    await sleep(1500);
    await absent("xff-0", "xff-1", "probe");
  });
});

Deno.test("auth: authentication none admits anonymous and garbage-signed requests", async () => {
  await using ctx = await serve({ SVC_AUTHENTICATION: "none" });
  const { svc, url, got } = ctx;
  assert.equal((await fetch(`${svc.url}/open-bucket`, { method: "PUT" })).status, 200);
  assert.equal((await fetch(url("anon"), put("anonymous"))).status, 200);
  const garbage = { authorization: "AWS4-HMAC-SHA256 Credential=nobody, Signature=garbage" };
  assert.equal((await fetch(url("garbage"), put("garbage", garbage))).status, 200);
  const v2 = { authorization: "AWS nobody:c2lnbmF0dXJl" };
  for (const [key, headers] of [["anon", {}], ["garbage", garbage], ["anon", v2]] as const) {
    const res = await fetch(url(key), { headers });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), key === "anon" ? "anonymous" : "garbage");
  }
  const wrong = await fetch(await sign(url("wrong"), put("signed wrong"), { secret: "wrong" }));
  assert.equal(wrong.status, 200, await wrong.text());
  assert.deepEqual(await got("wrong"), enc.encode("signed wrong"));
  const list = await fetch(`${svc.url}/${Bucket}?list-type=2`);
  assert.equal(list.status, 200);
  assert.match(await list.text(), /<Key>wrong<\/Key>/);
});

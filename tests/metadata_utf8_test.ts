/**
 * Black-box tests of non-ASCII user metadata: `x-amz-meta-*` values sent as raw UTF-8 bytes and
 * signed as the text they encode (what boto3 does once its ASCII check is lifted) verify, are
 * stored, and come back as the same bytes. A raw signed request over a TCP socket (fetch cannot
 * send such bytes), and boto3 itself when installed.
 */
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { assertError, codeOf } from "./helpers/assertions.ts";
import { ACCESS_KEY, SECRET_KEY, signedFetch, startSvc } from "./helpers/svc.ts";

const enc = new TextEncoder();
const VALUE = "café € 日本";
const sha256Hex = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex");
const hmac = (key: string | Uint8Array, data: string) =>
  new Uint8Array(createHmac("sha256", key).update(data).digest());

/** The bytes of a response header value (Deno hands each byte over as one character). */
const headerBytes = (value: string | null) => Uint8Array.from(value ?? "", (c) => c.charCodeAt(0));

/**
 * A header-signed PUT built byte by byte: the signature covers `signedValue` as UTF-8 text,
 * the wire carries `sentValue`'s UTF-8 bytes.
 */
function rawPut(port: number, path: string, signedValue: string, sentValue = signedValue) {
  const body = "metadata body";
  const date = new Date().toISOString().replace(/[:-]|\.\d{3}/g, "");
  const host = `127.0.0.1:${port}`;
  const payload = sha256Hex(body);
  const signed = "host;x-amz-content-sha256;x-amz-date;x-amz-meta-name";
  const canonical = [
    "PUT",
    path,
    "",
    `host:${host}`,
    `x-amz-content-sha256:${payload}`,
    `x-amz-date:${date}`,
    `x-amz-meta-name:${signedValue}`,
    "",
    signed,
    payload,
  ].join("\n");
  const scope = `${date.slice(0, 8)}/us-east-1/s3/aws4_request`;
  const toSign = `AWS4-HMAC-SHA256\n${date}\n${scope}\n${sha256Hex(canonical)}`;
  let key = hmac(`AWS4${SECRET_KEY}`, date.slice(0, 8));
  for (const part of ["us-east-1", "s3", "aws4_request"]) key = hmac(key, part);
  const signature = Array.from(hmac(key, toSign), (b) => b.toString(16).padStart(2, "0")).join("");
  const head = `PUT ${path} HTTP/1.1\r\nHost: ${host}\r\n` +
    `Authorization: AWS4-HMAC-SHA256 Credential=${ACCESS_KEY}/${scope}, ` +
    `SignedHeaders=${signed}, Signature=${signature}\r\n` +
    `x-amz-content-sha256: ${payload}\r\nx-amz-date: ${date}\r\n` +
    `x-amz-meta-name: ${sentValue}\r\n` + // UTF-8 bytes on the wire
    `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
  return sendRaw(port, enc.encode(head));
}

async function sendRaw(
  port: number,
  request: Uint8Array,
): Promise<{ status: number; text: string }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(request);
    const chunks: Uint8Array[] = [];
    const buffer = new Uint8Array(16384);
    for (;;) {
      const n = await conn.read(buffer);
      if (n === null) break;
      chunks.push(buffer.slice(0, n));
    }
    const text = new TextDecoder().decode(new Uint8Array(chunks.flatMap((c) => [...c])));
    return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]), text };
  } finally {
    conn.close();
  }
}

Deno.test("metadata: raw UTF-8 x-amz-meta-* values verify, are stored and return as sent", async () => {
  await using svc = await startSvc();
  const created = await signedFetch(`${svc.url}/utf8-meta`, { method: "PUT" });
  assert.equal(created.status, 200);
  const put = await rawPut(svc.port, "/utf8-meta/raw", VALUE);
  assert.equal(put.status, 200, put.text);
  const head = await signedFetch(`${svc.url}/utf8-meta/raw`, { method: "HEAD" });
  assert.equal(head.status, 200);
  assert.deepEqual(headerBytes(head.headers.get("x-amz-meta-name")), enc.encode(VALUE));
  // The signature still covers those bytes: other bytes under the same signature fail.
  const tampered = await rawPut(svc.port, "/utf8-meta/tampered", VALUE, "cafe € 日本");
  assert.equal(tampered.status, 403, tampered.text);
  assert.equal(codeOf(tampered.text), "SignatureDoesNotMatch");
  await assertError(signedFetch(`${svc.url}/utf8-meta/tampered`), 404, "NoSuchKey");
  // S3's 2 KB limit counts bytes: 1,020 two-byte characters (2,040 bytes with the name) fit.
  const long = await rawPut(svc.port, "/utf8-meta/long", "é".repeat(1020));
  assert.equal(long.status, 200, long.text);
  const tooLong = await rawPut(svc.port, "/utf8-meta/too-long", "é".repeat(1030));
  assert.equal(codeOf(tooLong.text), "MetadataTooLarge", tooLong.text);
});

async function hasBoto3(): Promise<boolean> {
  try {
    const probe = new Deno.Command("python3", { args: ["-c", "import boto3"], stderr: "null" });
    return (await probe.output()).success;
  } catch {
    return false;
  }
}

const BOTO3_SCRIPT = `
import sys, boto3
from botocore import handlers
from botocore.config import Config
url, key, secret, value = sys.argv[1:5]
s3 = boto3.client("s3", endpoint_url=url, aws_access_key_id=key, aws_secret_access_key=secret,
    region_name="us-east-1", config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
# boto3 refuses non-ASCII metadata client-side by default; without that check it sends UTF-8.
s3.meta.events.unregister("before-parameter-build.s3.PutObject", handlers.validate_ascii_metadata)
s3.create_bucket(Bucket="boto-meta")
s3.put_object(Bucket="boto-meta", Key="k", Body=b"x", Metadata={"name": value})
got = s3.head_object(Bucket="boto-meta", Key="k")["Metadata"]["name"]
# http.client reads header bytes as Latin-1: undo that to get the bytes svc sent back.
print(got.encode("latin-1").decode("utf-8"))
`;

Deno.test({
  name: "metadata: boto3 stores and reads back non-ASCII metadata",
  ignore: !await hasBoto3(),
  fn: async () => {
    await using svc = await startSvc();
    const out = await new Deno.Command("python3", {
      args: ["-c", BOTO3_SCRIPT, svc.url, ACCESS_KEY, SECRET_KEY, VALUE],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.ok(out.success, stderr);
    assert.equal(new TextDecoder().decode(out.stdout).trim(), VALUE);
  },
});

/**
 * Black-box tests of non-ASCII user metadata: `x-amz-meta-*` values sent as raw UTF-8 bytes and
 * signed as the text they encode (what boto3 does once its ASCII check is lifted) verify, are
 * stored, and come back as the same bytes when beyond Latin-1; Latin-1 text (sent as UTF-8 or as
 * single bytes) comes back as single bytes, which boto3 decodes to the text it set. A raw signed request over a TCP socket (fetch cannot
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
 * the wire carries `sentValue`'s UTF-8 bytes (or `sentValue` itself, when bytes).
 */
function rawPut(
  port: number,
  path: string,
  signedValue: string,
  sentValue: string | Uint8Array = signedValue,
) {
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
    `x-amz-meta-name: `;
  const tail = `\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
  const value = typeof sentValue === "string" ? enc.encode(sentValue) : sentValue;
  return sendRaw(port, new Uint8Array([...enc.encode(head), ...value, ...enc.encode(tail)]));
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

Deno.test("metadata: Latin-1 text is read from single bytes and returned as single bytes", async () => {
  await using svc = await startSvc();
  assert.equal((await signedFetch(`${svc.url}/latin-meta`, { method: "PUT" })).status, 200);
  // Node's http (the JavaScript SDK) sends "Hello World\xe9" as the byte 0xE9 and signs its UTF-8.
  const latin1 = Uint8Array.from("Hello World\xe9", (c) => c.charCodeAt(0));
  const put = await rawPut(svc.port, "/latin-meta/single-byte", "Hello World\xe9", latin1);
  assert.equal(put.status, 200, put.text);
  // boto3 on urllib3 2 sends the same text as UTF-8: both read back as the text's single bytes,
  // which every client that decodes header bytes (as Latin-1) turns back into the text.
  const utf8Put = await rawPut(svc.port, "/latin-meta/utf8", "Hello World\xe9");
  assert.equal(utf8Put.status, 200, utf8Put.text);
  for (const key of ["single-byte", "utf8"]) {
    for (const method of ["HEAD", "GET"]) {
      const res = await signedFetch(`${svc.url}/latin-meta/${key}`, { method });
      await res.body?.cancel();
      assert.equal(res.status, 200);
      assert.deepEqual(headerBytes(res.headers.get("x-amz-meta-name")), latin1, `${method} ${key}`);
    }
  }
  // The signature covers the text: a different byte under the same signature fails.
  const tampered = await rawPut(svc.port, "/latin-meta/t", "Hello World\xe9", Uint8Array.of(0xe8));
  assert.equal(codeOf(tampered.text), "SignatureDoesNotMatch", tampered.text);
});

async function hasBoto3(): Promise<boolean> {
  try {
    const probe = new Deno.Command("python3", { args: ["-c", "import boto3"], stderr: "null" });
    return (await probe.output()).success;
  } catch {
    return false;
  }
}

// ceph/s3-tests test_object_set_get_unicode_metadata: the header set in a before-call hook.
const BOTO3_LATIN1_SCRIPT = `
import sys, boto3
from botocore.config import Config
url, key, secret = sys.argv[1:4]
s3 = boto3.client("s3", endpoint_url=url, aws_access_key_id=key, aws_secret_access_key=secret,
    region_name="us-east-1", config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
def set_unicode_metadata(**kwargs):
    kwargs["params"]["headers"]["x-amz-meta-meta1"] = "Hello World\\xe9"
s3.meta.events.register("before-call.s3.PutObject", set_unicode_metadata)
s3.create_bucket(Bucket="boto-latin")
s3.put_object(Bucket="boto-latin", Key="foo", Body="bar")
got = s3.get_object(Bucket="boto-latin", Key="foo")["Metadata"]["meta1"]
assert got == "Hello World\\xe9", ascii(got)
got = s3.head_object(Bucket="boto-latin", Key="foo")["Metadata"]["meta1"]
assert got == "Hello World\\xe9", ascii(got)
print("ok")
`;

Deno.test({
  name: "metadata: boto3 reads back Latin-1 metadata as set (ceph/s3-tests unicode metadata)",
  ignore: !await hasBoto3(),
  fn: async () => {
    await using svc = await startSvc();
    const out = await new Deno.Command("python3", {
      args: ["-c", BOTO3_LATIN1_SCRIPT, svc.url, ACCESS_KEY, SECRET_KEY],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    assert.equal(new TextDecoder().decode(out.stdout).trim(), "ok");
  },
});

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

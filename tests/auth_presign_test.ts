/**
 * Black-box tests of presigned URLs (SPEC Authentication 1, 2): URLs presigned by aws4fetch and by
 * @smithy/signature-v4 (as @aws-sdk/s3-request-presigner does it) used with plain fetch, as curl
 * or a browser would; keys that exercise path encoding; and the refusals: expired, not yet valid,
 * out-of-range X-Amz-Expires, tampered URLs, wrong secret or unknown key; and replay detection
 * (SPEC Authentication 3), which refuses a repeated header-signed PUT but exempts presigned URLs.
 * Every refused upload is followed by a check with a valid client that nothing was stored.
 */
import assert from "node:assert/strict";
import { createHash, createHmac, type Hash, type Hmac } from "node:crypto";
import {
  CreateBucketCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  type S3Client,
} from "@aws-sdk/client-s3";
import { buildQueryString, HttpRequest } from "@smithy/core/protocols";
import { SignatureV4 } from "@smithy/signature-v4";
import { AwsClient } from "aws4fetch";
import { assertError, assertSdkError, codeOf } from "./helpers/assertions.ts";
import { ACCESS_KEY, bytesOf, randomBytes, SECRET_KEY, startSvc } from "./helpers/svc.ts";

const BUCKET = "presign-bucket";
const KEYS = { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `YYYYMMDDTHHMMSSZ` of a time in milliseconds. */
const amzDate = (ms: number) => new Date(ms).toISOString().replace(/[:-]|\.\d{3}/g, "");

/** A key as the SDKs put it into the path: RFC 3986 per segment, `/` kept. */
function encodeKey(key: string): string {
  const segment = (s: string) =>
    encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16)}`);
  return key.split("/").map(segment).join("/");
}

/** node:crypto behind smithy's hash interface. */
class Sha256 {
  readonly #hash: Hash | Hmac;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    if (secret === undefined) {
      this.#hash = createHash("sha256");
    } else if (typeof secret === "string") {
      this.#hash = createHmac("sha256", secret);
    } else {
      const view = ArrayBuffer.isView(secret)
        ? new Uint8Array(secret.buffer, secret.byteOffset, secret.byteLength)
        : new Uint8Array(secret);
      this.#hash = createHmac("sha256", view);
    }
  }
  update(data: Uint8Array) {
    this.#hash.update(data);
  }
  digest() {
    return Promise.resolve(new Uint8Array(this.#hash.digest()));
  }
  reset() {}
}

interface PresignOptions {
  expires?: number;
  /** Signing time in ms (default now). */
  at?: number;
  secret?: string;
  accessKey?: string;
}

/** Presigns with aws4fetch (`signQuery`), returning the URL string. */
async function aws4Presign(
  base: string,
  method: string,
  key: string,
  options: PresignOptions = {},
): Promise<string> {
  const client = new AwsClient({
    accessKeyId: options.accessKey ?? ACCESS_KEY,
    secretAccessKey: options.secret ?? SECRET_KEY,
    service: "s3",
    region: "us-east-1",
    retries: 0,
  });
  const url = new URL(`${base}/${BUCKET}/${encodeKey(key)}`);
  if (options.expires !== undefined) url.searchParams.set("X-Amz-Expires", `${options.expires}`);
  const datetime = options.at === undefined ? undefined : amzDate(options.at);
  const signed = await client.sign(url.href, { method, aws: { signQuery: true, datetime } });
  return signed.url;
}

/** Presigns with @smithy/signature-v4 the way the SDK's presigner does. */
async function smithyPresign(
  base: string,
  method: string,
  key: string,
  options: PresignOptions = {},
): Promise<string> {
  const signer = new SignatureV4({
    credentials: {
      accessKeyId: options.accessKey ?? ACCESS_KEY,
      secretAccessKey: options.secret ?? SECRET_KEY,
    },
    region: "us-east-1",
    service: "s3",
    sha256: Sha256,
    uriEscapePath: false,
  });
  const url = new URL(base);
  const request = new HttpRequest({
    method,
    protocol: url.protocol,
    hostname: url.hostname,
    port: Number(url.port),
    path: `/${BUCKET}/${encodeKey(key)}`,
    query: {},
    headers: { host: url.host, "x-amz-content-sha256": "UNSIGNED-PAYLOAD" },
  });
  const presigned = await signer.presign(request, {
    expiresIn: options.expires ?? 900,
    signingDate: new Date(options.at ?? Date.now()),
  });
  return `${base}${presigned.path}?${buildQueryString(presigned.query ?? {})}`;
}

const SIGNERS = { aws4fetch: aws4Presign, smithy: smithyPresign };

async function assertAbsent(s3: S3Client, key: string) {
  await assertSdkError(
    s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key })),
    404,
    "NotFound",
  );
}

async function getBytes(s3: S3Client, key: string): Promise<Uint8Array> {
  const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  return await bytesOf(got.Body);
}

Deno.test("presigned URLs: signers, keys, refusals and replays against one server", async (t) => {
  // Replay detection on (the harness turns it off by default): presigned URLs are exempt.
  await using svc = await startSvc({ env: { SVC_REPLAY_WINDOW_SECS: "2" } });
  const s3 = svc.client();
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));

  for (const [name, presign] of Object.entries(SIGNERS)) {
    await t.step(`${name}: presigned PUT then GET with plain fetch, bytes intact`, async () => {
      const key = `${name}/object.bin`;
      const body = new Uint8Array(randomBytes(200_000));
      const put = await fetch(await presign(svc.url, "PUT", key), { method: "PUT", body });
      assert.equal(put.status, 200, await put.text());
      const got = await fetch(await presign(svc.url, "GET", key));
      assert.equal(got.status, 200);
      assert.deepEqual(new Uint8Array(await got.arrayBuffer()), body);
      assert.deepEqual(await getBytes(s3, key), body);
      const head = await fetch(await presign(svc.url, "HEAD", key), { method: "HEAD" });
      assert.equal(head.status, 200);
      assert.equal(head.headers.get("content-length"), "200000");
    });

    await t.step(`${name}: keys with spaces, unicode, + and ~`, async () => {
      const keys = [
        `${name}/with space.txt`,
        `${name}/unicode/é漢字🙂.bin`,
        `${name}/plus+sign.txt`,
        `${name}/tilde~name.txt`,
        `${name}/all of it/a b+c~d é+🙂.txt`,
      ];
      for (const key of keys) {
        const body = new TextEncoder().encode(`content of ${key}`);
        const put = await fetch(await presign(svc.url, "PUT", key), { method: "PUT", body });
        assert.equal(put.status, 200, `${key}: ${await put.text()}`);
        const got = await fetch(await presign(svc.url, "GET", key));
        assert.equal(got.status, 200, key);
        assert.deepEqual(new Uint8Array(await got.arrayBuffer()), body, key);
        assert.deepEqual(await getBytes(s3, key), body, key);
      }
      const listed = await s3.send(
        new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `${name}/` }),
      );
      const names = listed.Contents?.map((c) => c.Key) ?? [];
      for (const key of keys) assert.ok(names.includes(key), `${key} listed as sent: ${names}`);
      // `+` is a plus in a path, never a space.
      assert.ok(!names.includes(`${name}/plus sign.txt`));
    });
  }

  await t.step(
    "replay: a header-signed PUT twice is answered once; a copy twice: 400",
    async () => {
      const client = new AwsClient({ ...KEYS, service: "s3", region: "us-east-1", retries: 0 });
      const put = await client.sign(`${svc.url}/${BUCKET}/replayed.txt`, {
        method: "PUT",
        body: "first and only",
      });
      const again = put.clone();
      const first = await fetch(put);
      assert.equal(first.status, 200, await first.text());
      const second = await fetch(again);
      assert.equal(second.status, 200, await second.text());
      assert.equal(second.headers.get("etag"), first.headers.get("etag"));
      // A copy would create something new: its repeat is refused (CreateMultipartUpload, once
      // refused too, is executed again: replay-rules.ts).
      const create = await client.sign(`${svc.url}/${BUCKET}/copied.txt`, {
        method: "PUT",
        headers: { "x-amz-copy-source": `/${BUCKET}/replayed.txt` },
      });
      const createAgain = create.clone();
      assert.equal((await fetch(create)).status, 200);
      const refused = await fetch(createAgain);
      const text = await refused.text();
      assert.equal(refused.status, 400, text);
      assert.equal(codeOf(text), "InvalidRequest");
      assert.match(text, /<Message>Request replay detected<\/Message>/);
      assert.deepEqual(
        await getBytes(s3, "replayed.txt"),
        new TextEncoder().encode("first and only"),
      );
      // Reads are served however often the same signature comes.
      const get = await client.sign(`${svc.url}/${BUCKET}/replayed.txt`);
      for (const request of [get.clone(), get.clone(), get]) {
        const res = await fetch(request);
        assert.equal(res.status, 200);
        assert.equal(await res.text(), "first and only");
      }
    },
  );

  await t.step("replay: a presigned PUT used twice is served twice (exempt)", async () => {
    for (const [name, presign] of Object.entries(SIGNERS)) {
      const url = await presign(svc.url, "PUT", `twice-${name}.txt`);
      for (const body of ["one", "two"]) {
        const res = await fetch(url, { method: "PUT", body });
        assert.equal(res.status, 200, await res.text());
      }
      assert.deepEqual(await getBytes(s3, `twice-${name}.txt`), new TextEncoder().encode("two"));
    }
  });

  await t.step("the longest lifetime, 604800 s, is accepted", async () => {
    const url = await aws4Presign(svc.url, "PUT", "week.txt", { expires: 604800 });
    const res = await fetch(url, { method: "PUT", body: "week" });
    assert.equal(res.status, 200, await res.text());
  });

  await t.step("X-Amz-Expires 604801: 400; X-Amz-Expires 0: 403 Request has expired", async () => {
    const tooLong = await aws4Presign(svc.url, "PUT", "expires-604801.txt", { expires: 604801 });
    await assertError(
      fetch(tooLong, { method: "PUT", body: "x" }),
      400,
      "AuthorizationQueryParametersError",
    );
    await assertAbsent(s3, "expires-604801.txt");
    for (const [name, presign] of Object.entries(SIGNERS)) {
      const key = `expires-0-${name}.txt`;
      const res = await fetch(await presign(svc.url, "PUT", key, { expires: 0 }), {
        method: "PUT",
        body: "x",
      });
      const text = await res.text();
      assert.equal(res.status, 403, `${name}: ${text}`);
      assert.equal(codeOf(text), "AccessDenied");
      assert.match(text, /<Message>Request has expired<\/Message>/);
      await assertAbsent(s3, key);
    }
  });

  await t.step("a negative X-Amz-Expires (boto3's already-expired URL): 403, as S3", async () => {
    const url = await aws4Presign(svc.url, "PUT", "expires-negative.txt", { expires: -3600 });
    const res = await fetch(url, { method: "PUT", body: "x" });
    const text = await res.text();
    assert.equal(res.status, 403, text);
    assert.equal(codeOf(text), "AccessDenied");
    assert.match(text, /<Message>Request has expired<\/Message>/);
    await assertAbsent(s3, "expires-negative.txt");
    const get = await fetch(await aws4Presign(svc.url, "GET", "week.txt", { expires: -1 }));
    assert.equal(get.status, 403, await get.text());
  });

  await t.step("not yet valid (X-Amz-Date 10 min ahead): 403 AccessDenied", async () => {
    for (const [name, presign] of Object.entries(SIGNERS)) {
      const key = `future-${name}.txt`;
      const at = Date.now() + 10 * 60_000;
      await assertError(
        fetch(await presign(svc.url, "PUT", key, { at }), { method: "PUT", body: "x" }),
        403,
        "AccessDenied",
      );
      await assertError(
        fetch(await presign(svc.url, "GET", "week.txt", { at })),
        403,
        "AccessDenied",
      );
      await assertAbsent(s3, key);
    }
  });

  await t.step("expired (X-Amz-Expires=1, used 2 s later): 403 AccessDenied", async () => {
    const urls = await Promise.all(
      Object.values(SIGNERS).flatMap((presign) => [
        presign(svc.url, "PUT", "expired.txt", { expires: 1 }),
        presign(svc.url, "GET", "week.txt", { expires: 1 }),
      ]),
    );
    await sleep(2100);
    for (const [i, url] of urls.entries()) {
      const init = i % 2 === 0 ? { method: "PUT", body: "late" } : {};
      const res = await fetch(url, init);
      const text = await res.text();
      assert.equal(res.status, 403, text);
      assert.match(text, /<Code>AccessDenied<\/Code>/);
      assert.match(text, /expired/i);
    }
    await assertAbsent(s3, "expired.txt");
  });

  await t.step("tampered URL: other key, other query, edited expiry: 403", async () => {
    for (const presign of Object.values(SIGNERS)) {
      const url = new URL(await presign(svc.url, "PUT", "signed-for.txt"));
      const otherKey = new URL(url);
      otherKey.pathname = `/${BUCKET}/sent-to.txt`;
      await assertError(
        fetch(otherKey, { method: "PUT", body: "x" }),
        403,
        "SignatureDoesNotMatch",
      );
      const extraQuery = new URL(url);
      extraQuery.searchParams.set("versionId", "other");
      await assertError(
        fetch(extraQuery, { method: "PUT", body: "x" }),
        403,
        "SignatureDoesNotMatch",
      );
      const longer = new URL(url);
      longer.searchParams.set("X-Amz-Expires", "3600");
      await assertError(fetch(longer, { method: "PUT", body: "x" }), 403, "SignatureDoesNotMatch");
      // A presigned GET used for a PUT.
      const get = await presign(svc.url, "GET", "signed-for.txt");
      await assertError(fetch(get, { method: "PUT", body: "x" }), 403, "SignatureDoesNotMatch");
      await assertAbsent(s3, "signed-for.txt");
      await assertAbsent(s3, "sent-to.txt");
    }
  });

  await t.step("unsigned x-amz-* header on a presigned PUT: 403 AccessDenied", async () => {
    const url = await aws4Presign(svc.url, "PUT", "unsigned-header.txt");
    await assertError(
      fetch(url, { method: "PUT", body: "x", headers: { "x-amz-meta-sneaky": "1" } }),
      403,
      "AccessDenied",
    );
    await assertAbsent(s3, "unsigned-header.txt");
  });

  await t.step("wrong secret and unknown access key", async () => {
    for (const presign of Object.values(SIGNERS)) {
      const wrong = await presign(svc.url, "PUT", "wrong.txt", { secret: "not-the-secret" });
      const res = await fetch(wrong, { method: "PUT", body: "x" });
      const text = await res.text();
      assert.equal(res.status, 403, text);
      assert.match(text, /<Code>SignatureDoesNotMatch<\/Code>/);
      assert.match(text, /<StringToSign>/);
      assert.match(text, /<CanonicalRequest>/);
      const unknown = await presign(svc.url, "PUT", "wrong.txt", {
        accessKey: "AKIAUNKNOWN000000000",
      });
      await assertError(fetch(unknown, { method: "PUT", body: "x" }), 403, "InvalidAccessKeyId");
      await assertAbsent(s3, "wrong.txt");
    }
  });

  await t.step("SigV2 query auth is refused with 400", async () => {
    const url = `${svc.url}/${BUCKET}/week.txt?AWSAccessKeyId=${ACCESS_KEY}` +
      `&Expires=${Math.floor(Date.now() / 1000) + 600}&Signature=abc%3D`;
    await assertError(fetch(url), 400, "InvalidRequest");
    const put = url.replace("week.txt", "v2.txt");
    await assertError(fetch(put, { method: "PUT", body: "x" }), 400, "InvalidRequest");
    await assertAbsent(s3, "v2.txt");
  });

  s3.destroy();
});

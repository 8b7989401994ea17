/**
 * Black-box tests of replay detection (docs/ARCHITECTURE.md, Authentication): a byte-identical
 * repeat of an idempotent write that succeeded gets the first answer and is never executed again
 * (each step proves it by changing the state between the first and the repeat); repeats that
 * would create something new, or whose unsigned body differs, are refused and audited; a repeat
 * of a request still in flight waits for it. The rclone sequence is in replay_rclone_test.ts.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as S3 from "@aws-sdk/client-s3";
import { AwsClient } from "aws4fetch";
import { assertError, md5Hex } from "./helpers/assertions.ts";
import { ACCESS_KEY, bytesOf, SECRET_KEY, startSvc } from "./helpers/svc.ts";

const enc = new TextEncoder();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const aws4 = new AwsClient({
  accessKeyId: ACCESS_KEY,
  secretAccessKey: SECRET_KEY,
  service: "s3",
  region: "us-east-1",
  retries: 0,
});
const UNSIGNED = { "x-amz-content-sha256": "UNSIGNED-PAYLOAD" };
/** aws4fetch signs UNSIGNED-PAYLOAD for s3 unless told the body's hash: then the body is pinned. */
const pinned = (body: string | Uint8Array, headers: Record<string, string> = {}) => ({
  ...headers,
  "x-amz-content-sha256": createHash("sha256").update(body).digest("hex"),
});

interface Answer {
  status: number;
  etag: string | null;
  body: string;
}

async function answer(res: Response): Promise<Answer> {
  return { status: res.status, etag: res.headers.get("etag"), body: await res.text() };
}

/** Sends a signed request; returns its answer and an identical copy to replay later. */
async function sendOnce(request: Request): Promise<{ first: Answer; copy: Request }> {
  const copy = request.clone();
  return { first: await answer(await fetch(request)), copy };
}

/** The same signed headers with another body: what a replayer of an unsigned payload sends. */
function withBody(request: Request, body: string): Request {
  return new Request(request.url, { method: request.method, headers: request.headers, body });
}

/** The default window (the harness turns detection off unless a test asks for it). */
const DEFAULT_WINDOW = { SVC_REPLAY_WINDOW_SECS: "600" };

async function serve() {
  const svc = await startSvc({ env: DEFAULT_WINDOW });
  const s3 = svc.client();
  const got = async (Bucket: string, Key: string) =>
    new TextDecoder().decode(
      await bytesOf((await s3.send(new S3.GetObjectCommand({ Bucket, Key }))).Body),
    );
  const exists = async (Bucket: string, Key: string) => {
    try {
      await s3.send(new S3.HeadObjectCommand({ Bucket, Key }));
      return true;
    } catch {
      return false;
    }
  };
  const refusals = () => svc.logs.filter((line) => line.includes("replay_rejected")).length;
  const dispose = async () => (s3.destroy(), await svc.stop());
  return { svc, s3, got, exists, refusals, [Symbol.asyncDispose]: dispose };
}

Deno.test("replay: identical repeats of idempotent writes get the first answer, never a second run", async (t) => {
  await using ctx = await serve();
  const { svc, s3, got, exists, refusals } = ctx;
  const B = "replay-bucket";
  const url = (key = "") => `${svc.url}/${B}${key === "" ? "" : `/${key}`}`;

  await t.step("CreateBucket twice: 200 both", async () => {
    const { first, copy } = await sendOnce(await aws4.sign(url(), { method: "PUT" }));
    assert.equal(first.status, 200, first.body);
    assert.deepEqual(await answer(await fetch(copy)), first);
  });

  await t.step(
    "PutObject (signed payload): the repeat answers the first ETag, writes nothing",
    async () => {
      const { first, copy } = await sendOnce(
        await aws4.sign(url("put"), {
          method: "PUT",
          body: "first body",
          headers: pinned("first body"),
        }),
      );
      assert.equal(first.status, 200, first.body);
      assert.equal(first.etag, `"${md5Hex("first body")}"`);
      // The owner writes new content: a second execution of the replay would bring back the old.
      await s3.send(new S3.PutObjectCommand({ Bucket: B, Key: "put", Body: "owner's new body" }));
      assert.deepEqual(await answer(await fetch(copy)), first);
      assert.equal(await got(B, "put"), "owner's new body");
    },
  );

  await t.step(
    "PutObject (UNSIGNED-PAYLOAD): same body answered; another body refused",
    async () => {
      const signed = await aws4.sign(url("unsigned"), {
        method: "PUT",
        body: "unsigned body",
        headers: UNSIGNED,
      });
      const differing = withBody(signed, "forged body!!");
      const { first, copy } = await sendOnce(signed);
      assert.equal(first.status, 200, first.body);
      await s3.send(new S3.PutObjectCommand({ Bucket: B, Key: "unsigned", Body: "owner" }));
      assert.deepEqual(await answer(await fetch(copy)), first);
      assert.equal(await got(B, "unsigned"), "owner", "the identical repeat was not stored");
      const before = refusals();
      await assertError(fetch(differing), 400, "InvalidRequest");
      assert.equal(await got(B, "unsigned"), "owner", "the differing body was not stored");
      assert.equal(refusals(), before + 1, "the refusal is audited");
    },
  );

  await t.step("DeleteObject: the repeat does not delete the object re-created since", async () => {
    await s3.send(new S3.PutObjectCommand({ Bucket: B, Key: "doomed", Body: "v1" }));
    const { first, copy } = await sendOnce(await aws4.sign(url("doomed"), { method: "DELETE" }));
    assert.equal(first.status, 204, first.body);
    await s3.send(new S3.PutObjectCommand({ Bucket: B, Key: "doomed", Body: "v2" }));
    assert.deepEqual(await answer(await fetch(copy)), first);
    assert.equal(await got(B, "doomed"), "v2");
  });

  await t.step("DeleteObjects: the repeat answers the same document, deletes nothing", async () => {
    for (const Key of ["d1", "d2"]) {
      await s3.send(new S3.PutObjectCommand({ Bucket: B, Key, Body: Key }));
    }
    const xml = "<Delete><Object><Key>d1</Key></Object><Object><Key>d2</Key></Object></Delete>";
    const headers = pinned(xml, { "content-md5": btoa(String.fromCharCode(...md5Bytes(xml))) });
    const signed = await aws4.sign(`${url()}?delete`, { method: "POST", body: xml, headers });
    const { first, copy } = await sendOnce(signed);
    assert.equal(first.status, 200, first.body);
    assert.match(first.body, /<Deleted><Key>d1<\/Key>/);
    await s3.send(new S3.PutObjectCommand({ Bucket: B, Key: "d1", Body: "back" }));
    assert.deepEqual(await answer(await fetch(copy)), first);
    assert.ok(await exists(B, "d1"));
  });

  await t.step("DeleteObjects (UNSIGNED-PAYLOAD): another key list is refused", async () => {
    const xml = (key: string) => `<Delete><Object><Key>${key}</Key></Object></Delete>`;
    const signed = await aws4.sign(`${url()}?delete`, {
      method: "POST",
      body: xml("gone"),
      headers: UNSIGNED,
    });
    const differing = withBody(signed, xml("d1"));
    const { first, copy } = await sendOnce(signed);
    assert.equal(first.status, 200, first.body);
    assert.deepEqual(await answer(await fetch(copy)), first);
    await assertError(fetch(differing), 400, "InvalidRequest");
    assert.ok(await exists(B, "d1"), "the differing list was not executed");
  });

  await t.step(
    "UploadPart and CompleteMultipartUpload repeated; CreateMultipartUpload executed again",
    async () => {
      const create = await aws4.sign(`${url("mp")}?uploads`, { method: "POST" });
      const created = await sendOnce(create);
      assert.equal(created.first.status, 200, created.first.body);
      const uploadId = /<UploadId>([^<]+)</.exec(created.first.body)![1];
      // Parallel uploaders and test suites send identical creates within a second: each gets an
      // upload of its own (an empty one costs nothing, the idle TTL sweeps it).
      const before = refusals();
      const again = await answer(await fetch(created.copy));
      assert.equal(again.status, 200, again.body);
      const secondId = /<UploadId>([^<]+)</.exec(again.body)![1];
      assert.notEqual(secondId, uploadId);
      assert.equal(refusals(), before);
      const partUrl = `${url("mp")}?partNumber=1&uploadId=${uploadId}`;
      const part = await sendOnce(
        await aws4.sign(partUrl, { method: "PUT", body: "part one", headers: pinned("part one") }),
      );
      assert.equal(part.first.status, 200, part.first.body);
      assert.deepEqual(await answer(await fetch(part.copy)), part.first);
      // An unsigned part resent with the same body is answered; with another body refused.
      const unsignedPart = await aws4.sign(partUrl, {
        method: "PUT",
        body: "part one",
        headers: UNSIGNED,
      });
      const forgedPart = withBody(unsignedPart, "part two");
      const unsigned = await sendOnce(unsignedPart);
      assert.deepEqual(await answer(await fetch(unsigned.copy)), unsigned.first);
      await assertError(fetch(forgedPart), 400, "InvalidRequest");
      const xml =
        `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>${part.first.etag}</ETag></Part></CompleteMultipartUpload>`;
      const complete = await sendOnce(
        await aws4.sign(`${url("mp")}?uploadId=${uploadId}`, {
          method: "POST",
          body: xml,
          headers: pinned(xml),
        }),
      );
      assert.equal(complete.first.status, 200, complete.first.body);
      assert.deepEqual(await answer(await fetch(complete.copy)), complete.first);
      assert.equal(await got(B, "mp"), "part one");
    },
  );

  await t.step("a conditional PUT repeated is evaluated again, never replayed", async () => {
    // Two writers sharing credentials and a body must not both believe they created the object.
    const body = "created once";
    const create = await aws4.sign(url("cond"), {
      method: "PUT",
      body,
      headers: pinned(body, { "if-none-match": "*" }),
    });
    const { first, copy } = await sendOnce(create);
    assert.equal(first.status, 200, first.body);
    await assertError(fetch(copy), 412, "PreconditionFailed");
    // Unsigned body, the same: the repeat is evaluated (412), not compared and answered 200.
    const unsigned = await aws4.sign(url("cond-unsigned"), {
      method: "PUT",
      body,
      headers: { ...UNSIGNED, "if-none-match": "*" },
    });
    const second = await sendOnce(unsigned);
    assert.equal(second.first.status, 200, second.first.body);
    await assertError(fetch(second.copy), 412, "PreconditionFailed");
    assert.equal(await got(B, "cond"), body);
  });

  await t.step("AbortMultipartUpload twice: 204 both", async () => {
    const { UploadId } = await s3.send(
      new S3.CreateMultipartUploadCommand({ Bucket: B, Key: "aborted" }),
    );
    const abort = await aws4.sign(`${url("aborted")}?uploadId=${UploadId}`, { method: "DELETE" });
    const { first, copy } = await sendOnce(abort);
    assert.equal(first.status, 204, first.body);
    assert.deepEqual(await answer(await fetch(copy)), first);
  });

  await t.step("DeleteBucket: the repeat does not delete the bucket re-created since", async () => {
    const other = `${svc.url}/replay-other`;
    await s3.send(new S3.CreateBucketCommand({ Bucket: "replay-other" }));
    const { first, copy } = await sendOnce(await aws4.sign(other, { method: "DELETE" }));
    assert.equal(first.status, 204, first.body);
    await s3.send(new S3.CreateBucketCommand({ Bucket: "replay-other" }));
    assert.deepEqual(await answer(await fetch(copy)), first);
    await s3.send(new S3.HeadBucketCommand({ Bucket: "replay-other" }));
  });

  await t.step(
    "a DELETE replayed 3 s later (past the old 2 s window) deletes nothing",
    async () => {
      await s3.send(new S3.PutObjectCommand({ Bucket: B, Key: "late", Body: "v1" }));
      const { first, copy } = await sendOnce(await aws4.sign(url("late"), { method: "DELETE" }));
      assert.equal(first.status, 204, first.body);
      await s3.send(new S3.PutObjectCommand({ Bucket: B, Key: "late", Body: "re-created" }));
      await sleep(3000);
      assert.deepEqual(await answer(await fetch(copy)), first);
      assert.equal(await got(B, "late"), "re-created");
    },
  );

  await t.step("a repeat sent while the first is in flight waits for its answer", async () => {
    const body = enc.encode("x".repeat(64 * 1024));
    const signed = await aws4.sign(url("slow"), { method: "PUT", body, headers: pinned(body) });
    let release!: () => void;
    const released = new Promise<void>((resolve) => release = resolve);
    const slowBody = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(body.slice(0, 1024));
        await released;
        controller.enqueue(body.slice(1024));
        controller.close();
      },
    });
    const init = { method: "PUT", headers: signed.headers };
    const first = fetch(url("slow"), { ...init, body: slowBody, duplex: "half" } as RequestInit);
    await sleep(300);
    let repeatDone = false;
    const repeat = fetch(url("slow"), { ...init, body }).then(async (res) => {
      repeatDone = true;
      return await answer(res);
    });
    await sleep(500);
    assert.equal(repeatDone, false, "the repeat waits for the first");
    release();
    const [a, b] = [await answer(await first), await repeat];
    assert.equal(a.status, 200, a.body);
    assert.deepEqual(b, a);
  });
});

Deno.test("replay: SVC_REPLAY_WINDOW_SECS=0 turns detection off: a repeat runs again", async () => {
  await using svc = await startSvc({ env: { SVC_REPLAY_WINDOW_SECS: "0" } });
  const s3 = svc.client();
  await s3.send(new S3.CreateBucketCommand({ Bucket: "off" }));
  const { first, copy } = await sendOnce(
    await aws4.sign(`${svc.url}/off/k`, { method: "PUT", body: "replayed" }),
  );
  assert.equal(first.status, 200, first.body);
  await s3.send(new S3.PutObjectCommand({ Bucket: "off", Key: "k", Body: "owner" }));
  assert.equal((await fetch(copy)).status, 200);
  const got = await s3.send(new S3.GetObjectCommand({ Bucket: "off", Key: "k" }));
  assert.equal(await got.Body!.transformToString(), "replayed", "executed a second time");
  s3.destroy();
});

function md5Bytes(text: string): number[] {
  return md5Hex(text).match(/../g)!.map((h) => parseInt(h, 16));
}

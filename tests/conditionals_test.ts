/**
 * Black-box tests of how request headers and parameters decide an operation: Range and
 * response-* overrides on reads, conditional headers on reads and writes (If-Match,
 * If-None-Match, dates), integrity headers (Content-MD5, x-amz-content-sha256) and size limits.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import {
  bytesOf,
  objectsOnLocalDisk,
  randomBytes,
  signedFetch as fetch,
  startSvc,
} from "./helpers/svc.ts";
import { assertError, assertSdkError, codeOf, md5Hex } from "./helpers/assertions.ts";

const BUCKET = "cond";
const TEN = "0123456789";
const utf8 = new TextEncoder();

const md5Base64 = (data: string) => createHash("md5").update(data).digest("base64");

/** The asctime() form of an HTTP date, e.g. `Sun Nov  6 08:49:37 1994`. */
function asctime(ms: number): string {
  const [day, date, month, year, time] = new Date(ms).toUTCString().split(" ");
  return `${day.slice(0, 3)} ${month} ${date.replace(/^0/, " ")} ${time} ${year}`;
}

Deno.test("conditionals: ranges, overrides and preconditions against one server", async (t) => {
  // Raw TCP requests below cannot carry a signature: this server runs open
  // (authentication: none); signed access is covered by tests/auth_test.ts and the SDK suites.
  await using svc = await startSvc({ env: { SVC_AUTHENTICATION: "none" } });
  const s3 = svc.client();
  const objectUrl = (key: string, query = "") => `${svc.url}/${BUCKET}/${key}${query}`;
  const get = (key: string, headers: HeadersInit = {}, method = "GET") =>
    fetch(objectUrl(key), { method, headers });
  assert.equal((await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "ten", Body: TEN }));
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "empty", Body: new Uint8Array(0) }));
  const etag = `"${md5Hex(TEN)}"`;

  await t.step("single byte ranges: 206 with exact Content-Range and Content-Length", async () => {
    const cases: [string, string, string][] = [
      ["bytes=0-0", "bytes 0-0/10", "0"],
      ["bytes=5-", "bytes 5-9/10", "56789"],
      ["bytes=-3", "bytes 7-9/10", "789"],
      ["bytes=-1000", "bytes 0-9/10", TEN],
      ["bytes=8-1000", "bytes 8-9/10", "89"],
      ["bytes=9-9", "bytes 9-9/10", "9"],
      ["bytes=0-9", "bytes 0-9/10", TEN],
    ];
    for (const [range, contentRange, body] of cases) {
      const res = await get("ten", { range });
      assert.equal(res.status, 206, range);
      assert.equal(res.headers.get("content-range"), contentRange, range);
      assert.equal(res.headers.get("content-length"), String(body.length), range);
      assert.equal(res.headers.get("etag"), etag);
      assert.equal(await res.text(), body, range);
      const head = await get("ten", { range }, "HEAD");
      assert.equal(head.status, 206, `HEAD ${range}`);
      assert.equal(head.headers.get("content-range"), contentRange, `HEAD ${range}`);
      assert.equal(head.headers.get("content-length"), String(body.length), `HEAD ${range}`);
    }
    const sdk = await s3.send(
      new GetObjectCommand({ Bucket: BUCKET, Key: "ten", Range: "bytes=2-4" }),
    );
    assert.equal(sdk.ContentRange, "bytes 2-4/10");
    assert.equal(sdk.ContentLength, 3);
    assert.equal(new TextDecoder().decode(await bytesOf(sdk.Body)), "234");
  });

  await t.step("unsatisfiable ranges are 416 InvalidRange; ignored ranges are 200", async () => {
    for (const range of ["bytes=10-", "bytes=10-20", "bytes=999-"]) {
      await assertError(await get("ten", { range }), 416, "InvalidRange");
      assert.equal((await get("ten", { range }, "HEAD")).status, 416);
    }
    await assertError(await get("empty", { range: "bytes=0-0" }), 416, "InvalidRange");
    for (const range of ["bytes=0-1,3-4", "bytes=5-2", "items=0-1", "bytes=abc", "bytes=-"]) {
      const res = await get("ten", { range });
      assert.equal(res.status, 200, range);
      assert.equal(res.headers.get("content-range"), null, range);
      assert.equal(res.headers.get("content-length"), "10", range);
      assert.equal(await res.text(), TEN, range);
    }
    const tail = await get("empty", { range: "bytes=-5" });
    assert.equal(tail.status, 200);
    assert.equal(await tail.text(), "");
  });

  await t.step("response-* query parameters override headers on GET", async () => {
    const got = await s3.send(
      new GetObjectCommand({
        Bucket: BUCKET,
        Key: "ten",
        ResponseContentType: "text/csv",
        ResponseContentDisposition: 'attachment; filename="ten.csv"',
        ResponseCacheControl: "no-store",
        ResponseExpires: new Date(Date.UTC(2030, 5, 1)),
        ResponseContentLanguage: "fr",
        ResponseContentEncoding: "identity",
      }),
    );
    assert.equal(got.ContentType, "text/csv");
    assert.equal(got.ContentDisposition, 'attachment; filename="ten.csv"');
    assert.equal(got.CacheControl, "no-store");
    assert.equal(got.ExpiresString, new Date(Date.UTC(2030, 5, 1)).toUTCString());
    assert.equal(got.ContentLanguage, "fr");
    assert.equal(got.ContentEncoding, "identity");
    assert.equal(new TextDecoder().decode(await bytesOf(got.Body)), TEN);
    // Overrides do not change what is stored.
    const plain = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "ten" }));
    assert.equal(plain.ContentType, "application/octet-stream");
    assert.equal(plain.CacheControl, undefined);
    const raw = await fetch(objectUrl("ten", "?response-content-type=image%2Fpng"));
    assert.equal(raw.headers.get("content-type"), "image/png");
    await raw.body?.cancel();
  });

  await t.step("read conditionals follow S3 precedence on GET and HEAD", async () => {
    const head = await get("ten", {}, "HEAD");
    const lastModified = head.headers.get("last-modified")!;
    const modifiedAt = Date.parse(lastModified);
    const before = new Date(modifiedAt - 3600_000).toUTCString();
    const after = new Date(modifiedAt + 3600_000).toUTCString();
    const future = new Date(Date.now() + 86400_000).toUTCString();
    const other = '"0123456789abcdef0123456789abcdef"';
    const cases: [Record<string, string>, number][] = [
      [{ "if-match": etag }, 200],
      [{ "if-match": "*" }, 200],
      [{ "if-match": `${other}, ${etag}` }, 200],
      [{ "if-match": other }, 412],
      [{ "if-none-match": etag }, 304],
      [{ "if-none-match": "*" }, 304],
      [{ "if-none-match": other }, 200],
      [{ "if-none-match": `${other}, W/${etag}` }, 304],
      [{ "if-modified-since": asctime(modifiedAt) }, 304],
      [{ "if-unmodified-since": asctime(modifiedAt - 86400_000) }, 412],
      [{ "if-modified-since": lastModified }, 304],
      [{ "if-modified-since": before }, 200],
      [{ "if-modified-since": future }, 200], // a date in the future is invalid and ignored
      [{ "if-modified-since": "not a date" }, 200],
      [{ "if-unmodified-since": lastModified }, 200],
      [{ "if-unmodified-since": after }, 200],
      [{ "if-unmodified-since": before }, 412],
      // If-Match true wins over If-Unmodified-Since false.
      [{ "if-match": etag, "if-unmodified-since": before }, 200],
      // If-None-Match false (it matches) wins over If-Modified-Since true.
      [{ "if-none-match": etag, "if-modified-since": before }, 304],
      // If-None-Match true decides alone: If-Modified-Since false is ignored.
      [{ "if-none-match": other, "if-modified-since": lastModified }, 200],
      // Failing If-Match beats a would-be 304.
      [{ "if-match": other, "if-none-match": etag }, 412],
      // Conditions are judged before the range.
      [{ "if-match": other, range: "bytes=50-" }, 412],
    ];
    for (const [headers, status] of cases) {
      for (const method of ["GET", "HEAD"]) {
        const res = await get("ten", headers, method);
        const label = `${method} ${JSON.stringify(headers)}`;
        const body = await res.text();
        assert.equal(res.status, status, `${label}: ${body}`);
        if (status === 304) {
          assert.equal(res.headers.get("etag"), etag, label);
          assert.equal(res.headers.get("last-modified"), lastModified, label);
          assert.equal(body, "", label);
        }
        if (status === 412 && method === "GET") assert.equal(codeOf(body), "PreconditionFailed");
        if (status === 200 && method === "GET") assert.equal(body, TEN, label);
      }
    }
    // A range still applies when the conditions pass; a 304 wins over a bad range.
    const ranged = await get("ten", { "if-match": etag, range: "bytes=1-2" });
    assert.equal(ranged.status, 206);
    assert.equal(await ranged.text(), "12");
    const notModified = await get("ten", { "if-none-match": etag, range: "bytes=50-" });
    assert.equal(notModified.status, 304);
    await notModified.body?.cancel();
    // Conditions on a missing key: 404, not 412.
    await assertError(await get("missing", { "if-match": etag }), 404, "NoSuchKey");
  });

  await t.step("Content-MD5 and x-amz-content-sha256 are verified before commit", async () => {
    const put = (headers: Record<string, string>, body: string) =>
      fetch(objectUrl("digest"), { method: "PUT", body: utf8.encode(body), headers });
    const ok = await put({ "content-md5": md5Base64("original") }, "original");
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get("etag"), `"${md5Hex("original")}"`);
    await assertError(
      await put({ "content-md5": md5Base64("other") }, "changed"),
      400,
      "BadDigest",
    );
    await assertError(await put({ "content-md5": "not-base64!" }, "changed"), 400, "InvalidDigest");
    await assertError(await put({ "content-md5": btoa("short") }, "changed"), 400, "InvalidDigest");
    const wrongSha = "0".repeat(64);
    await assertError(
      await put({ "x-amz-content-sha256": wrongSha }, "changed"),
      400,
      "XAmzContentSHA256Mismatch",
    );
    const rightSha = createHash("sha256").update("sha ok").digest("hex");
    assert.equal((await put({ "x-amz-content-sha256": rightSha }, "sha ok")).status, 200);
    assert.equal(await (await fetch(objectUrl("digest"))).text(), "sha ok");
    // A refused body leaves the previous version intact.
    await assertError(await put({ "content-md5": md5Base64("zzz") }, "yyy"), 400, "BadDigest");
    assert.equal(await (await fetch(objectUrl("digest"))).text(), "sha ok");
    // A body that ends before its Content-Length is IncompleteBody, and nothing is stored.
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: svc.port });
    const head = `PUT /${BUCKET}/short HTTP/1.1\r\nHost: svc\r\nContent-Length: 10\r\n\r\n`;
    await conn.write(utf8.encode(`${head}12345`));
    await conn.closeWrite();
    const reply = await new Response(conn.readable).text();
    assert.match(reply, /^HTTP\/1\.1 400 /);
    assert.equal(codeOf(reply), "IncompleteBody");
    assert.equal((await get("short", {}, "HEAD")).status, 404);
    if (objectsOnLocalDisk) {
      const tmp = [...Deno.readDirSync(`${svc.dataDir}/.svc/tmp`)];
      assert.deepEqual(tmp, [], "refused bodies leave no temp files");
    }
  });

  await t.step("PutObject If-None-Match: * and If-Match", async () => {
    const put = (key: string, body: string, headers: Record<string, string>) =>
      fetch(objectUrl(key), { method: "PUT", body, headers });
    const created = await put("guarded", "v1", { "if-none-match": "*" });
    assert.equal(created.status, 200);
    assert.equal(created.headers.get("etag"), `"${md5Hex("v1")}"`);
    await assertError(
      await put("guarded", "v2", { "if-none-match": "*" }),
      412,
      "PreconditionFailed",
    );
    await assertError(await put("guarded", "v2", { "if-match": etag }), 412, "PreconditionFailed");
    const matched = await put("guarded", "v3", { "if-match": `"${md5Hex("v1")}"` });
    assert.equal(matched.status, 200);
    await matched.body?.cancel();
    assert.equal(await (await get("guarded")).text(), "v3");
    await assertError(await put("absent", "x", { "if-match": etag }), 404, "NoSuchKey");
    await assertError(await put("guarded", "x", { "if-none-match": etag }), 501, "NotImplemented");
    assert.equal(await (await get("guarded")).text(), "v3");
    await assert.rejects(
      s3.send(
        new PutObjectCommand({ Bucket: BUCKET, Key: "guarded", Body: "sdk", IfNoneMatch: "*" }),
      ),
      (err: { name: string; $metadata: { httpStatusCode?: number } }) =>
        err.name === "PreconditionFailed" && err.$metadata.httpStatusCode === 412,
    );
  });

  await t.step("ten concurrent If-None-Match: * PUTs of one key: exactly one wins", async () => {
    const bodies = Array.from({ length: 10 }, (_, i) => `racer-${i}-${"x".repeat(i * 1000)}`);
    const results = await Promise.all(
      bodies.map(async (body) => {
        const res = await fetch(objectUrl("race"), {
          method: "PUT",
          body,
          headers: { "if-none-match": "*" },
        });
        return { status: res.status, code: codeOf(await res.text()), body };
      }),
    );
    const winners = results.filter((r) => r.status === 200);
    assert.equal(winners.length, 1, JSON.stringify(results.map((r) => r.status)));
    for (const loser of results.filter((r) => r.status !== 200)) {
      assert.equal(loser.status, 412);
      assert.equal(loser.code, "PreconditionFailed");
    }
    assert.equal(await (await get("race")).text(), winners[0].body);

    // Ten If-Match writers holding the same ETag: one replaces it, the others then miss.
    const current = (await get("race", {}, "HEAD")).headers.get("etag")!;
    const matchers = await Promise.all(
      bodies.map(async (body) => {
        const res = await fetch(objectUrl("race"), {
          method: "PUT",
          body: `m-${body}`,
          headers: { "if-match": current },
        });
        return { status: res.status, code: codeOf(await res.text()), body: `m-${body}` };
      }),
    );
    const matched = matchers.filter((r) => r.status === 200);
    assert.equal(matched.length, 1, JSON.stringify(matchers.map((r) => r.status)));
    assert.deepEqual(
      matchers.filter((r) => r.status !== 200).map((r) => `${r.status} ${r.code}`),
      Array(9).fill("412 PreconditionFailed"),
    );
    assert.equal(await (await get("race")).text(), matched[0].body);
  });

  s3.destroy();
});

Deno.test("conditionals: SVC_MAX_OBJECT_SIZE limits every upload", async () => {
  await using svc = await startSvc({ env: { SVC_MAX_OBJECT_SIZE: "1000" } });
  const put = (key: string, body: BodyInit) =>
    fetch(`${svc.url}/limits/${key}`, { method: "PUT", body });
  const streamOf = (size: number) =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (let sent = 0; sent < size; sent += 300) {
          controller.enqueue(new Uint8Array(Math.min(300, size - sent)).fill(7));
        }
        controller.close();
      },
    });
  assert.equal((await fetch(`${svc.url}/limits`, { method: "PUT" })).status, 200);
  const exact = await put("exact", new Uint8Array(1000));
  assert.equal(exact.status, 200);
  await exact.body?.cancel();
  await assertError(await put("over", new Uint8Array(1001)), 400, "EntityTooLarge");
  const streamed = await fetch(`${svc.url}/limits/streamed`, {
    method: "PUT",
    body: streamOf(1000),
    duplex: "half",
  } as RequestInit);
  assert.equal(streamed.status, 200);
  await streamed.body?.cancel();
  await assertError(
    await fetch(`${svc.url}/limits/streamed-over`, {
      method: "PUT",
      body: streamOf(1001),
      duplex: "half",
    } as RequestInit),
    400,
    "EntityTooLarge",
  );
  const s3 = svc.client();
  await assertSdkError(
    s3.send(new PutObjectCommand({ Bucket: "limits", Key: "sdk-over", Body: randomBytes(1001) })),
    400,
    "EntityTooLarge",
  );
  const list = await s3.send(new ListObjectsV2Command({ Bucket: "limits" }));
  assert.deepEqual(list.Contents?.map((c) => [c.Key, c.Size]), [["exact", 1000], [
    "streamed",
    1000,
  ]]);
  s3.destroy();

  await using closed = await startSvc({ env: { SVC_MAX_OBJECT_SIZE: "0" } });
  assert.equal((await fetch(`${closed.url}/closed`, { method: "PUT" })).status, 200);
  for (const body of [new Uint8Array(0), new Uint8Array(1)]) {
    await assertError(
      await fetch(`${closed.url}/closed/k`, { method: "PUT", body }),
      400,
      "EntityTooLarge",
    );
  }
  assert.equal((await fetch(`${closed.url}/closed/k`, { method: "HEAD" })).status, 404);
});

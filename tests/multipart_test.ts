/**
 * Black-box multipart tests: the whole upload lifecycle over HTTP against a real svc process,
 * through the SDK where it can say it and raw fetch where it cannot.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as S3 from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import {
  bytesOf,
  objectsOnLocalDisk,
  randomBytes,
  signedFetch as fetch,
  startSvc,
} from "./helpers/svc.ts";
import { concat, multipartEtag } from "./helpers/multipart.ts";

const MiB = 1024 * 1024;
const EMPTY = new Uint8Array(0);
const md5hex = (b: Uint8Array) => createHash("md5").update(b).digest("hex");
const md5b64 = (b: Uint8Array) => createHash("md5").update(b).digest("base64");

/** The request fails with this status and S3 error code (the SDK parses the XML Code). */
async function rejects(work: Promise<unknown>, status: number, code: string): Promise<void> {
  const err = await work.then(() => undefined, (e) => e);
  assert.ok(err, `expected ${status} ${code}, but the request succeeded`);
  assert.equal(err.$metadata?.httpStatusCode, status, `${err.name}: ${err.message}`);
  assert.equal(err.name, code);
}

/** Status and `<Code>` (of an XML error document) of a raw fetch. */
async function raw(url: string, method = "GET", body?: string, headers?: HeadersInit) {
  const r = await fetch(url, { method, body, headers });
  const text = await r.text();
  return { status: r.status, code: /<Code>([^<]*)<\/Code>/.exec(text)?.[1], text };
}

function completeXml(parts: { PartNumber: number | string; ETag: string }[]): string {
  const xml = parts.map((p) =>
    `<Part><PartNumber>${p.PartNumber}</PartNumber><ETag>${p.ETag}</ETag></Part>`
  );
  return `<CompleteMultipartUpload>${xml.join("")}</CompleteMultipartUpload>`;
}

type Part = { PartNumber: number; ETag: string };

/** Short forms of the multipart calls against one bucket. */
function mp(s3: S3.S3Client, Bucket: string) {
  type Extra<T> = Partial<T>;
  return {
    create: async (Key: string, x: Extra<S3.CreateMultipartUploadCommandInput> = {}) =>
      (await s3.send(new S3.CreateMultipartUploadCommand({ Bucket, Key, ...x }))).UploadId!,
    part: async (Key: string, UploadId: string, PartNumber: number, Body: Uint8Array, x = {}) => {
      const input = { Bucket, Key, UploadId, PartNumber, Body, ...x };
      return { PartNumber, ETag: (await s3.send(new S3.UploadPartCommand(input))).ETag! };
    },
    complete: (Key: string, UploadId: string, Parts: Part[], x = {}) => {
      const input = { Bucket, Key, UploadId, MultipartUpload: { Parts }, ...x };
      return s3.send(new S3.CompleteMultipartUploadCommand(input));
    },
    abort: (Key: string, UploadId: string) =>
      s3.send(new S3.AbortMultipartUploadCommand({ Bucket, Key, UploadId })),
    listParts: (Key: string, UploadId: string, PartNumberMarker?: string, MaxParts?: number) =>
      s3.send(new S3.ListPartsCommand({ Bucket, Key, UploadId, PartNumberMarker, MaxParts })),
    uploads: (input: Extra<S3.ListMultipartUploadsCommandInput> = {}) =>
      s3.send(new S3.ListMultipartUploadsCommand({ Bucket, ...input })),
    head: (Key: string) => s3.send(new S3.HeadObjectCommand({ Bucket, Key })),
    bytes: async (Key: string) =>
      await bytesOf((await s3.send(new S3.GetObjectCommand({ Bucket, Key }))).Body),
  };
}

Deno.test("multipart: lifecycle, validation, listings and copies on one server", async (t) => {
  await using svc = await startSvc();
  const s3 = svc.client();
  const B = "mpb";
  await s3.send(new S3.CreateBucketCommand({ Bucket: B }));
  const m = mp(s3, B);
  const p5a = randomBytes(5 * MiB), p5b = randomBytes(5 * MiB), p1 = randomBytes(1);

  await t.step("3 parts: bytes, multipart ETag on HEAD/GET/LIST, metadata", async () => {
    const id = await m.create("three", { ContentType: "text/x-test", Metadata: { color: "blue" } });
    const parts = [
      await m.part("three", id, 1, p5a),
      await m.part("three", id, 2, p5b),
      await m.part("three", id, 3, p1),
    ];
    assert.deepEqual(parts.map((p) => p.ETag), [p5a, p5b, p1].map((p) => `"${md5hex(p)}"`));
    const etag = multipartEtag([p5a, p5b, p1]);
    assert.equal((await m.complete("three", id, parts)).ETag, etag);
    const head = await m.head("three");
    const expected = [etag, 10 * MiB + 1, "text/x-test"];
    assert.deepEqual([head.ETag, head.ContentLength, head.ContentType], expected);
    assert.deepEqual(head.Metadata, { color: "blue" });
    const got = await s3.send(new S3.GetObjectCommand({ Bucket: B, Key: "three" }));
    assert.equal(got.ETag, etag);
    assert.deepEqual(await bytesOf(got.Body), concat(p5a, p5b, p1));
    const list = await s3.send(new S3.ListObjectsV2Command({ Bucket: B, Prefix: "three" }));
    assert.equal(list.Contents?.[0].ETag, etag);
    await rejects(m.listParts("three", id), 404, "NoSuchUpload"); // gone once completed
  });

  await t.step("Content-MD5 checked, re-uploaded part replaces, 0-byte last part", async () => {
    const id = await m.create("md5");
    const ok = await m.part("md5", id, 1, p5a, { ContentMD5: md5b64(p5a) });
    assert.equal(ok.ETag, `"${md5hex(p5a)}"`);
    await rejects(m.part("md5", id, 2, p1, { ContentMD5: md5b64(p5a) }), 400, "BadDigest");
    const headers = { "content-md5": "nope" };
    const junk = await raw(`${svc.url}/${B}/md5?uploadId=${id}&partNumber=2`, "PUT", "x", headers);
    assert.deepEqual([junk.status, junk.code], [400, "InvalidDigest"]);
    const sha = { "x-amz-content-sha256": createHash("sha256").update("y").digest("hex") };
    const lie = await raw(`${svc.url}/${B}/md5?uploadId=${id}&partNumber=2`, "PUT", "x", sha);
    assert.deepEqual([lie.status, lie.code], [400, "XAmzContentSHA256Mismatch"]);
    const first = await m.part("md5", id, 1, p5b); // replaces the first upload of part 1
    const empty = await m.part("md5", id, 2, EMPTY);
    const listed = await m.listParts("md5", id);
    assert.deepEqual(listed.Parts?.map((p) => [p.PartNumber, p.ETag, p.Size]), [
      [1, `"${md5hex(p5b)}"`, 5 * MiB],
      [2, `"${md5hex(EMPTY)}"`, 0],
    ]);
    assert.equal((await m.complete("md5", id, [first, empty])).ETag, multipartEtag([p5b, EMPTY]));
    assert.deepEqual(await m.bytes("md5"), p5b);
  });

  await t.step("single 0-byte part; Create on a missing bucket or a bad key", async () => {
    const id = await m.create("zero");
    const only = await m.part("zero", id, 1, EMPTY);
    assert.equal((await m.complete("zero", id, [only])).ETag, multipartEtag([EMPTY]));
    assert.equal((await m.head("zero")).ContentLength, 0);
    await rejects(mp(s3, "no-such-bucket").create("k"), 404, "NoSuchBucket");
    await rejects(m.create("k".repeat(1025)), 400, "KeyTooLongError");
  });

  await t.step("Complete refusals: order, wrong/missing part, too small, malformed", async () => {
    const id = await m.create("bad");
    const [a, b] = [await m.part("bad", id, 1, p5a), await m.part("bad", id, 2, p1)];
    const c = await m.part("bad", id, 3, p1);
    const complete = (body: string) => raw(`${svc.url}/${B}/bad?uploadId=${id}`, "POST", body);
    const cases: [string, string][] = [
      [completeXml([b, a]), "InvalidPartOrder"],
      [completeXml([a, a]), "InvalidPartOrder"],
      [completeXml([{ PartNumber: 1, ETag: `"${md5hex(p5b)}"` }]), "InvalidPart"],
      [completeXml([a, { PartNumber: 4, ETag: b.ETag }]), "InvalidPart"],
      [completeXml([a, b, c]), "EntityTooSmall"],
      ["<CompleteMultipartUpload></CompleteMultipartUpload>", "MalformedXML"],
      ["", "MalformedXML"],
      ["<CompleteMultipartUpload><Part>", "MalformedXML"],
      ["<Other/>", "MalformedXML"],
      [completeXml([{ PartNumber: "x", ETag: a.ETag }]), "MalformedXML"],
    ];
    for (const [body, code] of cases) {
      const res = await complete(body);
      assert.deepEqual([res.status, res.code], [400, code], body);
    }
    // None of the refusals consumed the upload; a valid list (ETag unquoted) completes it.
    const ok = await complete(completeXml([a, { PartNumber: 3, ETag: c.ETag.slice(1, -1) }]));
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(await m.bytes("bad"), concat(p5a, p1));
  });

  await t.step("Abort, wrong key and garbage upload ids are NoSuchUpload", async () => {
    const id = await m.create("ab");
    const p = await m.part("ab", id, 1, p1);
    await rejects(m.listParts("other", id), 404, "NoSuchUpload");
    await rejects(m.part("other", id, 1, p1), 404, "NoSuchUpload");
    await m.abort("ab", id);
    await rejects(m.part("ab", id, 2, p1), 404, "NoSuchUpload");
    await rejects(m.complete("ab", id, [p]), 404, "NoSuchUpload");
    await rejects(m.abort("ab", id), 404, "NoSuchUpload");
    for (const garbage of ["../../x", "..", "", "%00", "A".repeat(32) + "/..", id + "x"]) {
      const q = `uploadId=${encodeURIComponent(garbage)}`;
      const calls = [["GET", ""], ["PUT", "&partNumber=1"], ["DELETE", ""], ["POST", ""]];
      for (const [method, extra] of calls) {
        const body = method === "PUT" ? "x" : method === "POST" ? completeXml([p]) : undefined;
        const res = await raw(`${svc.url}/${B}/ab?${q}${extra}`, method, body);
        assert.deepEqual([res.status, res.code], [404, "NoSuchUpload"], `${method} ${garbage}`);
      }
    }
    const id2 = await m.create("ab");
    for (const n of ["0", "10001", "abc", "1.5"]) {
      const res = await raw(`${svc.url}/${B}/ab?uploadId=${id2}&partNumber=${n}`, "PUT", "x");
      assert.deepEqual([res.status, res.code], [400, "InvalidArgument"], n);
    }
    await m.abort("ab", id2);
  });

  await t.step("ListParts: marker and max-parts 1, 1000, 0, 5000", async () => {
    const id = await m.create("lp");
    for (const n of [1, 2, 3, 7]) await m.part("lp", id, n, p1);
    const shape = (
      r: Awaited<ReturnType<typeof m.listParts>>,
    ) => [r.Parts?.map((p) => p.PartNumber), r.IsTruncated, r.NextPartNumberMarker, r.MaxParts];
    assert.deepEqual(shape(await m.listParts("lp", id, undefined, 1)), [[1], true, "1", 1]);
    assert.deepEqual(shape(await m.listParts("lp", id, "2", 1)), [[3], true, "3", 1]);
    assert.deepEqual(shape(await m.listParts("lp", id, "3", 1000)), [[7], false, "7", 1000]);
    assert.deepEqual(shape(await m.listParts("lp", id, undefined, 5000)), [
      [1, 2, 3, 7],
      false,
      "7",
      1000,
    ]);
    for (const q of ["max-parts=0", "max-parts=-1", "max-parts=abc", "part-number-marker=abc"]) {
      const res = await raw(`${svc.url}/${B}/lp?uploadId=${id}&${q}`);
      assert.deepEqual([res.status, res.code], [400, "InvalidArgument"], q);
    }
    await m.abort("lp", id);
  });

  await t.step("ListMultipartUploads: prefix, delimiter, markers, paging", async () => {
    const L = "mpu-list";
    await s3.send(new S3.CreateBucketCommand({ Bucket: L }));
    const l = mp(s3, L);
    for (const key of ["a/1", "a/2", "b", "b", "c"]) await l.create(key);
    const keys = (r: { Uploads?: { Key?: string }[] }) => (r.Uploads ?? []).map((u) => u.Key);
    const ids = (r: { Uploads?: { Key?: string; UploadId?: string }[] }) =>
      (r.Uploads ?? []).map((u) => `${u.Key}#${u.UploadId}`);
    const all = ids(await l.uploads());
    assert.deepEqual(all.map((s) => s.split("#")[0]), ["a/1", "a/2", "b", "b", "c"]);
    assert.deepEqual(keys(await l.uploads({ Prefix: "a/" })), ["a/1", "a/2"]);
    const delimited = await l.uploads({ Delimiter: "/" });
    assert.deepEqual([keys(delimited), delimited.CommonPrefixes?.map((c) => c.Prefix)], [[
      "b",
      "b",
      "c",
    ], ["a/"]]);
    // Paging two at a time visits every upload exactly once, in order.
    const seen: string[] = [];
    let marker: Partial<S3.ListMultipartUploadsCommandInput> = {};
    for (let pages = 0; pages < 5; pages++) {
      const page = await l.uploads({ MaxUploads: 2, ...marker });
      assert.ok((page.Uploads ?? []).length <= 2);
      seen.push(...ids(page));
      if (!page.IsTruncated) break;
      marker = { KeyMarker: page.NextKeyMarker, UploadIdMarker: page.NextUploadIdMarker };
    }
    assert.deepEqual(seen, all);
    assert.deepEqual(keys(await l.uploads({ KeyMarker: "b" })), ["c"]);
    assert.deepEqual(
      ids(await l.uploads({ KeyMarker: "b", UploadIdMarker: all[2].split("#")[1] })),
      all.slice(3),
    );
    // Paging with a delimiter: a page may end on a common prefix, which is not repeated.
    const rolled: string[] = [];
    let resume: Partial<S3.ListMultipartUploadsCommandInput> = {};
    for (let pages = 0; pages < 8; pages++) {
      const page = await l.uploads({ Delimiter: "/", MaxUploads: 1, ...resume });
      rolled.push(...keys(page) as string[], ...(page.CommonPrefixes ?? []).map((c) => c.Prefix!));
      if (!page.IsTruncated) break;
      assert.ok(page.NextKeyMarker, "a truncated page names where to resume");
      resume = { KeyMarker: page.NextKeyMarker, UploadIdMarker: page.NextUploadIdMarker };
    }
    assert.deepEqual(rolled, ["a/", "b", "b", "c"]);
    // Keys in UTF-8 byte order, as S3 and ListObjects order them (U+E000 before U+1F600).
    await l.create("\u{1F600}");
    await l.create("\uE000");
    assert.deepEqual(keys(await l.uploads({ Prefix: "\u{1F600}" })), ["\u{1F600}"]);
    assert.deepEqual(keys(await l.uploads()).slice(-2), ["\uE000", "\u{1F600}"]);
    assert.deepEqual(keys(await l.uploads({ KeyMarker: "\uE000" })), ["\u{1F600}"]);
    const bad = await raw(`${svc.url}/${L}?uploads&max-uploads=abc`);
    assert.deepEqual([bad.status, bad.code], [400, "InvalidArgument"]);
    await rejects(mp(s3, "no-such-bucket").uploads(), 404, "NoSuchBucket");
  });

  await t.step(
    "UploadPartCopy with and without a range; out of range is InvalidRange",
    async () => {
      const src = randomBytes(6 * MiB), small = randomBytes(100);
      await s3.send(new S3.PutObjectCommand({ Bucket: B, Key: "src", Body: src }));
      await s3.send(new S3.PutObjectCommand({ Bucket: B, Key: "small", Body: small }));
      const id = await m.create("copied");
      const copy = async (PartNumber: number, source: string, CopySourceRange?: string) => {
        const input = {
          Bucket: B,
          Key: "copied",
          UploadId: id,
          PartNumber,
          CopySource: `${B}/${source}`,
          CopySourceRange,
        };
        return {
          PartNumber,
          ETag: (await s3.send(new S3.UploadPartCopyCommand(input))).CopyPartResult!.ETag!,
        };
      };
      const first = await copy(1, "src", `bytes=1-${5 * MiB}`);
      assert.equal(first.ETag, `"${md5hex(src.subarray(1, 5 * MiB + 1))}"`);
      const second = await copy(2, "small");
      assert.equal(second.ETag, `"${md5hex(small)}"`);
      await rejects(copy(3, "src", `bytes=0-${6 * MiB}`), 416, "InvalidRange");
      await rejects(copy(3, "src", `bytes=10-5`), 416, "InvalidRange");
      await rejects(copy(3, "missing"), 404, "NoSuchKey");
      await m.complete("copied", id, [first, second]);
      assert.deepEqual(await m.bytes("copied"), concat(src.subarray(1, 5 * MiB + 1), small));
    },
  );

  await t.step("lib-storage Upload of a 16 MiB ReadableStream", async () => {
    const big = randomBytes(16 * MiB);
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < big.length; i += 700_000) c.enqueue(big.slice(i, i + 700_000));
        c.close();
      },
    });
    await new Upload({ client: s3, params: { Bucket: B, Key: "streamed", Body: stream } }).done();
    const parts = [0, 1, 2, 3].map((i) => big.subarray(i * 5 * MiB, (i + 1) * 5 * MiB));
    assert.equal((await m.head("streamed")).ETag, multipartEtag(parts));
    assert.deepEqual(await m.bytes("streamed"), big);
  });

  await t.step("conditional Complete: If-None-Match * on an existing key is 412", async () => {
    const id = await m.create("three");
    const p = await m.part("three", id, 1, p1);
    await rejects(m.complete("three", id, [p], { IfNoneMatch: "*" }), 412, "PreconditionFailed");
    assert.equal((await m.head("three")).ContentLength, 10 * MiB + 1);
    const fresh = await m.create("fresh");
    await m.complete("fresh", fresh, [await m.part("fresh", fresh, 1, p1)], { IfNoneMatch: "*" });
    assert.deepEqual(await m.bytes("fresh"), p1);
  });
  s3.destroy();
});

Deno.test("multipart: a replaced part counts once; upload count is capped", async () => {
  const env = {
    SVC_MAX_OBJECT_SIZE: String(11 * MiB),
    SVC_MAX_MULTIPART_UPLOADS: "2",
    // The derived global cap (11 MiB × 2 ÷ 4) would refuse the second part: not this test's subject
    // (tests/multipart_budget_test.ts).
    SVC_MAX_TOTAL_MULTIPART_BYTES: String(1024 * MiB),
  };
  await using svc = await startSvc({ env });
  const s3 = svc.client();
  await s3.send(new S3.CreateBucketCommand({ Bucket: "lim" }));
  const m = mp(s3, "lim");
  const id = await m.create("k");
  const a = randomBytes(5 * MiB), b = randomBytes(5 * MiB);
  const parts = [await m.part("k", id, 1, a), await m.part("k", id, 2, b)];
  // The total is bounded at Complete by max_passthrough_object_size (multipart_size_test.ts).
  parts[1] = await m.part("k", id, 2, b); // replacing a part does not count it twice
  assert.deepEqual((await m.listParts("k", id)).Parts?.map((p) => p.PartNumber), [1, 2]);
  const second = await m.create("k2");
  // The third concurrent upload is refused (raw fetch: the SDK would retry SlowDown).
  const third = await raw(`${svc.url}/lim/k3?uploads`, "POST");
  assert.deepEqual([third.status, third.code], [503, "SlowDown"]);
  await m.complete("k", id, parts);
  assert.deepEqual(await m.bytes("k"), concat(a, b));
  await m.abort("k3", await m.create("k3")); // completing freed a slot
  await m.abort("k2", second);
  // The cap holds under concurrency: of 8 simultaneous Creates exactly 2 get an upload.
  const race = [...Array(8).keys()].map((i) => raw(`${svc.url}/lim/r${i}?uploads`, "POST"));
  const statuses = (await Promise.all(race)).map((r) => r.status).sort();
  assert.deepEqual(statuses, [200, 200, ...Array(6).fill(503)]);
  s3.destroy();
});

// A restart under SVC_TEST_BACKEND would also replace the backing store the objects live in.
Deno.test({
  name: "multipart: uploads survive a restart; idle uploads are swept at startup",
  ignore: !objectsOnLocalDisk,
  fn: async () => {
    const dataDir = await Deno.makeTempDir({ prefix: "svc-mp-restart-" });
    try {
      const p1 = randomBytes(5 * MiB), p2 = randomBytes(1234);
      let id: string, first: Part, idle: string;
      {
        await using svc = await startSvc({ dataDir });
        const s3 = svc.client();
        await s3.send(new S3.CreateBucketCommand({ Bucket: "rsb" }));
        id = await mp(s3, "rsb").create("k");
        first = await mp(s3, "rsb").part("k", id, 1, p1);
        s3.destroy();
      }
      {
        await using svc = await startSvc({ dataDir });
        const s3 = svc.client();
        const m = mp(s3, "rsb");
        const done = await m.complete("k", id, [first, await m.part("k", id, 2, p2)]);
        assert.equal(done.ETag, multipartEtag([p1, p2]));
        assert.deepEqual(await m.bytes("k"), concat(p1, p2));
        idle = await m.create("idle");
        await m.part("idle", idle, 1, p2);
        s3.destroy();
      }
      await new Promise((r) => setTimeout(r, 800)); // past a 0.36 s TTL
      {
        await using svc = await startSvc({
          dataDir,
          env: { SVC_MULTIPART_IDLE_TTL_HOURS: "0.0001" },
        });
        const s3 = svc.client();
        const m = mp(s3, "rsb");
        await rejects(m.part("idle", idle, 2, p2), 404, "NoSuchUpload");
        assert.equal((await m.uploads()).Uploads?.length ?? 0, 0);
        // The completed object is untouched by the sweep; a fresh upload still works.
        assert.equal((await m.head("k")).ContentLength, p1.length + p2.length);
        const fresh = await m.create("fresh");
        await m.part("fresh", fresh, 1, p2);
        s3.destroy();
      }
    } finally {
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});

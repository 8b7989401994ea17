import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { SvcError } from "../../lib/errors.ts";
import type { ObjectMeta, StagedObject } from "../../storage/backend.ts";
import { S3Client } from "../../storage/s3/s3-client.ts";
import { errorResponse, scriptedServer, testOptions } from "../../testing/s3-test-server.ts";
import { BackendUploads } from "./backend-uploads.ts";
import { INTERNAL_PREFIX } from "./backend-records.ts";
import { claimCompletion } from "./upload-store.ts";

interface Stored {
  body: Uint8Array<ArrayBuffer>;
  etag: string;
  lastModified: number;
}

/**
 * A bucket in memory behind the raw S3 client (PUT with If-None-Match / If-Match, GET, DELETE,
 * ListObjectsV2 with prefix, delimiter and start-after), and the storage stack's part writes
 * (stageObject/commit, getObject) on the same map.
 */
function memoryBucket(clock: { now: number }) {
  const keys = new Map<string, Stored>();
  const put = (key: string, body: Uint8Array<ArrayBuffer>) => {
    const etag = createHash("md5").update(body).digest("hex");
    keys.set(key, { body, etag, lastModified: clock.now });
    return etag;
  };
  const server = scriptedServer(async (request) => {
    const url = new URL(request.url);
    const key = decodeURIComponent(url.pathname.split("/").slice(2).join("/"));
    const found = keys.get(key);
    if (request.method === "PUT") {
      if (request.headers.get("if-none-match") === "*" && found) {
        return errorResponse(412, "PreconditionFailed");
      }
      const ifMatch = request.headers.get("if-match");
      if (ifMatch !== null && `"${found?.etag}"` !== ifMatch && found?.etag !== ifMatch) {
        return errorResponse(412, "PreconditionFailed");
      }
      const etag = put(key, new Uint8Array(await request.arrayBuffer()));
      return new Response(null, { headers: { etag: `"${etag}"` } });
    }
    if (request.method === "DELETE") {
      keys.delete(key);
      return new Response(null, { status: 204 });
    }
    if (key !== "") {
      if (!found) return errorResponse(404, "NoSuchKey");
      return new Response(found.body, { headers: { etag: `"${found.etag}"` } });
    }
    const prefix = url.searchParams.get("prefix") ?? "";
    const delimiter = url.searchParams.get("delimiter");
    const after = url.searchParams.get("start-after") ?? "";
    const contents: string[] = [];
    const prefixes = new Set<string>();
    for (const name of [...keys.keys()].sort()) {
      if (!name.startsWith(prefix) || name <= after) continue;
      const cut = delimiter ? name.indexOf(delimiter, prefix.length) : -1;
      if (cut >= 0) prefixes.add(name.slice(0, cut + 1));
      else {
        const entry = keys.get(name)!;
        contents.push(
          `<Contents><Key>${encodeURIComponent(name)}</Key><Size>${entry.body.length}</Size>` +
            `<ETag>"${entry.etag}"</ETag><LastModified>${
              new Date(entry.lastModified).toISOString()
            }</LastModified></Contents>`,
        );
      }
    }
    const common = [...prefixes].map((p) =>
      `<CommonPrefixes><Prefix>${encodeURIComponent(p)}</Prefix></CommonPrefixes>`
    );
    return new Response(
      `<ListBucketResult><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated>${
        contents.join("")
      }${common.join("")}</ListBucketResult>`,
    );
  });
  const client = new S3Client(testOptions(server.endpoint, { maxAttempts: 1 }));
  const stack = {
    async stageObject(_bucket: string, key: string, body: ReadableStream<Uint8Array>) {
      const bytes = new Uint8Array(await new Response(body).arrayBuffer());
      const staged: StagedObject = {
        size: bytes.length,
        commit: (meta: ObjectMeta) => {
          put(key, bytes);
          return Promise.resolve({ key, storedSize: bytes.length, meta });
        },
        abort: () => Promise.resolve(),
      };
      return staged;
    },
    getObject(_bucket: string, key: string) {
      const found = keys.get(key);
      if (!found) return Promise.resolve(null);
      const meta = { size: found.body.length } as ObjectMeta;
      return Promise.resolve({
        info: { key, storedSize: found.body.length, meta },
        body: new Blob([found.body]).stream(),
      });
    },
  };
  const uploads = (now = () => clock.now) =>
    new BackendUploads({
      stack,
      locate: (bucket) => Promise.resolve({ client, real: bucket, bucket }),
      buckets: () => Promise.resolve(["b"]),
      now,
    });
  return { keys, uploads, close: () => server.close() };
}

const text = (s: string) => new Blob([s]).stream();
const upload = { bucket: "b", key: "k", contentType: "", userMeta: {}, headers: {} };

Deno.test("backend uploads: two instances share one upload; the newest version of a part wins", async () => {
  const clock = { now: Date.UTC(2026, 10, 28, 20) };
  const mem = memoryBucket(clock);
  try {
    const [a, b] = [mem.uploads(), mem.uploads()];
    const record = await a.create(upload);
    assert.deepEqual(await b.get("b", record.uploadId), record);
    assert.equal(await b.get("other", record.uploadId), null);
    await a.putPart("b", record.uploadId, 1, text("one"), {});
    clock.now += 5;
    const replaced = await b.putPart("b", record.uploadId, 1, text("uno"), {});
    await b.putPart("b", record.uploadId, 2, text("two"), {});
    const parts = await a.listParts("b", record.uploadId);
    assert.deepEqual(parts.map((p) => [p.partNumber, p.size, p.etag]), [
      [1, 3, replaced.etag],
      [2, 3, createHash("md5").update("two").digest("hex")],
    ]);
    // The older version of part 1 is gone, bytes and index.
    assert.equal([...mem.keys.keys()].filter((k) => k.includes("/p00001.")).length, 1);
    const body = await a.openPart("b", record.uploadId, parts[0]);
    assert.equal(await new Response(body).text(), "uno");
    assert.deepEqual((await b.list("b")).map((u) => u.uploadId), [record.uploadId]);
    // Removal from two instances: both succeed, nothing remains.
    assert.equal(await a.remove("b", record.uploadId), true);
    assert.equal(await b.remove("b", record.uploadId), false);
    assert.deepEqual([...mem.keys.keys()], []);
    await assert.rejects(
      () => a.putPart("b", record.uploadId, 3, text("x"), {}),
      (err) => err instanceof SvcError && err.code === "NoSuchUpload",
    );
    assert.equal(await a.get("b", "../../etc"), null);
  } finally {
    await mem.close();
  }
});

Deno.test("backend uploads: one claim at a time; a stale one is taken over; completion records stand", async () => {
  const clock = { now: Date.UTC(2026, 10, 28, 20) };
  const mem = memoryBucket(clock);
  try {
    const [a, b] = [mem.uploads(), mem.uploads()];
    const { uploadId } = await a.create(upload);
    const first = await a.claim("b", uploadId);
    assert.ok(first);
    assert.equal(await b.claim("b", uploadId), null);
    // Another Complete waits, then answers from the record the claimant keeps.
    const waiting = claimCompletion(b, "b", uploadId, undefined, 5_000);
    const done = {
      uploadId,
      bucket: "b",
      key: "k",
      parts: [{ partNumber: 1, etag: "e" }],
      etag: "x-1",
      storage: "passthrough" as const,
      completedAt: clock.now,
    };
    assert.deepEqual(await a.recordCompleted(done), done);
    assert.deepEqual((await waiting).done, done);
    // The first record stands against a second.
    assert.deepEqual(await b.recordCompleted({ ...done, etag: "other-1" }), done);
    await first!.release();
    const second = await b.claim("b", uploadId);
    assert.ok(second);
    // A claim older than the stale limit belongs to a dead holder.
    assert.equal(await a.claim("b", uploadId), null);
    clock.now += 31 * 60 * 1000;
    const third = await a.claim("b", uploadId);
    assert.ok(third);
    // The dead holder's release leaves the new holder's claim alone.
    await second!.release();
    assert.equal(await b.claim("b", uploadId), null);
    await third!.release();
  } finally {
    await mem.close();
  }
});

Deno.test("backend uploads: the sweep removes idle uploads once and keeps busy ones", async () => {
  const clock = { now: Date.UTC(2026, 10, 28, 20) };
  const mem = memoryBucket(clock);
  try {
    const [a, b] = [mem.uploads(), mem.uploads()];
    const idle = await a.create({ ...upload, key: "idle" });
    await a.putPart("b", idle.uploadId, 1, text("12345"), {});
    clock.now += 3600_000;
    const busy = await a.create({ ...upload, key: "busy" });
    const results = await Promise.all([a.sweep(1800_000, clock.now), b.sweep(1800_000, clock.now)]);
    assert.equal(results[0].count + results[1].count, 1);
    assert.equal(results[0].bytes + results[1].bytes, 5);
    assert.equal(await a.get("b", idle.uploadId), null);
    assert.ok(await a.get("b", busy.uploadId));
    assert.ok(
      [...mem.keys.keys()].every((k) => k.startsWith(`${INTERNAL_PREFIX}${busy.uploadId}/`)),
    );
  } finally {
    await mem.close();
  }
});

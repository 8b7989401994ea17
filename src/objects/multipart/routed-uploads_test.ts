import assert from "node:assert/strict";
import type { BackendUploads } from "./backend-uploads.ts";
import { CompletedUploads } from "./completed-uploads.ts";
import { LocalUploads, RoutedUploads } from "./routed-uploads.ts";
import { MultipartStore, type NewUpload, type UploadRecord } from "./multipart-store.ts";

/** A backend store that only records what reached it. */
function backendStub(calls: string[]): BackendUploads {
  const record = (input: NewUpload): UploadRecord => ({
    ...input,
    uploadId: "B".repeat(32),
    initiated: 1,
  });
  return {
    create: (input: NewUpload) => {
      calls.push(`create ${input.bucket}`);
      return Promise.resolve(record(input));
    },
    get: (bucket: string, id: string) => {
      calls.push(`get ${bucket} ${id.slice(0, 1)}`);
      return Promise.resolve(null);
    },
    list: (bucket: string) => {
      calls.push(`list ${bucket}`);
      return Promise.resolve([
        record({ bucket, key: "z", contentType: "", userMeta: {}, headers: {} }),
      ]);
    },
    completed: () => Promise.resolve(null),
  } as unknown as BackendUploads;
}

Deno.test("routed uploads: S3 buckets go to the backend; local uploads stay served locally", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-routed-" });
  try {
    const local = new LocalUploads(
      await MultipartStore.open(`${dir}/multipart`),
      await CompletedUploads.open(`${dir}/completed`),
    );
    const calls: string[] = [];
    const routed = new RoutedUploads(
      local,
      backendStub(calls),
      (bucket) => Promise.resolve(bucket === "remote"),
    );
    const input = { key: "k", contentType: "", userMeta: {}, headers: {} };
    // An upload an older svc kept locally for an S3 bucket.
    const old = await local.create({ ...input, bucket: "remote" });
    assert.equal(await routed.isLocal("remote", old.uploadId), true);
    assert.deepEqual(await routed.get("remote", old.uploadId), old);
    await routed.putPart("remote", old.uploadId, 1, new Blob(["abc"]).stream(), {});
    assert.equal((await routed.listParts("remote", old.uploadId)).length, 1);

    // New uploads of the S3 bucket go to the backend; filesystem buckets stay local.
    await routed.create({ ...input, bucket: "remote" });
    const here = await routed.create({ ...input, bucket: "disk" });
    assert.equal(await routed.isLocal("disk", here.uploadId), true);
    assert.equal(await routed.isLocal("remote", "B".repeat(32)), false);
    assert.deepEqual(calls, ["create remote"]);

    // Listings of the S3 bucket show both, in key order.
    const listed = await routed.list("remote");
    assert.deepEqual(listed.map((u) => u.key), ["k", "z"]);
    assert.deepEqual((await routed.list("disk")).map((u) => u.uploadId), [here.uploadId]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * Black-box tests of listings around a key that is also a prefix (`one/two` beside
 * `one/two/three`): once the keys below it are deleted, `one/two/` is no longer a common prefix,
 * whether listed whole, with a delimiter, or one key per page. On the filesystem backend the
 * object then still lives nested in its directory (fs-nesting.ts).
 */
import assert from "node:assert/strict";
import { ListObjectsV2Command, type S3Client } from "@aws-sdk/client-s3";
import { signedFetch as fetch, startSvc } from "./helpers/svc.ts";

const BUCKET = "nested-listing";

/** Every key and common prefix of a listing, paged `maxKeys` at a time, as `key` / `[prefix]`. */
async function listAll(
  s3: S3Client,
  prefix: string,
  delimiter: string | undefined,
  maxKeys?: number,
): Promise<string[]> {
  const out: string[] = [];
  let token: string | undefined;
  for (let pages = 0; pages < 50; pages++) {
    const page = await s3.send(
      new ListObjectsV2Command({
        Bucket: BUCKET,
        Prefix: prefix,
        Delimiter: delimiter,
        MaxKeys: maxKeys,
        ContinuationToken: token,
      }),
    );
    const entries = [
      ...(page.Contents ?? []).map((c) => c.Key!),
      ...(page.CommonPrefixes ?? []).map((c) => `[${c.Prefix}]`),
    ];
    if (maxKeys !== undefined) assert.ok(entries.length <= maxKeys);
    // An empty page that still claims more would mean a prefix was counted and then dropped.
    if (page.IsTruncated) assert.ok(entries.length > 0, "a truncated page lists something");
    out.push(...entries);
    token = page.NextContinuationToken;
    if (!page.IsTruncated) return out.sort();
  }
  throw new Error("Listing did not end");
}

async function put(url: string, key: string, body = "x") {
  const res = await fetch(`${url}/${BUCKET}/${key}`, { method: "PUT", body });
  assert.equal(res.status, 200, await res.text());
}

async function del(url: string, key: string) {
  const res = await fetch(`${url}/${BUCKET}/${key}`, { method: "DELETE" });
  assert.equal(res.status, 204, await res.text());
}

Deno.test("listing: a key whose keys below it were deleted is no common prefix", async (t) => {
  await using svc = await startSvc();
  const s3 = svc.client();
  assert.equal((await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);
  for (const key of ["one/two", "one/two/three", "one/twoa", "one/zz/x", "one/m/", "one/m"]) {
    await put(svc.url, key);
  }

  await t.step("before the delete, one/two/ is a common prefix", async () => {
    for (const maxKeys of [undefined, 1]) {
      assert.deepEqual(
        await listAll(s3, "one/", "/", maxKeys),
        [
          "[one/m/]",
          "[one/two/]",
          "[one/zz/]",
          "one/m",
          "one/two",
          "one/twoa",
        ].sort(),
      );
    }
  });

  await del(svc.url, "one/two/three");
  const expected = ["[one/m/]", "[one/zz/]", "one/m", "one/two", "one/twoa"].sort();

  await t.step("with delimiter, unpaged and one key per page", async () => {
    assert.deepEqual(await listAll(s3, "one/", "/"), expected);
    assert.deepEqual(await listAll(s3, "one/", "/", 1), expected);
    assert.deepEqual(await listAll(s3, "one/", "/", 2), expected);
    assert.deepEqual(await listAll(s3, "one/t", "/", 1), ["one/two", "one/twoa"]);
    assert.deepEqual(await listAll(s3, "one/two", "/"), ["one/two", "one/twoa"]);
    assert.deepEqual(await listAll(s3, "one/two/", "/"), []);
    assert.deepEqual(await listAll(s3, "", "/"), ["[one/]"]);
  });

  await t.step("without delimiter, unpaged and one key per page", async () => {
    const keys = ["one/m", "one/m/", "one/two", "one/twoa", "one/zz/x"];
    assert.deepEqual(await listAll(s3, "one/", undefined), keys);
    assert.deepEqual(await listAll(s3, "one/", undefined, 1), keys);
    assert.deepEqual(await listAll(s3, "one/two/", undefined), []);
  });

  await t.step("the object itself is intact, and keys below it can come back", async () => {
    const got = await fetch(`${svc.url}/${BUCKET}/one/two`);
    assert.equal(got.status, 200);
    assert.equal(await got.text(), "x");
    await put(svc.url, "one/two/again");
    assert.deepEqual(await listAll(s3, "one/", "/", 1), [...expected, "[one/two/]"].sort());
    await del(svc.url, "one/two/again");
    assert.deepEqual(await listAll(s3, "one/", "/", 1), expected);
  });

  await t.step(
    "a marker one/two/ keeps the prefix; deleting the object keeps the marker",
    async () => {
      await put(svc.url, "one/two/", "");
      assert.deepEqual(await listAll(s3, "one/", "/", 1), [...expected, "[one/two/]"].sort());
      await del(svc.url, "one/two");
      const withoutObject = expected.filter((e) => e !== "one/two");
      assert.deepEqual(await listAll(s3, "one/", "/"), [...withoutObject, "[one/two/]"].sort());
      await del(svc.url, "one/two/");
      assert.deepEqual(await listAll(s3, "one/", "/", 1), withoutObject);
    },
  );
});

/**
 * Black-box DeleteObjects tests (`POST /bucket?delete`): results, Quiet, the 1000-key limit,
 * hostile or broken XML, and exact-key semantics for markers. One server for the whole file.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as S3 from "@aws-sdk/client-s3";
import { signedFetch as fetch, startSvc } from "./helpers/svc.ts";

const B = "del-bucket";

function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function deleteXml(keys: string[], quiet = false): string {
  const objects = keys.map((k) => `<Object><Key>${escapeXml(k)}</Key></Object>`).join("");
  return `<Delete>${quiet ? "<Quiet>true</Quiet>" : ""}${objects}</Delete>`;
}

Deno.test("DeleteObjects: results, Quiet, limits, malformed bodies, markers", async (t) => {
  await using svc = await startSvc();
  const s3 = svc.client();
  await s3.send(new S3.CreateBucketCommand({ Bucket: B }));
  const put = (Key: string, Body: string | Uint8Array = "x") =>
    s3.send(new S3.PutObjectCommand({ Bucket: B, Key, Body }));
  const keysNow = async (Prefix?: string) => {
    const out = await s3.send(new S3.ListObjectsV2Command({ Bucket: B, Prefix }));
    return (out.Contents ?? []).map((c) => c.Key!);
  };
  /** Raw POST ?delete: status, error code, and the Deleted/Error keys of the result. */
  const post = async (body: string, headers: HeadersInit = {}, bucket = B) => {
    const res = await fetch(`${svc.url}/${bucket}?delete`, { method: "POST", body, headers });
    const text = await res.text();
    const all = (tag: string) =>
      [...text.matchAll(new RegExp(`<${tag}>\\s*<Key>([^<]*)</Key>`, "g"))].map((m) => m[1]);
    return {
      status: res.status,
      code: /<Error>\s*<Code>([^<]*)<\/Code>/.exec(text)?.[1],
      deleted: all("Deleted"),
      errors: all("Error"),
      text,
    };
  };

  await t.step("three keys, one missing: all reported Deleted, in order", async () => {
    const keys = ["one", "a&b <c> 'q\" ü/ñ", " sp ace "];
    for (const key of keys) await put(key);
    const out = await s3.send(
      new S3.DeleteObjectsCommand({
        Bucket: B,
        Delete: { Objects: [...keys, "never-existed"].map((Key) => ({ Key })) },
      }),
    );
    assert.deepEqual(out.Deleted?.map((d) => d.Key), [...keys, "never-existed"]);
    assert.equal(out.Errors?.length ?? 0, 0);
    assert.deepEqual(await keysNow(), []);
  });

  await t.step("Quiet: an empty result, objects still deleted", async () => {
    await put("q1");
    await put("q2");
    const out = await s3.send(
      new S3.DeleteObjectsCommand({
        Bucket: B,
        Delete: { Quiet: true, Objects: [{ Key: "q1" }, { Key: "q2" }, { Key: "q3" }] },
      }),
    );
    assert.equal(out.Deleted?.length ?? 0, 0);
    assert.equal(out.Errors?.length ?? 0, 0);
    assert.deepEqual(await keysNow("q"), []);
    const raw = await post(deleteXml(["q1"], true));
    assert.equal(raw.status, 200);
    assert.match(raw.text, /<DeleteResult[^>]*(\/>|>\s*<\/DeleteResult>)\s*$/);
  });

  await t.step("1000 keys are accepted; 1001 are MalformedXML and delete nothing", async () => {
    const existing = Array.from({ length: 40 }, (_, i) => `many/${String(i).padStart(4, "0")}`);
    for (const key of existing) await put(key);
    const keys = Array.from({ length: 1000 }, (_, i) => `many/${String(i).padStart(4, "0")}`);
    const over = await post(deleteXml([...keys, "many/extra"]));
    assert.deepEqual([over.status, over.code], [400, "MalformedXML"]);
    assert.equal((await keysNow("many/")).length, 40);
    const out = await s3.send(
      new S3.DeleteObjectsCommand({ Bucket: B, Delete: { Objects: keys.map((Key) => ({ Key })) } }),
    );
    assert.equal(out.Deleted?.length, 1000);
    assert.deepEqual(await keysNow("many/"), []);
  });

  await t.step("malformed, empty, hostile (DOCTYPE/entity) bodies are MalformedXML", async () => {
    await put("victim");
    const bodies = [
      "",
      "not xml at all",
      "<Delete>",
      "<Delete><Object><Key>victim</Key></Object>",
      "<Delete></Delete>",
      "<Delete><Object></Object></Delete>",
      "<Delete><Object><Key></Key></Object></Delete>",
      "<Other><Object><Key>victim</Key></Object></Other>",
      "<Delete><Object><Key>victim</Key></Object></Delete><Delete/>",
      `<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x "victim">]>` +
      `<Delete><Object><Key>&x;</Key></Object></Delete>`,
      `<?xml version="1.0"?><!DOCTYPE d SYSTEM "file:///etc/passwd">` +
      `<Delete><Object><Key>victim</Key></Object></Delete>`,
      `<Delete><Object><Key>&undefined;</Key></Object></Delete>`,
    ];
    for (const body of bodies) {
      const res = await post(body);
      assert.deepEqual([res.status, res.code], [400, "MalformedXML"], body);
    }
    assert.deepEqual(await keysNow("victim"), ["victim"], "nothing was deleted");
  });

  await t.step(
    "Content-MD5 and x-amz-content-sha256 are checked; a mismatch deletes nothing",
    async () => {
      const body = deleteXml(["victim"]);
      const wrong = createHash("md5").update(body + " ").digest("base64");
      const bad = await post(body, { "content-md5": wrong });
      assert.deepEqual([bad.status, bad.code], [400, "BadDigest"]);
      assert.deepEqual(await keysNow("victim"), ["victim"]);
      const sha = createHash("sha256").update(body + " ").digest("hex");
      const lie = await post(body, { "x-amz-content-sha256": sha });
      assert.deepEqual([lie.status, lie.code], [400, "XAmzContentSHA256Mismatch"]);
      assert.deepEqual(await keysNow("victim"), ["victim"]);
      const right = createHash("md5").update(body).digest("base64");
      const ok = await post(body, { "content-md5": right });
      assert.deepEqual([ok.status, ok.deleted], [200, ["victim"]]);
    },
  );

  await t.step("a key ending in / deletes only that marker", async () => {
    for (const key of ["dir/", "dir/a", "dir/sub/b", "dirx"]) await put(key, new Uint8Array(0));
    const out = await post(deleteXml(["dir/"]));
    assert.deepEqual([out.status, out.deleted], [200, ["dir/"]]);
    assert.deepEqual(await keysNow("dir"), ["dir/a", "dir/sub/b", "dirx"]);
    const again = await post(deleteXml(["dir/sub/", "dir/a"]));
    assert.deepEqual(again.deleted, ["dir/sub/", "dir/a"]);
    assert.deepEqual(await keysNow("dir"), ["dir/sub/b", "dirx"]);
  });

  await t.step("missing bucket is NoSuchBucket", async () => {
    const res = await post(deleteXml(["k"]), {}, "no-such-bucket");
    assert.deepEqual([res.status, res.code], [404, "NoSuchBucket"]);
  });
  s3.destroy();
});

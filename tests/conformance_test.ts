/**
 * Black-box tests of small S3 conformance gaps and input holes: an oversized
 * `x-amz-decoded-content-length`, invalid UTF-8 in a DeleteObjects document, `Content-Encoding:
 * aws-chunked` on a body that is not chunked, and ListObjects v1 with `encoding-type=url` through
 * boto3 (skipped without python3 + boto3). Bucket-name and CreateBucketConfiguration rules are in
 * buckets_test.ts.
 */
import assert from "node:assert/strict";
import { ACCESS_KEY, SECRET_KEY, signedFetch as fetch, startSvc } from "./helpers/svc.ts";
import { assertError } from "./helpers/assertions.ts";
import { signedPostForm } from "./helpers/post-form.ts";

const BUCKET = "gaps";

async function hasBoto3(): Promise<boolean> {
  try {
    const probe = new Deno.Command("python3", {
      args: ["-c", "import boto3"],
      stdout: "null",
      stderr: "null",
    });
    return (await probe.output()).success;
  } catch {
    return false;
  }
}

Deno.test("conformance: input holes and aws-chunked labels", async (t) => {
  await using svc = await startSvc();
  const url = (key: string) => `${svc.url}/${BUCKET}/${key}`;
  assert.equal((await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);

  await t.step("x-amz-decoded-content-length of 2^53 or more is 400, not 500", async () => {
    for (const length of ["9007199254740992", "99999999999999999999999"]) {
      await assertError(
        fetch(url("huge"), {
          method: "PUT",
          body: "0\r\n\r\n",
          headers: {
            "x-amz-content-sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
            "content-encoding": "aws-chunked",
            "x-amz-decoded-content-length": length,
          },
        }),
        400,
        "InvalidArgument",
      );
    }
    assert.equal((await fetch(url("huge"), { method: "HEAD" })).status, 404);
    assert.deepEqual(svc.logs.filter((l) => /request failed/.test(l)), [], "no internal errors");
  });

  await t.step("DeleteObjects with invalid UTF-8 is MalformedXML and deletes nothing", async () => {
    // U+FFFD is what a lenient decoder would turn the 0xFF byte into.
    const victim = "victim-\uFFFD";
    assert.equal(
      (await fetch(url(encodeURIComponent(victim)), { method: "PUT", body: "x" })).status,
      200,
    );
    const enc = new TextEncoder();
    const body = new Uint8Array([
      ...enc.encode("<Delete><Object><Key>victim-"),
      0xff,
      ...enc.encode("</Key></Object></Delete>"),
    ]);
    await assertError(
      fetch(`${svc.url}/${BUCKET}?delete`, { method: "POST", body }),
      400,
      "MalformedXML",
    );
    assert.equal((await fetch(url(encodeURIComponent(victim)), { method: "HEAD" })).status, 200);
  });

  await t.step("a POST form field with invalid UTF-8 is refused, not read as U+FFFD", async () => {
    const form = signedPostForm(BUCKET, "posted", "x", { tagging: "<Tagging>MARK</Tagging>" });
    const request = new Request(`${svc.url}/${BUCKET}`, { method: "POST", body: form });
    const bytes = new Uint8Array(await request.arrayBuffer());
    const at = new TextDecoder("latin1").decode(bytes).indexOf("MARK");
    bytes[at] = 0xff;
    await assertError(
      globalThis.fetch(request.url, {
        method: "POST",
        body: bytes,
        headers: { "content-type": request.headers.get("content-type")! },
      }),
      400,
      "MalformedPOSTRequest",
    );
    assert.equal((await fetch(url("posted"), { method: "HEAD" })).status, 404);
  });

  await t.step(
    "Content-Encoding: aws-chunked on a plain body is accepted, not stored",
    async () => {
      const plain = await fetch(url("plain"), {
        method: "PUT",
        body: "not chunked at all",
        headers: { "content-encoding": "aws-chunked" },
      });
      assert.equal(plain.status, 200, await plain.text());
      const got = await fetch(url("plain"));
      assert.equal(got.headers.get("content-encoding"), null);
      assert.equal(await got.text(), "not chunked at all");

      const listed = await fetch(url("gz"), {
        method: "PUT",
        body: "also plain",
        headers: { "content-encoding": "aws-chunked, gzip" },
      });
      assert.equal(listed.status, 200, await listed.text());
      const head = await fetch(url("gz"), { method: "HEAD" });
      assert.equal(head.headers.get("content-encoding"), "gzip");
      assert.equal(head.headers.get("content-length"), String("also plain".length));
    },
  );
});

Deno.test({
  name: "conformance: ListObjects v1 with encoding-type=url round-trips through boto3",
  ignore: !(await hasBoto3()),
  fn: async () => {
    await using svc = await startSvc();
    const script = new URL("./helpers/list_v1_boto3.py", import.meta.url).pathname;
    const out = await new Deno.Command("python3", {
      args: [script, svc.url, ACCESS_KEY, SECRET_KEY, "boto-v1"],
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(60_000),
    }).output();
    const text = new TextDecoder();
    assert.ok(out.success, text.decode(out.stderr));
    const result = JSON.parse(text.decode(out.stdout));
    assert.equal(result.prefix, "nl\nx/");
    assert.equal(result.delimiter, "/");
    assert.deepEqual(result.keys, ["nl\nx/a b", "nl\nx/c+d"]);
    assert.deepEqual(result.common, ["nl\nx/sub\n/"]);
    assert.deepEqual(result.pages, [
      { marker: "", next: "nl\nx/a b", prefix: "nl\n", keys: ["nl\nx/a b"] },
      { marker: "nl\nx/a b", next: "nl\nx/c+d", prefix: "nl\n", keys: ["nl\nx/c+d"] },
      { marker: "nl\nx/c+d", next: null, prefix: "nl\n", keys: ["nl\nx/sub\n/e"] },
    ]);
  },
});

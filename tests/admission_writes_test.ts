/**
 * Black-box tests of SPEC Authentication 6, "writes always need authentication", against operator
 * `allow-anonymous` admission blocks: a block that lists a write method is refused at load
 * (`config lint` exit 6, and the server does not start); a block without a method list admits
 * anonymous reads only, and every anonymous write it matches is refused and stores nothing.
 */
import assert from "node:assert/strict";
import * as S3 from "@aws-sdk/client-s3";
import { assertError } from "./helpers/assertions.ts";
import { runSvc } from "./helpers/run-svc.ts";
import { startSvc } from "./helpers/svc.ts";

const WRITE_BLOCK = `admission:
  blocks:
    - name: anonymous-uploads
      match: { bucket: drop, method: [GET, PUT] }
      action: allow-anonymous
access:
  access_key_id: AKIAEXAMPLE
  secret_access_key: example-secret
`;

Deno.test("admission: an allow-anonymous block listing a write method is refused at load", async () => {
  const lint = await runSvc(["config", "lint", "svc.yaml"], { "svc.yaml": WRITE_BLOCK });
  assert.equal(lint.code, 6, lint.stderr);
  assert.match(lint.stderr, /admission\.blocks\.0\.match\.method/);
  assert.match(lint.stderr, /allow-anonymous cannot admit PUT: writes always need authentication/);
  const serve = await runSvc(["--config", "svc.yaml", "--listen", "127.0.0.1:0"], {
    "svc.yaml": WRITE_BLOCK,
  });
  assert.notEqual(serve.code, 0, "the server must not start with it");
  assert.match(serve.stderr, /allow-anonymous cannot admit PUT/);
});

Deno.test("admission: an allow-anonymous block without methods admits reads, never writes", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-admission-" });
  const config = `${dir}/svc.yaml`;
  await Deno.writeTextFile(
    config,
    "admission:\n  blocks:\n    - name: public-bucket\n      match: { bucket: pub }\n" +
      "      action: allow-anonymous\n",
  );
  try {
    await using svc = await startSvc({ args: ["--config", config] });
    assert.ok(
      svc.logs.some((line) => line.includes("allow-anonymous admits anonymous reads only")),
      "a warning says what the block does",
    );
    const s3 = svc.client();
    await s3.send(new S3.CreateBucketCommand({ Bucket: "pub" }));
    await s3.send(new S3.PutObjectCommand({ Bucket: "pub", Key: "kept", Body: "kept" }));
    const read = await fetch(`${svc.url}/pub/kept`);
    assert.equal(await read.text(), "kept");
    const url = (path: string) => `${svc.url}/pub${path}`;
    const xml = "<Delete><Object><Key>kept</Key></Object></Delete>";
    const writes: [string, RequestInit][] = [
      ["/new", { method: "PUT", body: "anonymous" }],
      ["/kept", { method: "PUT", body: "overwritten" }],
      ["/kept", { method: "DELETE" }],
      ["?delete", { method: "POST", body: xml }],
      ["/big?uploads", { method: "POST" }],
      ["", { method: "DELETE" }],
    ];
    for (const [path, init] of writes) {
      await assertError(fetch(url(path), init), 403, "AccessDenied");
    }
    const after = await s3.send(new S3.GetObjectCommand({ Bucket: "pub", Key: "kept" }));
    assert.equal(await after.Body!.transformToString(), "kept");
    const listed = await s3.send(new S3.ListObjectsV2Command({ Bucket: "pub" }));
    assert.deepEqual(listed.Contents?.map((c) => c.Key), ["kept"]);
    const uploads = await s3.send(new S3.ListMultipartUploadsCommand({ Bucket: "pub" }));
    assert.equal(uploads.Uploads?.length ?? 0, 0);
    s3.destroy();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * One svc per data directory: a second process started on a directory in use refuses before it
 * opens or changes anything, naming the first one's pid; once the first stops, it starts.
 */
import assert from "node:assert/strict";
import * as S3 from "@aws-sdk/client-s3";
import { bytesOf, startSvc } from "./helpers/svc.ts";

/** Every path under `dir` with its size and modification time. */
async function snapshot(dir: string, prefix = ""): Promise<string[]> {
  const lines: string[] = [];
  for await (const entry of Deno.readDir(`${dir}/${prefix}`)) {
    const path = `${prefix}${entry.name}`;
    const info = await Deno.lstat(`${dir}/${path}`);
    lines.push(`${path} ${info.size} ${info.mtime?.getTime()}`);
    if (entry.isDirectory) lines.push(...await snapshot(dir, `${path}/`));
  }
  return lines.sort();
}

Deno.test("a second svc on a data directory in use refuses and changes nothing", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-lock-test-" });
  try {
    const first = await startSvc({ dataDir });
    try {
      const s3 = first.client();
      await s3.send(new S3.CreateBucketCommand({ Bucket: "held" }));
      await s3.send(new S3.PutObjectCommand({ Bucket: "held", Key: "k", Body: "v1" }));
      // The first server's own delayed writes (usage counters 1 s after a write; the config
      // database's WAL) land before the snapshot: only the refused process is judged.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const holder = Number((await Deno.readTextFile(`${dataDir}/.svc/svc.lock`)).trim());
      assert.ok(holder > 0);
      const before = await snapshot(dataDir);
      await assert.rejects(startSvc({ dataDir }), (err: Error) => {
        assert.match(err.message, /svc exited \(1\) before listening/);
        assert.match(err.message, new RegExp(`is in use by another svc \\(pid ${holder}\\)`));
        return true;
      });
      assert.deepEqual(await snapshot(dataDir), before, "the refused process changed nothing");
      const body = await s3.send(new S3.GetObjectCommand({ Bucket: "held", Key: "k" }));
      assert.equal(new TextDecoder().decode(await bytesOf(body.Body)), "v1");
    } finally {
      await first.stop();
    }
    // The lock goes with the process: the next svc starts on the same directory.
    const next = await startSvc({ dataDir });
    try {
      const got = await next.client().send(new S3.GetObjectCommand({ Bucket: "held", Key: "k" }));
      assert.equal(new TextDecoder().decode(await bytesOf(got.Body)), "v1");
    } finally {
      await next.stop();
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

/**
 * Background conversion through a DeltaBackend over the filesystem backend: an archive PUT is
 * stored as it came; nothing converts while the gate (a maintenance job) refuses its bucket; once
 * admitted it becomes a delta with the write's stamp, and the usage hook sees the change.
 */
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { FilesystemBackend } from "../../storage/fs/filesystem-backend.ts";
import { probeXdelta3, Xdelta3Codec } from "../codec/codec.ts";
import { CodecPool } from "../codec/codec-pool.ts";
import { DeltaBackend } from "../delta-backend.ts";
import { metaFor } from "../../testing/object-fixtures.ts";
import type { DeltaMeta } from "../delta-context.ts";
import type { ObjectInfo } from "../../storage/mod.ts";
import { shutdownArchiveWorkers } from "../archive/archive-codec.ts";
import { deltaTestSettings } from "../../testing/delta-fixtures.ts";

const probe = await probeXdelta3();

function tgz(version: number): Uint8Array<ArrayBuffer> {
  const lines = Array.from({ length: 4000 }, (_, i) => `line ${i} of a source file ${i % 97}\n`);
  lines[version * 7] = `version ${version}\n`;
  return new Uint8Array(gzipSync(new TextEncoder().encode(lines.join("")), { level: 9 }));
}

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

Deno.test({
  name: "archive conversion: waits for the gate, then stores the same write as a delta",
  ignore: !probe.available,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "svc-convert-" });
    try {
      const inner = await FilesystemBackend.open(`${dir}/objects`);
      await inner.createBucket("b");
      await Deno.mkdir(`${dir}/spool`);
      const store = new DeltaBackend({
        inner,
        codec: new Xdelta3Codec({ tempDir: `${dir}/spool`, acceptsA: probe.acceptsA }),
        pool: new CodecPool(2),
        spoolDir: `${dir}/spool`,
        settings: () => deltaTestSettings(),
      });
      let open = false;
      let inFlight = 0;
      const converted: [ObjectInfo, ObjectInfo][] = [];
      const backlog = await store.startBacklog(`${dir}/backlog`, {
        outcome: () => {},
        converted: (_bucket, stored, source) => converted.push([stored, source]),
        admit: () => {
          if (!open) return null;
          inFlight++;
          return () => inFlight--;
        },
      });
      try {
        const bodies = [tgz(1), tgz(2)];
        for (const [i, body] of bodies.entries()) {
          const staged = await store.stageObject(
            "b",
            `rel/1.${i}/app.tgz`,
            new Blob([body]).stream(),
          );
          await staged.commit(metaFor(body));
        }
        await new Promise((resolve) => setTimeout(resolve, 300));
        assert.equal(backlog.size, 2, "nothing converts while the gate refuses the bucket");
        const plain = await inner.headObject("b", "rel/1.1/app.tgz");
        assert.equal((plain?.meta as DeltaMeta).storageReason, "archive_pending");

        open = true;
        await until(() => Promise.resolve(backlog.size === 0), "the conversions");
        assert.equal(inFlight, 0, "each conversion ended its write");
        const delta = await inner.headObject("b", "rel/1.1/app.tgz.delta");
        assert.ok(delta, "stored as a delta");
        assert.equal((delta.meta as DeltaMeta).writtenAt, (plain?.meta as DeltaMeta).writtenAt);
        assert.equal(await inner.headObject("b", "rel/1.1/app.tgz"), null, "the copy went");
        assert.equal(converted.length, 2, "the usage hook saw both");
        assert.ok(converted[1][0].storedSize < converted[1][1].storedSize / 4);
        const got = await store.getObject("b", "rel/1.1/app.tgz");
        const bytes = new Uint8Array(await new Response(got!.body).arrayBuffer());
        assert.deepEqual(bytes, bodies[1]);
        assert.equal(got!.info.meta.lastModified, plain!.meta.lastModified);

        // An entry whose bucket is gone is dropped, not retried forever.
        await backlog.add({ bucket: "gone", key: "a.tgz", sha256: "0".repeat(64), writtenAt: "1" });
        await until(() => Promise.resolve(backlog.size === 0), "the entry of a gone bucket");
      } finally {
        await backlog.stop();
        shutdownArchiveWorkers();
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

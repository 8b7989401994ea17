/**
 * Black-box test of a full disk (issue 12 item 6), on a real full filesystem: the server's data
 * directory is a small tmpfs filled up behind its back. Writes answer 507 InsufficientStorage
 * (which the AWS SDKs do not retry) with a message naming the cause, logged once rather than per
 * request; delta objects stay readable without local space for them; the cached baseline is not
 * evicted; everything works again once space is freed.
 *
 * Needs root (or CAP_SYS_ADMIN) to mount a tmpfs, and user xattrs on tmpfs (Linux 6.6+); skips
 * cleanly otherwise.
 */
import assert from "node:assert/strict";
import { PutObjectCommand, type S3ServiceException } from "@aws-sdk/client-s3";
import { objectsOnLocalDisk, signedFetch as fetch, startSvc } from "./helpers/svc.ts";
import { codeOf } from "./helpers/assertions.ts";
import { ArtifactSeries } from "./helpers/tar.ts";
import { layoutOf, parentDeltaspaceArgs, sha256Hex } from "./helpers/delta.ts";
import { fill, mountTmpfs, unmount } from "./helpers/tmpfs.ts";

const BUCKET = "full";

const probe = objectsOnLocalDisk ? await mountTmpfs("1m") : null;
if (probe) await unmount(probe);

Deno.test({
  name: "disk full: writes answer 507 InsufficientStorage once logged; delta reads still work",
  ignore: probe === null,
  fn: async () => {
    const mnt = (await mountTmpfs("24m"))!;
    try {
      // The layout checked here is the parent rule's (`<folder>reference.bin`).
      const options = {
        dataDir: mnt,
        env: { SVC_DEBUG_HEADERS: "true" },
        args: parentDeltaspaceArgs(BUCKET),
      };
      const series = new ArtifactSeries(4, 512 * 1024); // ~2 MiB per version
      const v1 = series.current(), v2 = series.next(), v3 = series.next(), v4 = series.next();
      {
        await using first = await startSvc(options);
        const at = (key: string) => `${first.url}/${BUCKET}/${key}`;
        assert.equal((await fetch(`${first.url}/${BUCKET}`, { method: "PUT" })).status, 200);
        for (const [key, body] of [["app/v1.tar", v1], ["app/v2.tar", v2], ["app/v3.tar", v3]]) {
          const res = await fetch(at(key as string), {
            method: "PUT",
            body: body as Uint8Array<ArrayBuffer>,
          });
          assert.equal(res.status, 200, await res.text());
        }
      }
      assert.deepEqual(layoutOf(mnt, BUCKET), [
        "app/reference.bin:reference",
        "app/v1.tar.delta:delta",
        "app/v2.tar.delta:delta",
        "app/v3.tar.delta:delta",
      ]);
      // Restarted: a delta PUT leaves its object warm in the rebuilt cache, a start empties it.
      await using svc = await startSvc(options);
      const at = (key: string) => `${svc.url}/${BUCKET}/${key}`;
      const warm = await fetch(at("app/v2.tar")); // v2 is now in the rebuilt-object cache
      assert.equal(sha256Hex(new Uint8Array(await warm.arrayBuffer())), sha256Hex(v2));
      const created = await fetch(at("mp/big.bin?uploads"), { method: "POST" });
      const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(await created.text())![1];
      const baselines = [...Deno.readDirSync(`${mnt}/.svc/baselines`)].map((e) => e.name);
      assert.equal(baselines.length, 1);

      fill(`${mnt}/.filler`);
      const body = new Uint8Array(1024 * 1024).fill(7);
      // Plain, delta-eligible and multipart-part writes all name the cause; nothing retries it.
      for (
        const url of [
          at("notes/a.txt"),
          at("app/v4.tar"),
          at(`mp/big.bin?partNumber=1&uploadId=${uploadId}`),
        ]
      ) {
        const res = await fetch(url, { method: "PUT", body: url.endsWith(".tar") ? v4 : body });
        const text = await res.text();
        assert.equal(res.status, 507, `${url}: ${text}`);
        assert.equal(codeOf(text), "InsufficientStorage", text);
        assert.match(text, /disk is full/);
      }
      const sdk = svc.client();
      const err = await sdk.send(
        new PutObjectCommand({ Bucket: BUCKET, Key: "notes/b.txt", Body: body }),
      ).then(() => null, (e: S3ServiceException) => e);
      assert.ok(err, "the SDK PUT succeeded on a full disk");
      assert.equal(err.name, "InsufficientStorage");
      assert.equal(err.$metadata.httpStatusCode, 507);
      assert.equal(err.$metadata.attempts, 1, "the SDK retried a full-disk answer");
      sdk.destroy();

      // Reads of delta objects need no local space: v3 was never read (no rebuilt file).
      const v3Read = await fetch(at("app/v3.tar"));
      assert.equal(v3Read.status, 200);
      assert.equal(sha256Hex(new Uint8Array(await v3Read.arrayBuffer())), sha256Hex(v3));
      const ranged = await fetch(at("app/v3.tar"), { headers: { range: "bytes=100000-299999" } });
      assert.equal(ranged.status, 206);
      assert.deepEqual(new Uint8Array(await ranged.arrayBuffer()), v3.subarray(100000, 300000));
      assert.ok(svc.logs.some((l) => /No local space to rebuild a delta object/.test(l)));
      const cached = await fetch(at("app/v2.tar"));
      assert.equal(sha256Hex(new Uint8Array(await cached.arrayBuffer())), sha256Hex(v2));
      // The good baseline stayed cached, and nothing blamed it.
      assert.deepEqual(
        [...Deno.readDirSync(`${mnt}/.svc/baselines`)].map((e) => e.name),
        baselines,
      );
      assert.equal(svc.logs.filter((l) => /Evicting a cached baseline/.test(l)).length, 0);
      // One log line for the four refused writes, and no per-request error dumps.
      assert.equal(svc.logs.filter((l) => /Disk full/.test(l)).length, 1, svc.logs.join("\n"));
      assert.equal(svc.logs.filter((l) => /request failed/.test(l)).length, 0, svc.logs.join("\n"));

      // Space freed: writes work again.
      Deno.removeSync(`${mnt}/.filler`);
      const again = await fetch(at("notes/a.txt"), { method: "PUT", body });
      assert.equal(again.status, 200, await again.text());
      const back = await fetch(at("notes/a.txt"));
      assert.deepEqual(new Uint8Array(await back.arrayBuffer()), body);
      await fetch(at(`mp/big.bin?uploadId=${uploadId}`), { method: "DELETE" }).then((r) =>
        r.body?.cancel()
      );
    } finally {
      await unmount(mnt);
    }
  },
});

/**
 * Black-box tests of the usage counters and their admin routes (`/usage`, `/usage/bucket/:b`,
 * `/usage/scan`, `/usage/refresh`, `/deltaspace/savings`, `/_/stats`) on the real server: every
 * S3 write shape moves the counters exactly, a restart keeps them without a rescan, delta
 * objects show their savings, a refresh repairs a counter changed behind svc's back, and a quota
 * is judged from the persisted counter.
 */
import assert from "node:assert/strict";
import * as S3 from "@aws-sdk/client-s3";
import { AdminClient } from "./helpers/admin.ts";
import { ArtifactSeries } from "./helpers/tar.ts";
import { objectsOnLocalDisk, randomBytes, signedFetch, startSvc } from "./helpers/svc.ts";

interface Row {
  bucket: string;
  object_count: number;
  logical_bytes: number;
  stored_bytes: number;
  savings_percentage: number;
  last_scan_at: number | null;
  never_scanned: boolean;
  scanning: boolean;
}

const MiB = 1024 * 1024;

async function row(admin: AdminClient, bucket: string): Promise<Row> {
  return await admin.json<Row>("GET", `/usage/bucket/${bucket}`);
}

async function counts(admin: AdminClient, bucket: string) {
  const { object_count, logical_bytes, stored_bytes } = await row(admin, bucket);
  return { object_count, logical_bytes, stored_bytes };
}

/** The value of a sample of `/_/metrics` (0 when absent). */
async function metric(url: string, sample: string): Promise<number> {
  const text = await (await fetch(`${url}/_/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(sample + " "));
  return line ? Number(line.slice(sample.length + 1)) : 0;
}

Deno.test("usage: every write shape moves the counters exactly; a restart keeps them", async (t) => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-usage-" });
  try {
    let before: Row;
    {
      await using svc = await startSvc({ dataDir });
      const s3 = svc.client();
      const admin = new AdminClient(svc.url);
      await admin.login();
      const put = (key: string, size: number) =>
        s3.send(new S3.PutObjectCommand({ Bucket: "ub1", Key: key, Body: randomBytes(size) }));

      await t.step("a bucket created through svc is counted from zero, no scan", async () => {
        await s3.send(new S3.CreateBucketCommand({ Bucket: "ub1" }));
        const created = await row(admin, "ub1");
        assert.equal(created.never_scanned, false);
        assert.equal(typeof created.last_scan_at, "number");
        assert.deepEqual(await counts(admin, "ub1"), {
          object_count: 0,
          logical_bytes: 0,
          stored_bytes: 0,
        });
      });

      await t.step("PUT, overwrite, copy, multipart, DeleteObjects, DELETE", async () => {
        await put("a", 100);
        await put("b", 50);
        assert.deepEqual(await counts(admin, "ub1"), {
          object_count: 2,
          logical_bytes: 150,
          stored_bytes: 150,
        });
        await put("a", 30); // overwrite: 100 out, 30 in
        assert.deepEqual(await counts(admin, "ub1"), {
          object_count: 2,
          logical_bytes: 80,
          stored_bytes: 80,
        });
        await s3.send(new S3.CopyObjectCommand({ Bucket: "ub1", Key: "c", CopySource: "ub1/a" }));
        assert.equal((await counts(admin, "ub1")).logical_bytes, 110);

        const { UploadId } = await s3.send(
          new S3.CreateMultipartUploadCommand({ Bucket: "ub1", Key: "m" }),
        );
        const parts = [randomBytes(5 * MiB), randomBytes(17)];
        const etags = [];
        for (const [i, body] of parts.entries()) {
          const part = await s3.send(
            new S3.UploadPartCommand({
              Bucket: "ub1",
              Key: "m",
              UploadId,
              PartNumber: i + 1,
              Body: body,
            }),
          );
          etags.push({ ETag: part.ETag, PartNumber: i + 1 });
        }
        // Parts in flight are not objects yet.
        assert.equal((await counts(admin, "ub1")).object_count, 3);
        await s3.send(
          new S3.CompleteMultipartUploadCommand({
            Bucket: "ub1",
            Key: "m",
            UploadId,
            MultipartUpload: { Parts: etags },
          }),
        );
        assert.deepEqual(await counts(admin, "ub1"), {
          object_count: 4,
          logical_bytes: 110 + 5 * MiB + 17,
          stored_bytes: 110 + 5 * MiB + 17,
        });

        await s3.send(
          new S3.DeleteObjectsCommand({
            Bucket: "ub1",
            Delete: { Objects: [{ Key: "b" }, { Key: "c" }, { Key: "never-there" }] },
          }),
        );
        await s3.send(new S3.DeleteObjectCommand({ Bucket: "ub1", Key: "m" }));
        assert.deepEqual(await counts(admin, "ub1"), {
          object_count: 1,
          logical_bytes: 30,
          stored_bytes: 30,
        });
        await put("z", 12);
      });

      await t.step("/usage and /_/stats agree with the bucket row", async () => {
        const usage = await admin.json<Record<string, unknown>>("GET", "/usage");
        const stats = await admin.json<Record<string, unknown>>("GET", "/_/stats");
        const buckets = usage.buckets as Record<string, Row>;
        assert.equal(buckets.ub1.object_count, 2);
        assert.equal(buckets.ub1.logical_bytes, 42);
        assert.equal(usage.total_objects, 2);
        assert.equal(usage.total_original_size, 42);
        const { scan: _scan, ...withoutScan } = usage;
        assert.deepEqual(withoutScan, stats);
      });
      before = await row(admin, "ub1");
    } // graceful stop: the counters are flushed

    await t.step("a restart keeps the counters without a rescan", async () => {
      await using svc = await startSvc({ dataDir });
      const admin = new AdminClient(svc.url);
      await admin.login();
      const after = await row(admin, "ub1");
      assert.deepEqual(after, before);
      assert.equal(after.never_scanned, false);
      await admin.json("GET", "/usage");
      await admin.json("GET", "/_/stats");
      const seeds = await metric(svc.url, 'svc_usage_scans_total{trigger="seed",outcome="ok"}');
      assert.equal(seeds, 0, "no bucket was scanned after the restart");
      // And the counter still follows writes.
      await svc.client().send(
        new S3.PutObjectCommand({ Bucket: "ub1", Key: "y", Body: randomBytes(8) }),
      );
      assert.equal((await row(admin, "ub1")).logical_bytes, 50);
      assert.equal((await row(admin, "ub1")).last_scan_at, before.last_scan_at);
    });
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("usage: refresh repairs a counter changed behind svc's back; scan runs in the background", async (t) => {
  await using svc = await startSvc();
  const s3 = svc.client();
  const admin = new AdminClient(svc.url);
  await admin.login();
  await s3.send(new S3.CreateBucketCommand({ Bucket: "rb1" }));
  for (const key of ["k1", "k2", "k3"]) {
    await s3.send(new S3.PutObjectCommand({ Bucket: "rb1", Key: key, Body: randomBytes(10) }));
  }

  await t.step(
    "errors: unknown bucket 404, refresh without a bucket 400, no session 401",
    async () => {
      assert.equal((await admin.request("GET", "/usage/bucket/nope")).status, 404);
      assert.equal((await admin.request("POST", "/usage/refresh?bucket=nope")).status, 404);
      const missing = await admin.request("POST", "/usage/refresh");
      assert.equal(missing.status, 400);
      assert.equal((await missing.json()).error, "bad_request");
      const anonymous = await fetch(`${svc.url}/_/api/admin/usage`);
      assert.equal(anonymous.status, 401);
      await anonymous.body?.cancel();
    },
  );

  await t.step("refresh repairs the counter after a file was deleted on disk", async () => {
    if (!objectsOnLocalDisk) return; // the objects are not in the data directory
    await Deno.remove(`${svc.dataDir}/rb1/k2`);
    assert.equal((await row(admin, "rb1")).object_count, 3, "svc did not see the deletion");
    const refreshed = await admin.json<Row>("POST", "/usage/refresh?bucket=rb1");
    assert.equal(refreshed.object_count, 2);
    assert.equal(refreshed.logical_bytes, 20);
    assert.equal((await row(admin, "rb1")).object_count, 2);
    const audit = await admin.json<
      { entries: { event: string; fields: Record<string, unknown> }[] }
    >(
      "GET",
      "/audit?limit=20",
    );
    const entry = audit.entries.find((e) => e.event === "usage_refreshed");
    assert.ok(entry, "the refresh is audited");
    assert.equal(entry.fields.user, "$bootstrap");
    assert.equal(entry.fields.objects_before, 3);
    assert.equal(entry.fields.objects_after, 2);
  });

  await t.step(
    "POST /usage/scan starts a background rescan, audited at start and end",
    async () => {
      await s3.send(new S3.CreateBucketCommand({ Bucket: "rb2" }));
      const started = await admin.json<{ started: boolean; scan: Record<string, unknown> }>(
        "POST",
        "/usage/scan",
        undefined,
        202,
      );
      assert.equal(started.started, true);
      assert.equal(started.scan.buckets_total, 2);
      let scan: Record<string, unknown> = started.scan;
      for (let i = 0; i < 100 && scan.running; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        scan = (await admin.json<{ scan: Record<string, unknown> }>("GET", "/usage")).scan;
      }
      assert.equal(scan.running, false);
      assert.equal(scan.buckets_done, 2);
      assert.equal(scan.buckets_failed, 0);
      const audit = await admin.json<{ entries: { event: string }[] }>("GET", "/audit?limit=20");
      const events = audit.entries.map((e) => e.event);
      assert.ok(events.includes("usage_scan_started"));
      assert.ok(events.includes("usage_scan_finished"));
      const rescans = await metric(svc.url, 'svc_usage_scans_total{trigger="scan",outcome="ok"}');
      assert.equal(rescans, 2);
    },
  );
  await t.step("a refused DeleteBucket keeps the counter; a deleted bucket drops it", async () => {
    const kept = await row(admin, "rb1");
    await assert.rejects(
      s3.send(new S3.DeleteBucketCommand({ Bucket: "rb1" })),
      /BucketNotEmpty|not empty/,
    );
    assert.deepEqual(await row(admin, "rb1"), kept);
    await s3.send(new S3.DeleteBucketCommand({ Bucket: "rb2" }));
    const gone = await admin.request("GET", "/usage/bucket/rb2");
    assert.equal(gone.status, 404);
    await gone.body?.cancel();
    await s3.send(new S3.CreateBucketCommand({ Bucket: "rb2" }));
    assert.equal((await row(admin, "rb2")).object_count, 0);
  });
});

Deno.test("usage: delta objects store less than they hold; savings per deltaspace", async () => {
  await using svc = await startSvc({ env: { SVC_CODEC_SLOT_WAIT_SECS: "250" } });
  const s3 = svc.client();
  const admin = new AdminClient(svc.url);
  await admin.login();
  await s3.send(new S3.CreateBucketCommand({ Bucket: "art" }));
  const series = new ArtifactSeries();
  const versions = [series.current(), series.next(), series.next()];
  for (const [i, body] of versions.entries()) {
    await s3.send(
      new S3.PutObjectCommand({ Bucket: "art", Key: `rel/app-${i}.tar`, Body: body }),
    );
  }
  await s3.send(new S3.PutObjectCommand({ Bucket: "art", Key: "notes.txt", Body: "hello" }));
  const logical = versions.reduce((n, v) => n + v.length, 0) + 5;

  const inline = await row(admin, "art");
  assert.equal(inline.object_count, 4);
  assert.equal(inline.logical_bytes, logical);
  assert.ok(inline.stored_bytes < logical, `stored ${inline.stored_bytes} < logical ${logical}`);
  // The baseline counts: three versions sharing one cannot save more than two thirds.
  assert.ok(inline.stored_bytes > versions[0].length, "the baseline's bytes are counted");
  assert.ok(inline.savings_percentage > 0);

  // A full scan (which reads the baseline's real size) lands where the inline counter is.
  const scanned = await admin.json<Row>("POST", "/usage/refresh?bucket=art");
  assert.equal(scanned.object_count, 4);
  assert.equal(scanned.logical_bytes, logical);
  const drift = Math.abs(scanned.stored_bytes - inline.stored_bytes);
  assert.ok(drift < 1024, `inline and scanned stored bytes differ by ${drift}`);

  const savings = await admin.json<Record<string, unknown>>("GET", "/deltaspace/savings");
  const spaces = savings.deltaspaces as Record<string, unknown>[];
  assert.equal(spaces.length, 1, "only the deltaspace holding deltas is listed");
  const space = spaces[0];
  assert.equal(space.bucket, "art");
  // The default policy, auto, groups the versions: the group key names the deltaspace.
  assert.equal(space.prefix, "rel/app-*.tar");
  assert.equal(space.object_count, 3);
  assert.equal(space.logical_bytes, logical - 5);
  assert.ok((space.baseline_bytes as number) >= versions[0].length);
  assert.equal(space.stored_bytes, scanned.stored_bytes - 5);
  assert.ok((space.savings_percentage as number) > 0);

  // Cached 30 s: a new version does not show until then.
  await s3.send(
    new S3.PutObjectCommand({ Bucket: "art", Key: "rel/app-3.tar", Body: series.next() }),
  );
  const cached = await admin.json<Record<string, unknown>>("GET", "/deltaspace/savings");
  assert.deepEqual(cached, savings);
  const one = await admin.json<Record<string, unknown>>("GET", "/deltaspace/savings?bucket=art");
  assert.equal((one.deltaspaces as Record<string, unknown>[])[0].object_count, 4);
  assert.equal((await admin.request("GET", "/deltaspace/savings?bucket=nope")).status, 404);

  // Deleting everything brings both byte totals back to exactly zero (baselines included).
  for (const key of ["rel/app-0.tar", "rel/app-1.tar", "rel/app-2.tar", "rel/app-3.tar"]) {
    await s3.send(new S3.DeleteObjectCommand({ Bucket: "art", Key: key }));
  }
  await s3.send(new S3.DeleteObjectCommand({ Bucket: "art", Key: "notes.txt" }));
  assert.deepEqual(await counts(admin, "art"), {
    object_count: 0,
    logical_bytes: 0,
    stored_bytes: 0,
  });
});

Deno.test("usage: a quota is judged from the persisted counter after a restart", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-usage-quota-" });
  try {
    {
      await using svc = await startSvc({ dataDir });
      const s3 = svc.client();
      await s3.send(new S3.CreateBucketCommand({ Bucket: "qb1" }));
      await s3.send(new S3.PutObjectCommand({ Bucket: "qb1", Key: "a", Body: randomBytes(900) }));
    }
    await Deno.writeTextFile(
      `${dataDir}/svc.yaml`,
      "storage:\n  buckets:\n    qb1:\n      quota_bytes: 1000\n",
    );
    await using svc = await startSvc({ dataDir });
    const put = (key: string, size: number) =>
      signedFetch(`${svc.url}/qb1/${key}`, { method: "PUT", body: randomBytes(size) });
    const fits = await put("b", 100);
    assert.equal(fits.status, 200, await fits.text());
    const refused = await put("c", 1);
    const text = await refused.text();
    assert.equal(refused.status, 403, text);
    assert.match(text, /QuotaExceeded/);
    const seeds = await metric(svc.url, 'svc_usage_scans_total{trigger="seed",outcome="ok"}');
    assert.equal(seeds, 0, "the quota read the persisted counter, not a scan");
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

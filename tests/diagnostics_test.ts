/**
 * The diagnostics of the admin API on the real server (docs/DELTA.md "Diagnostics"): the
 * delta-efficiency report checked against the bytes in the data directory, the delta verify,
 * and the integrity scan finding damage done behind svc's back (a corrupt baseline, delta and
 * passthrough object, a deleted baseline, an orphaned baseline, a key stored twice), with its
 * audit entries and metrics. Resume after a restart and the live stream: diagnostics_resume_test.ts.
 */
import assert from "node:assert/strict";
import { GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { AdminClient } from "./helpers/admin.ts";
import { corruptFile, type StoredFile, storedFiles } from "./helpers/delta.ts";
import { fillBucket, type ScanStatus, waitForScan } from "./helpers/diagnostics.ts";
import { objectsOnLocalDisk, signedFetch, startSvc } from "./helpers/svc.ts";
import { getJsonXattr, setJsonXattr } from "../src/native/xattr.ts";

const BUCKET = "diag";
const REASONS = new Set([
  "not_eligible",
  "ratio_exceeded",
  "codec_busy",
  "codec_unavailable",
  "baseline_unusable",
  "archive_not_rebuildable",
  "unknown",
]);

type Row = Record<string, unknown> & {
  objects: number;
  logical_bytes: number;
  stored_bytes: number;
  savings_percentage: number;
  grade: string;
  kinds: Record<string, number>;
  passthrough_reasons: Record<string, number>;
  baseline_bytes: number;
};
type Report = {
  totals: Row;
  grade_scale: unknown[];
  buckets: (Row & { bucket: string; deltaspaces: (Row & { deltaspace: string })[] })[];
};

const parentOf = (name: string) => name.slice(0, name.lastIndexOf("/") + 1);

/** What a stored file is, by the layout docs/DELTA.md describes (either baseline layout). */
function roleOf(file: StoredFile): "baseline" | "marker" | "delta" | "passthrough" {
  if (/^\.dg\/[^/]+\/refs\//.test(file.name)) return "marker";
  if (file.name.endsWith("/reference.bin")) return "baseline";
  return file.name.endsWith(".delta") ? "delta" : "passthrough";
}

/** The deltaspace row a stored file counts in. */
function deltaspaceOfFile(file: StoredFile): string {
  switch (roleOf(file)) {
    case "marker":
      return file.name.slice(0, file.name.indexOf("/refs/") + 1);
    case "delta":
      return (file.meta?.deltaspace as string | undefined) ?? parentOf(file.name);
    default:
      return parentOf(file.name);
  }
}

async function metricsText(url: string): Promise<string> {
  return await (await fetch(`${url}/_/metrics`)).text();
}

Deno.test({
  name: "diagnostics: efficiency report, verify and integrity scan against the data directory",
  ignore: !objectsOnLocalDisk,
  async fn(t) {
    // No rebuilt cache: a PUT warms it with the verified bytes, which would (rightly) answer the GET of
    // a delta damaged on disk; this test wants that GET to reach the damaged delta.
    await using svc = await startSvc({
      env: { SVC_CODEC_SLOT_WAIT_SECS: "250", SVC_REBUILT_CACHE_MB: "0" },
    });
    const s3 = svc.client();
    assert.equal((await signedFetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);
    const written = await fillBucket(s3, BUCKET);
    const admin = new AdminClient(svc.url);
    await admin.login();
    /** The folder of the baseline the delta of `key` decodes against, read from its metadata. */
    const baselineSpace = (key: string) => {
      const meta = getJsonXattr<Record<string, unknown>>(
        `${svc.dataDir}/${BUCKET}/${key}.delta`,
        "user.svc.meta",
      );
      assert.ok(meta, `${key} is stored as a delta`);
      return (meta.deltaspace as string | undefined) ?? parentOf(key);
    };

    await t.step("the report matches the stored bytes, per bucket and deltaspace", async () => {
      const files = storedFiles(svc.dataDir, BUCKET);
      const baselines = files.filter((f) => roleOf(f) === "baseline");
      const objects = files.filter((f) => roleOf(f) === "delta" || roleOf(f) === "passthrough");
      const deltas = objects.filter((f) => roleOf(f) === "delta");
      assert.ok(deltas.length >= 4, `deltas stored: ${files.map((f) => f.name)}`);
      assert.equal(objects.length, written.length);
      const report = await admin.json<Report>(
        "GET",
        `/diagnostics/delta-efficiency?bucket=${BUCKET}`,
      );
      const row = report.buckets[0];
      assert.equal(row.bucket, BUCKET);
      assert.equal(row.objects, written.length);
      assert.equal(row.logical_bytes, written.reduce((n, w) => n + w.body.length, 0));
      assert.equal(row.stored_bytes, files.reduce((n, f) => n + f.size, 0));
      assert.equal(row.baseline_bytes, baselines.reduce((n, f) => n + f.size, 0));
      assert.equal(row.kinds.delta, deltas.length);
      assert.equal(row.kinds.passthrough, objects.length - deltas.length);
      const reasons = Object.entries(row.passthrough_reasons);
      assert.equal(reasons.reduce((n, [, c]) => n + c, 0), objects.length - deltas.length);
      for (const [reason] of reasons) assert.ok(REASONS.has(reason), reason);
      const expectedPct = Math.round(10000 * (1 - row.stored_bytes / row.logical_bytes)) / 100;
      assert.equal(row.savings_percentage, expectedPct);
      assert.match(row.grade, /^[A-F]$/);
      assert.equal(report.grade_scale.length, 6);
      // Every deltaspace row holds exactly the files the documented rules give it.
      const spaces = new Set(files.map(deltaspaceOfFile));
      assert.equal(row.deltaspaces.length, spaces.size);
      for (const space of row.deltaspaces) {
        const own = files.filter((f) => deltaspaceOfFile(f) === space.deltaspace);
        assert.equal(space.stored_bytes, own.reduce((n, f) => n + f.size, 0), space.deltaspace);
        const base = own.filter((f) => roleOf(f) === "baseline");
        assert.equal(space.baseline_bytes, base.reduce((n, f) => n + f.size, 0));
      }
      // The artifact versions share a baseline and save bytes.
      const app = row.deltaspaces.find((d) => d.deltaspace === baselineSpace("app/v2.zip"))!;
      assert.ok(app.objects >= 3, JSON.stringify(app));
      assert.ok(app.savings_percentage > 0, JSON.stringify(app));
      const docs = row.deltaspaces.find((d) => d.deltaspace === "docs/")!;
      assert.equal(docs.kinds.passthrough, 1);
      // A text file is stored zstd-compressed (docs/DELTA.md, "Compressed storage"): its row
      // shows that gain like a delta's.
      const docsFile = files.find((f) => f.name === "docs/readme.txt")!;
      assert.ok(docsFile.size < docs.logical_bytes, "the text is stored compressed");
      assert.equal(docs.stored_bytes, docsFile.size);
      const metrics = await metricsText(svc.url);
      const ratio = metrics.match(/svc_delta_efficiency_savings_ratio\{bucket="diag"\} (\S+)/);
      assert.ok(ratio, "the savings gauge is exported");
      assert.ok(Math.abs(Number(ratio[1]) - expectedPct / 100) < 0.0001);
    });

    await t.step("the report is cached until a rescan, which is audited", async () => {
      await Deno.remove(`${svc.dataDir}/${BUCKET}/docs/readme.txt`);
      const cached = await admin.json<Report>("GET", `/diagnostics/delta-efficiency`);
      assert.equal(cached.buckets.find((b) => b.bucket === BUCKET)!.objects, written.length);
      const fresh = await admin.json<Report>("POST", "/diagnostics/delta-efficiency/scan", {
        bucket: BUCKET,
      });
      assert.equal(fresh.buckets[0].objects, written.length - 1);
      await s3.send(
        new PutObjectCommand({
          Bucket: BUCKET,
          Key: "docs/readme.txt",
          Body: written.find((w) => w.key === "docs/readme.txt")!.body,
        }),
      );
      const audit = await admin.json<{ entries: { event: string }[] }>("GET", "/audit?limit=50");
      assert.ok(audit.entries.some((e) => e.event === "delta_efficiency_scanned"));
      const missing = await admin.request("GET", "/diagnostics/delta-efficiency?bucket=nope");
      assert.equal(missing.status, 404);
      assert.equal((await missing.json()).error, "not_found");
    });

    await t.step("verify rebuilds every delta and checks its sha256", async () => {
      const result = await admin.json<Record<string, unknown> & { results: unknown[] }>(
        "POST",
        "/diagnostics/delta-efficiency/verify",
        { bucket: BUCKET, limit: 100 },
      );
      const deltas = storedFiles(svc.dataDir, BUCKET).filter((f) => f.name.endsWith(".delta"));
      assert.equal(result.checked, deltas.length);
      assert.equal(result.ok, deltas.length, JSON.stringify(result));
      const sampled = await admin.json<Record<string, number>>(
        "POST",
        "/diagnostics/delta-efficiency/verify",
        { bucket: BUCKET, limit: 2, sample: true },
      );
      assert.equal(sampled.checked, 2);
      assert.equal(sampled.deltas_seen, deltas.length);
    });

    await t.step("damage behind svc's back", async () => {
      const dir = `${svc.dataDir}/${BUCKET}`;
      await corruptFile(`${dir}/${baselineSpace("lib/x.jar")}reference.bin`);
      await corruptFile(`${dir}/app/v2.zip.delta`);
      await corruptFile(`${dir}/docs/readme.txt`);
      await Deno.remove(`${dir}/${baselineSpace("m/a.tar")}reference.bin`);
      // An orphaned baseline: a copy of one in a folder no delta uses (metadata included).
      await Deno.mkdir(`${dir}/orphan`);
      const appBaseline = `${dir}/${baselineSpace("app/v2.zip")}reference.bin`;
      await Deno.copyFile(appBaseline, `${dir}/orphan/reference.bin`);
      const meta = getJsonXattr<Record<string, unknown>>(appBaseline, "user.svc.meta");
      setJsonXattr(`${dir}/orphan/reference.bin`, "user.svc.meta", {
        ...meta,
        lastModified: Date.now() - 60_000,
      });
      // A key stored twice: an older passthrough copy beside its delta.
      const v3 = written.find((w) => w.key === "app/v3.zip")!;
      await Deno.writeFile(`${dir}/app/v3.zip`, v3.body);
      const deltaMeta = getJsonXattr<Record<string, unknown>>(
        `${dir}/app/v3.zip.delta`,
        "user.svc.meta",
      )!;
      const { referenceSha256: _r, ...plain } = deltaMeta;
      setJsonXattr(`${dir}/app/v3.zip`, "user.svc.meta", {
        ...plain,
        storage: "passthrough",
        lastModified: (deltaMeta.lastModified as number) - 60_000,
      });
    });

    let status!: ScanStatus;
    await t.step("the integrity scan reports each finding", async () => {
      const started = await admin.json<{ started: boolean }>(
        "POST",
        "/diagnostics/scan/start",
        { bytes_per_sec: 0 },
        202,
      );
      assert.equal(started.started, true);
      status = await waitForScan(admin, (s) => s.state === "finished");
      const found = (kind: string, key: string) =>
        status.findings.find((f) => f.kind === kind && f.key === key && f.bucket === BUCKET);
      const expected: [string, string][] = [
        ["corrupt_baseline", `${baselineSpace("lib/x.jar")}reference.bin`],
        ["unrebuildable", "lib/x.jar"],
        ["corrupt_object", "app/v2.zip"],
        ["corrupt_object", "docs/readme.txt"],
        ["missing_baseline", "m/a.tar"],
        ["orphan_baseline", "orphan/reference.bin"],
        ["stale_passthrough", "app/v3.zip"],
      ];
      for (const [kind, key] of expected) {
        assert.ok(found(kind, key), `${kind} ${key}: ${JSON.stringify(status.findings)}`);
      }
      assert.equal(status.findings.length, expected.length, JSON.stringify(status.findings));
      // Good objects are checked too and pass.
      assert.ok(found("corrupt_object", "app/v1.zip") === undefined);
      assert.ok(status.totals.objects_ok >= 3, JSON.stringify(status.totals));
      const one = await admin.json<ScanStatus & { progress: Record<string, number> }>(
        "GET",
        `/diagnostics/scan?bucket=${BUCKET}`,
      );
      assert.equal(one.progress.findings, expected.length);
    });

    await t.step("a GET of a damaged delta answers 500, never wrong bytes", async () => {
      const res = await signedFetch(`${svc.url}/${BUCKET}/app/v2.zip`);
      assert.equal(res.status, 500);
      await res.body?.cancel();
      await assert.rejects(() => s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: "m/a.tar" })));
      const verified = await admin.json<{ failed: number; results: Record<string, unknown>[] }>(
        "POST",
        "/diagnostics/delta-efficiency/verify",
        { bucket: BUCKET, limit: 100 },
      );
      const failed = verified.results.filter((r) => !r.ok).map((r) => `${r.key}:${r.outcome}`);
      assert.deepEqual(failed.sort(), [
        "app/v2.zip:corrupt",
        "lib/x.jar:unrebuildable",
        "m/a.tar:missing_baseline",
      ]);
      assert.equal(verified.failed, 3);
    });

    await t.step("the scan is audited and counted in the metrics", async () => {
      const audit = await admin.json<{ entries: { event: string; level?: string }[] }>(
        "GET",
        "/audit?limit=50",
      );
      assert.ok(audit.entries.some((e) => e.event === "scrub_started"));
      assert.ok(audit.entries.some((e) => e.event === "scrub_finished"));
      const metrics = await metricsText(svc.url);
      assert.match(metrics, /svc_scrub_running 0/);
      assert.match(metrics, /svc_scrub_findings_total\{kind="missing_baseline"\} 1/);
      assert.match(metrics, /svc_scrub_findings_total\{kind="corrupt_object"\} 2/);
      const ok = metrics.match(/svc_scrub_objects_total\{result="ok"\} (\d+)/);
      assert.equal(Number(ok?.[1]), status.totals.objects_ok);
    });

    await t.step("stop with no scan running, and an unknown bucket", async () => {
      const stopped = await admin.json<{ stopped: boolean }>("POST", "/diagnostics/scan/stop");
      assert.equal(stopped.stopped, false);
      const res = await admin.request("POST", "/diagnostics/scan/start", { bucket: "nope" });
      assert.equal(res.status, 404);
      await res.body?.cancel();
      const anonymous = await fetch(`${svc.url}/_/api/admin/diagnostics/scan`);
      assert.equal(anonymous.status, 401);
      await anonymous.body?.cancel();
    });
  },
});

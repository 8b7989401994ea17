import assert from "node:assert/strict";
import { Hono } from "hono";
import type { BucketEfficiency } from "../../objects/diagnostics/efficiency-report.ts";
import { Scrubber } from "../../objects/diagnostics/scrub.ts";
import { opsAdminApp } from "../../../tests/helpers/ops-admin-app.ts";
import type { AdminEnv } from "../admin-env.ts";
import { renderAdminError } from "../admin-error.ts";
import { diagnosticsRoutes, type DiagnosticsRoutesDeps } from "./diagnostics-routes.ts";

function bucketReport(bucket: string): BucketEfficiency {
  const row = {
    objects: 2,
    logical_bytes: 100,
    stored_bytes: 40,
    saved_bytes: 60,
    savings_percentage: 60,
    grade: "B",
    kinds: { delta: 2 },
    passthrough_reasons: {},
    baseline_bytes: 30,
    marker_count: 0,
    marker_bytes: 0,
  };
  return {
    ...row,
    bucket,
    computed_at: 5,
    compression: true,
    baselines: 1,
    deltaspaces_total: 3,
    deltaspaces_truncated: false,
    deltaspaces: ["a/", "b/", "c/"].map((deltaspace) => ({ ...row, deltaspace, baselines: 1 })),
  };
}

function harness() {
  const audited: string[] = [];
  const scans: { buckets: string[]; fresh: boolean }[] = [];
  const scrubber = new Scrubber({
    raw: () => {
      throw new Error("not used");
    },
    decode: () => () => Promise.resolve(),
    bucketNames: () => Promise.resolve([]),
    compressed: () => true,
    stateFile: "/nonexistent/state.json",
    scratchDir: "/nonexistent",
    defaults: () => ({ bytesPerSec: 0, maxFindings: 10 }),
  });
  const deps: DiagnosticsRoutesDeps = {
    bucketExists: (bucket) => Promise.resolve(bucket === "b1" || bucket === "b2"),
    bucketNames: () => Promise.resolve(["b2", "b1"]),
    efficiency: (buckets, fresh) => {
      scans.push({ buckets, fresh });
      return Promise.resolve(buckets.map(bucketReport));
    },
    verify: () => Promise.reject(new Error("not used")),
    scrubber: () => scrubber,
    bytesPerSec: () => 0,
    audit: (event) => void audited.push(event),
  };
  const app = opsAdminApp((a) => a.route("/", diagnosticsRoutes(deps)));
  return { app, audited, scans };
}

Deno.test("diagnostics routes: the report for all buckets or one, limited per bucket", async () => {
  const { app, scans, audited } = harness();
  const all = await (await app.request("/diagnostics/delta-efficiency?limit=2")).json();
  assert.deepEqual(all.buckets.map((b: { bucket: string }) => b.bucket), ["b1", "b2"]);
  assert.equal(all.buckets[0].deltaspaces.length, 2);
  assert.equal(all.totals.logical_bytes, 200);
  assert.equal(all.totals.grade, "B");
  assert.equal(all.grade_scale.length, 6);
  assert.deepEqual(scans[0], { buckets: ["b1", "b2"], fresh: false });
  const one = await app.request("/diagnostics/delta-efficiency/scan", {
    method: "POST",
    body: JSON.stringify({ bucket: "b1" }),
  });
  assert.equal(one.status, 200);
  assert.deepEqual(scans[1], { buckets: ["b1"], fresh: true });
  assert.deepEqual(audited, ["delta_efficiency_scanned"]);
});

Deno.test("diagnostics routes: bad input is a 400 or 404 in the admin error shape", async () => {
  const { app } = harness();
  const cases: [string, RequestInit | undefined, number, string][] = [
    ["/diagnostics/delta-efficiency?limit=0", undefined, 400, "bad_request"],
    ["/diagnostics/delta-efficiency?bucket=nope", undefined, 404, "not_found"],
    ["/diagnostics/scan/stream?interval_ms=50", undefined, 400, "bad_request"],
    [
      "/diagnostics/delta-efficiency/verify",
      {
        method: "POST",
        body: JSON.stringify({ sample: "yes" }),
      },
      400,
      "bad_request",
    ],
    [
      "/diagnostics/scan/start",
      {
        method: "POST",
        body: JSON.stringify({ bytes_per_sec: -1 }),
      },
      400,
      "bad_request",
    ],
    ["/diagnostics/scan/start", { method: "POST", body: "[1]" }, 400, "bad_request"],
  ];
  for (const [path, init, status, code] of cases) {
    const res = await app.request(path, init);
    assert.equal(res.status, status, path);
    assert.equal((await res.json()).error, code, path);
  }
  const idle = await (await app.request("/diagnostics/scan/status")).json();
  assert.equal(idle.state, "idle");
  assert.equal(idle.running, false);
});

Deno.test("diagnostics routes: a session without admin rights gets 403", async () => {
  const app = new Hono<AdminEnv>();
  app.onError(renderAdminError);
  app.use("*", async (c, next) => {
    c.set("clientIp", "203.0.113.7");
    c.set("principal", { user: "u", admin: false, sessionId: "s" });
    await next();
  });
  app.route(
    "/",
    diagnosticsRoutes({
      bucketExists: () => Promise.resolve(true),
      bucketNames: () => Promise.resolve([]),
      efficiency: () => Promise.resolve([]),
      verify: () => Promise.reject(new Error("not used")),
      scrubber: () => {
        throw new Error("not used");
      },
      bytesPerSec: () => 0,
      audit: () => {},
    }),
  );
  const res = await app.request("/diagnostics/scan/status");
  assert.equal(res.status, 403);
  assert.equal((await res.json()).error, "forbidden");
});

import assert from "node:assert/strict";
import { listingSuffices, plan, type PlanOptions, type SideMeta } from "./replication-planner.ts";

const meta = (size: number, lastModified: number, sha256 = "aa"): SideMeta => ({
  size,
  lastModified,
  sha256,
});
const options = (conflict: PlanOptions["conflict"], extra: Partial<PlanOptions> = {}) => ({
  conflict,
  replicateDeletes: false,
  wholeSeconds: false,
  ...extra,
});

Deno.test("planner: a key only at the source is copied under every policy", () => {
  for (const conflict of ["newer-wins", "content-diff", "skip-if-dest-exists"] as const) {
    assert.equal(plan(meta(1, 5), null, options(conflict)).action, "copy");
  }
});

Deno.test("planner: newer-wins copies only a strictly newer source; a tie skips", () => {
  const o = options("newer-wins");
  assert.equal(plan(meta(1, 2000), meta(1, 1000), o).action, "copy");
  assert.equal(plan(meta(1, 1000), meta(1, 1000), o).action, "skip");
  assert.equal(plan(meta(1, 999), meta(9, 1000), o).action, "skip");
  // Whole seconds (an S3 side): 1.7 s and 1.2 s are the same second, a tie.
  assert.equal(
    plan(meta(1, 1700), meta(1, 1200), options("newer-wins", { wholeSeconds: true }))
      .action,
    "skip",
  );
  assert.equal(
    plan(meta(1, 2100), meta(1, 1900), options("newer-wins", { wholeSeconds: true }))
      .action,
    "copy",
  );
});

Deno.test("planner: content-diff copies on a size or SHA-256 difference only", () => {
  const o = options("content-diff");
  assert.equal(plan(meta(2, 0, "aa"), meta(3, 9, "aa"), o).action, "copy");
  assert.equal(plan(meta(2, 0, "aa"), meta(2, 9, "bb"), o).action, "copy");
  assert.equal(plan(meta(2, 9, "aa"), meta(2, 0, "aa"), o).action, "skip");
  // An unknown digest on one side cannot prove a difference.
  assert.equal(plan(meta(2, 9, "aa"), meta(2, 0, ""), o).action, "skip");
});

Deno.test("planner: skip-if-dest-exists never copies onto an existing object", () => {
  const o = options("skip-if-dest-exists");
  assert.equal(plan(meta(5, 9000, "x"), meta(1, 0, "y"), o).action, "skip");
});

Deno.test("planner: a key gone from the source is deleted only when deletes replicate", () => {
  assert.equal(plan(null, meta(1, 0), options("newer-wins")).action, "skip");
  assert.equal(
    plan(null, meta(1, 0), options("newer-wins", { replicateDeletes: true })).action,
    "delete",
  );
  assert.equal(plan(null, null, options("newer-wins", { replicateDeletes: true })).action, "skip");
});

Deno.test("planner: only content-diff needs digests a listing may lack", () => {
  assert.equal(listingSuffices("content-diff", meta(1, 0, "")), false);
  assert.equal(listingSuffices("content-diff", meta(1, 0, "aa")), true);
  assert.equal(listingSuffices("newer-wins", meta(1, 0, "")), true);
});

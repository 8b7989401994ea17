import assert from "node:assert/strict";
import { heldBy, heldByText, rowActions, runColumns } from "./job-fleet.ts";

const NOW = Date.parse("2026-11-29T00:00:10Z");

Deno.test("a remote maintenance row names its holder and how old its heartbeat is", () => {
  const row = {
    id: "maintenance:3@host-1a2b3c4d",
    status: "running",
    held_by: { instance: "host-1a2b3c4d", heartbeat_at: "2026-11-29T00:00:07Z" },
  };
  const held = heldBy(row);
  assert.deepEqual(held, { instance: "host-1a2b3c4d", heartbeat_at: "2026-11-29T00:00:07Z" });
  assert.equal(heldByText(held!, NOW), "running on host-1a2b3c4d, heartbeat 3 s ago");
  // A holder's clock slightly ahead of this one reads as just now, not as negative.
  assert.equal(
    heldByText({ instance: "b", heartbeat_at: "2026-11-29T00:00:11Z" }, NOW),
    "running on b, heartbeat 0 s ago",
  );
  assert.equal(heldBy({ id: "maintenance:3", status: "running" }), null);
  assert.equal(heldBy({ id: "x", held_by: null }), null);
});

Deno.test("row actions: a remote row offers only cancel; an ended job no cancel", () => {
  const remote = {
    status: "running",
    actions: ["cancel", "pause", "resume"],
    held_by: { instance: "a", heartbeat_at: "" },
  };
  assert.deepEqual(rowActions(remote), ["cancel"]);
  assert.deepEqual(rowActions({ ...remote, status: "cancelled" }), []);
  assert.deepEqual(rowActions({ status: "running", actions: ["cancel"] }), ["cancel"]);
  assert.deepEqual(rowActions({ status: "succeeded", actions: ["cancel"] }), []);
  const rule = { status: "idle", actions: ["pause", "resume", "run-now", "delete"] };
  assert.deepEqual(rowActions(rule), rule.actions, "local rows keep every action they name");
  assert.deepEqual(rowActions({ status: "idle" }), []);
});

Deno.test("run columns: unchanged alone, `instance` after the id in a fleet", () => {
  const single = [{ id: 1, status: "succeeded", started_at: "t" }];
  assert.equal(runColumns(single), undefined, "a single instance's table is as before");
  assert.equal(runColumns([]), undefined);
  const fleet = [
    { id: 4, job_id: "lifecycle:tidy", status: "succeeded", instance: "host-b" },
    { id: 9, job_id: "lifecycle:tidy", status: "failed", error: "x", instance: "host-a" },
  ];
  assert.deepEqual(runColumns(fleet), ["id", "instance", "job_id", "status", "error"]);
});

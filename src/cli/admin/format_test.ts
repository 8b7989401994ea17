import assert from "node:assert/strict";
import { cell, fields, humanBytes, humanDuration, humanTime, table } from "./format.ts";

Deno.test("humanBytes: binary units, three significant digits", () => {
  assert.equal(humanBytes(0), "0 B");
  assert.equal(humanBytes(1023), "1023 B");
  assert.equal(humanBytes(1024), "1.00 KiB");
  assert.equal(humanBytes(1536), "1.50 KiB");
  assert.equal(humanBytes(10 * 1024 * 1024 + 1), "10.0 MiB");
  assert.equal(humanBytes(150 * 1024 ** 3), "150 GiB");
  assert.equal(humanBytes(5 * 1024 ** 6), "5120 PiB");
  assert.equal(humanBytes(undefined), "-");
  assert.equal(humanBytes(-1), "-");
});

Deno.test("humanDuration: seconds to minutes, hours and days", () => {
  assert.equal(humanDuration(0), "0s");
  assert.equal(humanDuration(59.4), "59s");
  assert.equal(humanDuration(185), "3m05s");
  assert.equal(humanDuration(7620), "2h07m");
  assert.equal(humanDuration(3 * 86400 + 4 * 3600), "3d04h");
  assert.equal(humanDuration(null), "-");
});

Deno.test("table pads columns to the widest cell; cells render JSON values", () => {
  assert.deepEqual(table(["name", "on"], [["alice", true], ["b", null]]), [
    "NAME   ON",
    "alice  yes",
    "b      -",
  ]);
  assert.equal(cell(["a", "b"]), "a,b");
  assert.equal(cell([]), "-");
  assert.equal(cell({ a: 1 }), '{"a":1}');
  assert.deepEqual(fields([["id", 1], ["status", "ok"]]), ["id:     1", "status: ok"]);
});

Deno.test("humanTime: ISO strings and unix ms, seconds precision", () => {
  assert.equal(humanTime("2026-11-28T20:14:52.123Z"), "2026-11-28 20:14:52Z");
  assert.equal(humanTime(0), "1970-01-01 00:00:00Z");
  assert.equal(humanTime("nope"), "-");
  assert.equal(humanTime(null), "-");
});

import assert from "node:assert/strict";
import { checkMigrationList, latestVersion, MIGRATIONS } from "./migrations.ts";

Deno.test("the shipped migration list is numbered 1, 2, 3, … without gaps", () => {
  checkMigrationList(MIGRATIONS);
  assert.equal(latestVersion(MIGRATIONS), MIGRATIONS.length);
});

Deno.test("a gap, a repeat or an empty migration is refused", () => {
  const one = { version: 1, name: "one", sql: ["SELECT 1"] };
  assert.throws(
    () => checkMigrationList([one, { version: 3, name: "three", sql: ["SELECT 1"] }]),
    /"three" has version 3; expected 2/,
  );
  assert.throws(() => checkMigrationList([one, { ...one }]), /"one" has version 1; expected 2/);
  assert.throws(
    () => checkMigrationList([{ version: 1, name: "empty", sql: [] }]),
    /1 "empty" has no SQL/,
  );
});

import assert from "node:assert/strict";
import type { ReplicationRule } from "../../config/schema/schema-jobs.ts";
import { ruleOf } from "../../testing/replication-fixtures.ts";
import { RuleScope } from "./replication-scope.ts";

/** The fixture rule, scoped to `data/` and remapped to `mirror/`. */
const rule = (extra: Partial<ReplicationRule> = {}): ReplicationRule =>
  ruleOf({
    source: { bucket: "src", prefix: "data/" },
    destination: { bucket: "dst", prefix: "mirror/" },
    ...extra,
  });

Deno.test("scope: the destination prefix remaps keys both ways; absent it keeps the source's", () => {
  const scope = new RuleScope(rule());
  assert.equal(scope.toDestination("data/a/b.txt"), "mirror/a/b.txt");
  assert.equal(scope.toSource("mirror/a/b.txt"), "data/a/b.txt");
  assert.equal(scope.covers("src", "data/x"), true);
  assert.equal(scope.covers("src", "other/x"), false);
  assert.equal(scope.covers("dst", "data/x"), false);
  const same = new RuleScope(rule({ destination: { bucket: "dst" } }));
  assert.equal(same.toDestination("data/a"), "data/a");
});

Deno.test("scope: markers, internal prefixes and storage artifacts are never replicated", () => {
  const scope = new RuleScope(rule({ source: { bucket: "src", prefix: "" } }));
  for (const key of ["dir/", ".svc/config.db", ".dg/x", "a/reference.bin", "a/b.delta"]) {
    assert.notEqual(scope.skipReason(key), null, key);
  }
  assert.equal(scope.skipReason("a/b.txt"), null);
  assert.equal(scope.skipsTree(".svc/"), true);
  assert.equal(scope.skipsTree("a/"), false);
});

Deno.test("scope: exclude_globs drop keys; a non-empty include_globs keeps only its matches", () => {
  const scope = new RuleScope(rule({
    include_globs: ["data/**/*.bin", "data/keep.txt"],
    exclude_globs: ["data/tmp/**"],
  }));
  assert.equal(scope.skipReason("data/a/b/c.bin"), null);
  assert.equal(scope.skipReason("data/keep.txt"), null);
  assert.match(scope.skipReason("data/other.txt")!, /include_globs/);
  assert.match(scope.skipReason("data/tmp/x.bin")!, /exclude_globs/);
});

Deno.test("scope: a destination inside the source's own tree is never a source", () => {
  const scope = new RuleScope(rule({
    source: { bucket: "b", prefix: "" },
    destination: { bucket: "b", prefix: "copy/" },
  }));
  assert.notEqual(scope.skipReason("copy/a"), null);
  assert.equal(scope.skipsTree("copy/"), true);
  assert.equal(scope.skipReason("a"), null);
});

Deno.test("scope: the stamp changes with anything that changes the walk", () => {
  const base = new RuleScope(rule()).stamp;
  assert.equal(new RuleScope(rule()).stamp, base);
  assert.notEqual(new RuleScope(rule({ source: { bucket: "src", prefix: "d/" } })).stamp, base);
  assert.notEqual(new RuleScope(rule({ exclude_globs: ["x"] })).stamp, base);
  assert.notEqual(new RuleScope(rule({ destination: { bucket: "dst2" } })).stamp, base);
});

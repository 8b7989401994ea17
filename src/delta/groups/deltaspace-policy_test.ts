import assert from "node:assert/strict";
import {
  groupFolder,
  parseDeltaspacePolicy,
  resolveDeltaspace,
  templateGroupKey,
} from "./deltaspace-policy.ts";

Deno.test("deltaspace policy: parent keeps the folder, auto folds, both label the header", () => {
  const parent = resolveDeltaspace(parseDeltaspacePolicy("parent"), "releases/1.2.3/app.zip");
  assert.deepEqual(parent, { folder: "releases/1.2.3/", label: "releases/1.2.3/", grouped: false });
  const auto = resolveDeltaspace(parseDeltaspacePolicy(undefined), "releases/1.2.3/app.zip");
  assert.equal(auto.label, "releases/*/app.zip");
  assert.equal(auto.folder, groupFolder("releases/*/app.zip"));
  assert.match(auto.folder, /^\.dg\/[0-9a-f]{32}\/$/);
  assert.equal(auto.grouped, true);
});

Deno.test("deltaspace policy: templates fold {version}, keep * and **, fall back to auto", () => {
  const policy = parseDeltaspacePolicy("template:nightly/{version}/**; builds/{version}-*/*");
  assert.equal(policy.kind, "template");
  if (policy.kind !== "template") return;
  assert.equal(
    templateGroupKey(policy.patterns, "nightly/2024-05-01_build7/x/app.zip"),
    "nightly/*/x/app.zip",
  );
  assert.equal(
    templateGroupKey(policy.patterns, "builds/main_r7-linux/app.img"),
    "builds/*-linux/app.img",
  );
  assert.equal(templateGroupKey(policy.patterns, "other/1.0/app.zip"), null);
  assert.equal(resolveDeltaspace(policy, "other/1.0/app.zip").label, "other/*/app.zip");
  // Same group key as auto gives the same folder: auto -> template moves nothing.
  assert.equal(
    resolveDeltaspace(policy, "nightly/1.0/app.zip").folder,
    resolveDeltaspace(parseDeltaspacePolicy("auto"), "nightly/1.0/app.zip").folder,
  );
});

Deno.test("deltaspace policy: malformed settings are refused", () => {
  for (const raw of ["folder", "template:", "template:a/*/b", "template:a/{version}/b;"]) {
    assert.throws(() => parseDeltaspacePolicy(raw), RangeError, raw);
  }
});

import assert from "node:assert/strict";
import { SvcError } from "../lib/errors.ts";
import type { ObjectInfo, StorageKind } from "../storage/backend.ts";
import {
  deltaspaceOf,
  isInternalName,
  isSettled,
  logicalKeyOf,
  mergeLogicalOrder,
  storedNameFor,
  toLogicalEntries,
  validateClientKey,
} from "./layout.ts";

function info(key: string, storage: StorageKind = "passthrough", lastModified = 1): ObjectInfo {
  return {
    key,
    storedSize: 1,
    meta: {
      size: 10,
      etag: "e",
      md5: "",
      sha256: "",
      contentType: "application/octet-stream",
      userMeta: {},
      headers: {},
      lastModified,
      storage,
    },
  };
}

Deno.test("deltaspaceOf and storedNameFor follow the storage format", () => {
  assert.equal(deltaspaceOf("app.zip"), "");
  assert.equal(deltaspaceOf("r/v1/app.zip"), "r/v1/");
  assert.equal(deltaspaceOf("r/v1/"), "r/v1/");
  assert.equal(storedNameFor("r/v1/app.zip", "passthrough"), "r/v1/app.zip");
  assert.equal(storedNameFor("r/v1/app.zip", "delta"), "r/v1/app.zip.delta");
  assert.equal(storedNameFor("r/v1/app.zip", "reference"), "r/v1/reference.bin");
  assert.equal(storedNameFor("app.zip", "reference"), "reference.bin");
});

Deno.test("logicalKeyOf round-trips stored names and hides baselines", () => {
  for (const key of ["app.zip", "r/v1/app.zip", "é/😀.tar", "a.delta.zip"]) {
    assert.equal(logicalKeyOf(storedNameFor(key, "passthrough")), key);
    assert.equal(logicalKeyOf(storedNameFor(key, "delta")), key);
    assert.equal(logicalKeyOf(storedNameFor(key, "reference")), null);
  }
  assert.equal(logicalKeyOf("a/.delta"), null);
  assert.equal(logicalKeyOf(".delta"), null);
  assert.equal(logicalKeyOf("a/reference.bin.zip"), "a/reference.bin.zip");
  assert.equal(logicalKeyOf("reference.bin/x"), "reference.bin/x");
});

Deno.test("isInternalName recognises baselines and deltas only", () => {
  assert.equal(isInternalName("reference.bin"), true);
  assert.equal(isInternalName("a/b/reference.bin"), true);
  assert.equal(isInternalName("a/x.zip.delta"), true);
  assert.equal(isInternalName("a/x.zip"), false);
  assert.equal(isInternalName("a/my-reference.bin"), false);
  assert.equal(isInternalName("a/x.deltas"), false);
  assert.equal(isInternalName("Reference.bin"), false);
});

Deno.test("validateClientKey refuses reserved names only when compression is on", () => {
  for (const key of ["reference.bin", "a/b/reference.bin", "x.delta", "a/x.zip.delta", ".delta"]) {
    assert.throws(
      () => validateClientKey(key, true),
      (err) => err instanceof SvcError && err.code === "InvalidArgument" && err.status === 400,
      key,
    );
    assert.doesNotThrow(() => validateClientKey(key, false), key);
  }
  for (const key of ["a/x.zip", "reference.bin.bak", "x.deltas", "reference.bin/x", "x.delta/y"]) {
    assert.doesNotThrow(() => validateClientKey(key, true), key);
  }
});

Deno.test("mergeLogicalOrder re-sorts x.delta before x-y in byte order", () => {
  const stored = ["x-y", "x.delta", "x0"];
  assert.deepEqual([...stored].sort(), stored, "stored names arrive in byte order");
  const logical = stored.map((k) => ({ key: logicalKeyOf(k)! }));
  assert.deepEqual(mergeLogicalOrder(logical).map((e) => e.key), ["x", "x-y", "x0"]);
  // UTF-8 byte order, not UTF-16: U+FFFD (EF BF BD) sorts before an astral character (F0 ...).
  assert.deepEqual(mergeLogicalOrder([{ key: "😀" }, { key: "\uFFFD" }]).map((e) => e.key), [
    "\uFFFD",
    "😀",
  ]);
});

Deno.test("toLogicalEntries hides, renames, filters, dedupes and sorts", () => {
  const page = [
    info("d/reference.bin", "reference"),
    info("d/x-y"),
    info("d/x.delta", "delta", 5),
    info("d/x", "passthrough", 3),
    info("d/z.zip.delta", "delta"),
  ];
  const out = toLogicalEntries(page);
  assert.deepEqual(out.map((e) => e.key), ["d/x", "d/x-y", "d/z.zip"]);
  assert.equal(out[0].meta.storage, "delta", "newer of x and x.delta wins");
  assert.equal(page[2].key, "d/x.delta", "input entries are not mutated");
  assert.deepEqual(toLogicalEntries(page, { startAfter: "d/x" }).map((e) => e.key), [
    "d/x-y",
    "d/z.zip",
  ]);
  assert.deepEqual(toLogicalEntries(page, { prefix: "d/x.d" }).map((e) => e.key), []);
  assert.deepEqual(toLogicalEntries(page, { prefix: "d/z" }).map((e) => e.key), ["d/z.zip"]);
});

Deno.test("isSettled holds back keys a later x.delta could sort before", () => {
  // Page ended at "x-y": a later "x.delta" (logical "x") could still come, so "x-y" waits.
  assert.equal(isSettled("x-y", "x-y"), false);
  assert.equal(isSettled("w", "x-y"), true);
  // Once the backend has passed "x.delta", "x-y" can be emitted.
  assert.equal(isSettled("x-y", "x.delta"), true);
  assert.equal(isSettled("x-y", "x0"), true);
  // The key itself could still arrive as a delta (duplicate) until its .delta name is passed.
  assert.equal(isSettled("a", "a"), false);
  assert.equal(isSettled("a", "a.delta"), true);
  // Directory-marker prefixes never become deltas.
  assert.equal(isSettled("d/", "d/"), true);
});

Deno.test("the .dg/ prefix of group baselines is internal and reserved", () => {
  const group = ".dg/0123456789abcdef0123456789abcdef/";
  for (const name of [`${group}reference.bin`, `${group}refs/${"a".repeat(64)}`]) {
    assert.equal(isInternalName(name), true, name);
    assert.equal(logicalKeyOf(name), null, name);
  }
  for (const key of [".dg", ".dgx/a", "a/.dg/b", "x.dg/"]) {
    assert.equal(isInternalName(key), false, key);
    assert.equal(logicalKeyOf(key), key);
    validateClientKey(key, true);
  }
  assert.throws(
    () => validateClientKey(".dg/x", true),
    (err) =>
      err instanceof SvcError && err.code === "InvalidArgument" && /\.dg\//.test(err.message),
  );
  validateClientKey(".dg/x", false); // an ordinary key where compression is off
  const page = toLogicalEntries([info(`${group}reference.bin`), info(".dga"), info("a.zip")]);
  assert.deepEqual(page.map((e) => e.key), [".dga", "a.zip"]);
});

import assert from "node:assert/strict";
import {
  effectiveMaxDeltaRatio,
  finalExtension,
  isDeltaEligible,
  keepsDelta,
} from "./eligibility.ts";

const MAX = 104857600;
const ok = { size: 1000, maxObjectSize: MAX };

Deno.test("isDeltaEligible judges the final extension of the last segment", () => {
  const table: [string, boolean, string][] = [
    ["app.zip", true, "eligible-type"],
    ["App.ZIP", true, "eligible-type"],
    ["releases/v1/app.Jar", true, "eligible-type"],
    ["a.tar", true, "eligible-type"],
    ["x.war", true, "eligible-type"],
    ["x.ear", true, "eligible-type"],
    ["disk.dmg", true, "eligible-type"],
    ["cd.ISO", true, "eligible-type"],
    ["db/2024-01-01.sql", true, "eligible-type"],
    ["pg.dump", true, "eligible-type"],
    ["x.bak", true, "eligible-type"],
    ["x.backup", true, "eligible-type"],
    ["raw.img", true, "eligible-type"],
    ["pkg-1.0-py3-none-any.whl", true, "eligible-type"],
    ["app.sqlite", true, "eligible-type"],
    ["a.tar.gz", true, "eligible-type"],
    ["a.tgz", true, "eligible-type"],
    ["a.gz", true, "eligible-type"],
    ["a.tar.xz", false, "compressed-format"],
    ["a.bz2", false, "compressed-format"],
    ["a.tar.zst", false, "compressed-format"],
    ["a.7z", false, "compressed-format"],
    ["a.rar", false, "compressed-format"],
    ["photo.JPG", false, "compressed-format"],
    ["movie.mp4", false, "compressed-format"],
    ["song.mp3", false, "compressed-format"],
    ["app.zip.sha256", false, "checksum-or-signature"],
    ["app.zip.sha1", false, "checksum-or-signature"],
    ["app.zip.md5", false, "checksum-or-signature"],
    ["app.zip.sig", false, "checksum-or-signature"],
    ["app.zip.asc", false, "checksum-or-signature"],
    ["README", false, "no-extension"],
    ["dir.zip/README", false, "no-extension"],
    [".zip", false, "no-extension"],
    ["a/.bashrc", false, "no-extension"],
    ["a/.tar", false, "no-extension"],
    ["trailing.", false, "no-extension"],
    ["a/.hidden.zip", true, "eligible-type"],
    ["notes.txt", false, "type-not-listed"],
    ["zip", false, "no-extension"],
    ["a.zipx", false, "type-not-listed"],
    ["dir.zip/", false, "directory-marker"],
  ];
  for (const [key, eligible, reason] of table) {
    assert.deepEqual(
      [isDeltaEligible(key, ok).eligible, isDeltaEligible(key, ok).reason],
      [eligible, reason],
      key,
    );
  }
});

Deno.test("isDeltaEligible refuses empty, oversized and compression-disabled objects", () => {
  assert.equal(isDeltaEligible("a.zip", { size: 0, maxObjectSize: MAX }).reason, "empty");
  assert.equal(isDeltaEligible("a.zip", { size: MAX, maxObjectSize: MAX }).eligible, true);
  assert.equal(isDeltaEligible("a.zip", { size: MAX + 1, maxObjectSize: MAX }).reason, "too-large");
  assert.equal(isDeltaEligible("a.zip", { size: 1, maxObjectSize: 0 }).reason, "too-large");
  assert.equal(isDeltaEligible("a.zip", { ...ok, compression: true }).eligible, true);
  const off = isDeltaEligible("a.zip", { ...ok, compression: false });
  assert.deepEqual(off, { eligible: false, reason: "compression-disabled", extension: "zip" });
});

Deno.test("finalExtension lowercases and ignores dotfile names", () => {
  assert.equal(finalExtension("a/b/C.TAR.GZ"), "gz");
  assert.equal(finalExtension("a.b/c"), "");
  assert.equal(finalExtension(".env"), "");
  assert.equal(finalExtension("..zip"), "zip");
});

Deno.test("effectiveMaxDeltaRatio prefers a valid bucket override", () => {
  assert.equal(effectiveMaxDeltaRatio(0.75), 0.75);
  assert.equal(effectiveMaxDeltaRatio(0.75, 0.5), 0.5);
  assert.equal(effectiveMaxDeltaRatio(0.75, 0), 0);
  assert.equal(effectiveMaxDeltaRatio(0.75, 1), 1);
  assert.equal(effectiveMaxDeltaRatio(0.75, 1.5), 0.75);
  assert.equal(effectiveMaxDeltaRatio(0.75, Number.NaN), 0.75);
  assert.throws(() => effectiveMaxDeltaRatio(-0.1), RangeError);
});

Deno.test("keepsDelta keeps only ratios strictly below the threshold", () => {
  assert.equal(keepsDelta(74, 100, 0.75), true);
  assert.equal(keepsDelta(75, 100, 0.75), false);
  assert.equal(keepsDelta(0, 100, 0), false);
  assert.equal(keepsDelta(1, 0, 0.75), false);
});

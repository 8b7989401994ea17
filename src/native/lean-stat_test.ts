/** The statx-based lstat agrees with Deno.lstatSync on type and size, and on absence. */
import assert from "node:assert/strict";
import { ABSENT, DIRECTORY, leanLstat, leanSize, OTHER, REGULAR_FILE } from "./lean-stat.ts";
import { cJoinedPath, cPath, cPathText } from "./c-path.ts";

Deno.test("type and size without following symlinks; absent paths are ABSENT", () => {
  const dir = Deno.makeTempDirSync({ prefix: "svc-lean-stat-" });
  try {
    const big = `${dir}/größe-日本`;
    Deno.writeFileSync(big, new Uint8Array(70_000));
    Deno.symlinkSync(big, `${dir}/link`);
    Deno.mkdirSync(`${dir}/sub`);
    assert.equal(leanLstat(big), REGULAR_FILE);
    assert.equal(leanSize(), Deno.lstatSync(big).size);
    assert.equal(leanLstat(`${dir}/link`), OTHER);
    assert.equal(leanLstat(`${dir}/sub`), DIRECTORY);
    assert.equal(leanLstat(`${dir}/missing`), ABSENT);
    assert.equal(leanLstat(`${big}/below`), ABSENT, "a file as a parent is ENOTDIR: absent");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("C paths: ASCII copied, anything else UTF-8, joined without a string", () => {
  const text = (bytes: Uint8Array) => cPathText(bytes);
  assert.equal(text(cPath("/a/b.txt")), "/a/b.txt");
  assert.equal(text(cPath("/a/é/\u{1F600}")), "/a/é/\u{1F600}");
  assert.equal(text(cJoinedPath("/dir", "name")), "/dir/name");
  assert.equal(text(cJoinedPath("/dïr", "name")), "/dïr/name");
  assert.equal(text(cJoinedPath("/dir", "名前")), "/dir/名前");
  const long = "x".repeat(10_000);
  assert.equal(text(cJoinedPath(`/${long}`, long)), `/${long}/${long}`);
  assert.equal(text(cPath("/short")), "/short", "a shorter path after a longer one ends at NUL");
});

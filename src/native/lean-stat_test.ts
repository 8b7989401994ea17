/**
 * The statx-based lstat agrees with Deno.lstatSync on type and size, and on absence; without
 * statx (or without libc) its Deno fallback gives the same answers.
 */
import assert from "node:assert/strict";
import {
  ABSENT,
  createLeanStat,
  DIRECTORY,
  leanLstat,
  leanLstatC,
  leanSize,
  type LeanStat,
  OTHER,
  REGULAR_FILE,
} from "./lean-stat.ts";
import { cJoinedPath, cPath, cPathText } from "./c-path.ts";
import { loadLibc, processLibc } from "./libc.ts";

const withoutStatx = processLibc.available
  ? { ...processLibc, symbols: { ...processLibc.symbols, statx: null } }
  : processLibc;

const variants: [string, LeanStat][] = [
  ["statx", { leanLstat, leanLstatC, leanSize }],
  ["Deno, libc without statx", createLeanStat(withoutStatx)],
  ["Deno, no libc", createLeanStat(loadLibc(["libc-svc-missing.so.6"]))],
];

for (const [through, stat] of variants) {
  Deno.test(`type and size without following symlinks; absent paths are ABSENT (${through})`, () => {
    const dir = Deno.makeTempDirSync({ prefix: "svc-lean-stat-" });
    try {
      const big = `${dir}/größe-日本`;
      Deno.writeFileSync(big, new Uint8Array(70_000));
      Deno.writeFileSync(`${dir}/small`, new Uint8Array(3));
      Deno.symlinkSync(big, `${dir}/link`);
      Deno.mkdirSync(`${dir}/sub`);
      assert.equal(stat.leanLstat(big), REGULAR_FILE);
      assert.equal(stat.leanSize(), Deno.lstatSync(big).size);
      assert.equal(stat.leanLstatC(cJoinedPath(dir, "small")), REGULAR_FILE);
      assert.equal(stat.leanSize(), 3);
      assert.equal(stat.leanLstat(`${dir}/link`), OTHER);
      assert.equal(stat.leanLstat(`${dir}/sub`), DIRECTORY);
      assert.equal(stat.leanLstat(`${dir}/missing`), ABSENT);
      assert.equal(stat.leanLstat(`${big}/below`), ABSENT, "a file as a parent is ENOTDIR: absent");
      assert.equal(stat.leanLstatC(cPath(`${dir}/missing`)), ABSENT);
    } finally {
      Deno.removeSync(dir, { recursive: true });
    }
  });
}

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

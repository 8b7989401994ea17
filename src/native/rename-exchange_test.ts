import assert from "node:assert/strict";
import { createPathExchange, exchangePaths } from "./rename-exchange.ts";
import { loadLibc, processLibc } from "./libc.ts";

function withDir(test: (dir: string) => void) {
  return () => {
    const dir = Deno.makeTempDirSync({ prefix: "svc-exchange-" });
    try {
      test(dir);
    } finally {
      Deno.removeSync(dir, { recursive: true });
    }
  };
}

Deno.test({
  name: "a file and a directory swap names in one step; a missing side is ENOENT",
  ignore: !processLibc.available,
  fn: withDir((dir) => {
    Deno.writeTextFileSync(`${dir}/a`, "file");
    Deno.mkdirSync(`${dir}/b`);
    Deno.writeTextFileSync(`${dir}/b/inside`, "nested");
    exchangePaths(`${dir}/a`, `${dir}/b`);
    assert.equal(Deno.readTextFileSync(`${dir}/a/inside`), "nested");
    assert.equal(Deno.readTextFileSync(`${dir}/b`), "file");
    assert.throws(
      () => exchangePaths(`${dir}/a`, `${dir}/missing`),
      (err: Error & { code?: string }) =>
        err.code === "ENOENT" && /renameat2 exchange/.test(err.message),
    );
  }),
});

Deno.test(
  "without renameat2 (or libc) the swap refuses, naming what is missing, and changes nothing",
  withDir((dir) => {
    Deno.writeTextFileSync(`${dir}/a`, "a");
    Deno.writeTextFileSync(`${dir}/b`, "b");
    const withoutRenameat2 = processLibc.available
      ? { ...processLibc, symbols: { ...processLibc.symbols, renameat2: null } }
      : processLibc;
    const cases: [ReturnType<typeof loadLibc>, RegExp][] = [
      [withoutRenameat2, /needs renameat2: libc\.so\.6 has no renameat2 \(glibc 2\.28 or later\)$/],
      [loadLibc(["libc-svc-missing.so.6"]), /needs renameat2: libc could not be loaded/],
    ];
    for (const [libc, message] of cases) {
      if (!libc.available && libc === withoutRenameat2) continue;
      assert.throws(
        () => createPathExchange(libc)(`${dir}/a`, `${dir}/b`),
        (err: Error & { code?: string }) => err.code === "ENOSYS" && message.test(err.message),
      );
    }
    assert.equal(Deno.readTextFileSync(`${dir}/a`), "a");
    assert.equal(Deno.readTextFileSync(`${dir}/b`), "b");
  }),
);

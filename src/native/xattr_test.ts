/** Extended attributes: no fallback, so without libc every call refuses, naming libc. */
import assert from "node:assert/strict";
import { loadLibc, processLibc } from "./libc.ts";
import {
  assertXattrSupport,
  createXattr,
  getJsonXattr,
  lookupXattr,
  setJsonXattr,
} from "./xattr.ts";
import { cPath } from "./c-path.ts";

const NEEDS_LIBC =
  /Extended attributes need libc .*could not be loaded: "libc-svc-missing\.so\.6": /;

Deno.test("without libc every xattr call refuses, naming libc, and so does the start check", async () => {
  const xattr = createXattr(loadLibc(["libc-svc-missing.so.6"]));
  assert.match(xattr.unavailable ?? "", NEEDS_LIBC);
  assert.throws(() => xattr.getXattr("/tmp", "user.a"), NEEDS_LIBC);
  assert.throws(() => xattr.lookupXattr("/tmp", "user.a"), NEEDS_LIBC);
  assert.throws(() => xattr.lookupXattrTextC(cPath("/tmp"), "user.a"), NEEDS_LIBC);
  assert.throws(() => xattr.setXattr("/tmp", "user.a", new Uint8Array(1)), NEEDS_LIBC);
  assert.throws(() => xattr.removeXattr("/tmp", "user.a"), NEEDS_LIBC);
  assert.throws(() => xattr.getJsonXattr("/tmp", "user.a"), NEEDS_LIBC);
  assert.throws(() => xattr.setJsonXattr("/tmp", "user.a", 1), NEEDS_LIBC);
  const dir = await Deno.makeTempDir();
  try {
    await assert.rejects(
      assertXattrSupport(dir, xattr),
      (err: Error) =>
        err.message.startsWith(`Data directory "${dir}" cannot be used`) &&
        err.message.includes("Extended attributes need libc"),
    );
    assert.deepEqual([...Deno.readDirSync(dir)], [], "no probe file left");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "with libc the start check passes and attributes round-trip",
  ignore: !processLibc.available,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    try {
      await assertXattrSupport(dir);
      const path = `${dir}/file`;
      await Deno.writeFile(path, new Uint8Array());
      setJsonXattr(path, "user.test.meta", { a: "é" });
      assert.deepEqual(getJsonXattr(path, "user.test.meta"), { a: "é" });
      assert.equal(lookupXattr(`${dir}/absent`, "user.test.meta"), null);
      assert.equal(
        createXattr(processLibc).lookupXattrTextC(cPath(path), "user.test.meta"),
        '{"a":"é"}',
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

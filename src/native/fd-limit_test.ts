import assert from "node:assert/strict";
import { raiseOpenFileLimit } from "./fd-limit.ts";
import { loadLibc, processLibc } from "./libc.ts";

Deno.test({
  name: "the open-file limit is raised to the hard limit through libc",
  ignore: Deno.build.os !== "linux" || !processLibc.available,
  fn: () => {
    const limit = raiseOpenFileLimit();
    assert.ok(limit !== null);
    assert.equal(limit.soft, limit.hard);
    assert.ok(limit.before <= limit.soft);
    assert.deepEqual(
      raiseOpenFileLimit(),
      { ...limit, before: limit.soft },
      "nothing left to raise",
    );
  },
});

Deno.test("without libc the limit is left as it was, and null says so", () => {
  assert.equal(raiseOpenFileLimit(loadLibc(["libc-svc-missing.so.6"])), null);
});

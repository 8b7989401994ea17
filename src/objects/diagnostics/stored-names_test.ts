import assert from "node:assert/strict";
import type { ObjectInfo, ObjectMeta } from "../../storage/mod.ts";
import { roleOf } from "./stored-names.ts";

function info(key: string, extra: Record<string, unknown> = {}): ObjectInfo {
  const meta = { size: 1, etag: "e", userMeta: {}, headers: {}, lastModified: 0, ...extra };
  return { key, storedSize: 1, meta: meta as unknown as ObjectMeta };
}

Deno.test("stored names: baseline generations of a group are classified like generation 0", () => {
  const root = ".dg/0123456789abcdef0123456789abcdef/";
  assert.deepEqual(roleOf(info(`${root}reference.bin`), true), {
    role: "baseline",
    deltaspace: root,
  });
  assert.deepEqual(roleOf(info(`${root}g3/reference.bin`), true), {
    role: "baseline",
    deltaspace: `${root}g3/`,
  });
  assert.deepEqual(roleOf(info(`${root}refs/${"a".repeat(64)}`), true), {
    role: "marker",
    deltaspace: root,
  });
  assert.deepEqual(roleOf(info(`${root}g3/refs/${"a".repeat(64)}`), true), {
    role: "marker",
    deltaspace: `${root}g3/`,
  });
  assert.deepEqual(roleOf(info("r/1/app.tar.delta", { deltaspace: `${root}g3/` }), true), {
    role: "delta",
    key: "r/1/app.tar",
    deltaspace: `${root}g3/`,
  });
});

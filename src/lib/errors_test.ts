import assert from "node:assert/strict";
import { diskFullError, isNoSpaceError, SvcError, toSvcError } from "./errors.ts";

/** A system error as Deno and node:fs raise it. */
function osError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

Deno.test("ENOSPC and EDQUOT, also wrapped as a cause, map to 507 InsufficientStorage", () => {
  const enospc = osError("ENOSPC", "No space left on device (os error 28): write");
  const edquot = osError("EDQUOT", "Disk quota exceeded (os error 122)");
  const wrapped = new Error("Storage backend failure", { cause: enospc });
  for (const err of [enospc, edquot, wrapped, new Error("x (os error 28)")]) {
    assert.ok(isNoSpaceError(err), String(err));
    const mapped = toSvcError(err);
    assert.equal(mapped.code, "InsufficientStorage");
    assert.equal(mapped.status, 507);
    assert.match(mapped.message, /disk is full/);
  }
  for (const err of [osError("EIO", "I/O error"), new Error("boom"), "text", undefined]) {
    assert.equal(isNoSpaceError(err), false);
    assert.equal(toSvcError(err).code, "InternalError");
  }
  assert.equal(isNoSpaceError(new SvcError("InternalError", "x")), false);
  assert.ok(isNoSpaceError(diskFullError("detail")));
  assert.match(diskFullError(undefined, "the object cannot be read").message, /cannot be read/);
});

Deno.test("a backend that is full (507) or a full local upload spool is InsufficientStorage", async () => {
  const { BackendError, svcErrorFromBackend } = await import("../storage/s3/s3-errors.ts");
  const full = new BackendError(507, "XMinioStorageFull", "Storage is full", "PUT b/k", false);
  assert.equal(svcErrorFromBackend(full, "b", "k").code, "InsufficientStorage");
  const spool = osError("ENOSPC", "No space left on device (os error 28)");
  assert.equal(svcErrorFromBackend(spool, "b", "k").status, 507);
  const other = new BackendError(500, "InternalError", "boom", "PUT b/k", true);
  assert.equal(svcErrorFromBackend(other, "b", "k").code, "InternalError");
});

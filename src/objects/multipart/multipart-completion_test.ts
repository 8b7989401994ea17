import assert from "node:assert/strict";
import { throwsWith } from "../../testing/svc-error-assertions.ts";
import { checkUploadTotal } from "./multipart-completion.ts";
import type { PartInfo } from "./multipart-store.ts";

const part = (partNumber: number, size: number): PartInfo => ({
  partNumber,
  etag: "0".repeat(32),
  size,
  lastModified: 0,
});

Deno.test("checkUploadTotal: a total up to the maximum passes and is returned", () => {
  assert.equal(checkUploadTotal([part(1, 60), part(2, 40)], 100), 100);
  assert.equal(checkUploadTotal([], 0), 0);
});

Deno.test("checkUploadTotal: one byte over is EntityTooLarge naming both sizes", () => {
  const err = throwsWith(() => checkUploadTotal([part(1, 60), part(2, 41)], 100), "EntityTooLarge");
  assert.match(err.message, /101 bytes .* 100 bytes \(max_passthrough_object_size\)/);
  assert.deepEqual(
    [err.details.ProposedSize, err.details.MaxSizeAllowed],
    ["101", "100"],
  );
});

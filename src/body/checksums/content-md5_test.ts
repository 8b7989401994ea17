import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { validateContentMd5 } from "./content-md5.ts";
import { throwsWith } from "../../testing/svc-error-assertions.ts";

Deno.test("Content-MD5: base64 of 16 bytes decodes to hex, anything else is InvalidDigest", () => {
  const body = new TextEncoder().encode("hello world");
  const b64 = createHash("md5").update(body).digest("base64");
  const hex = createHash("md5").update(body).digest("hex");
  assert.equal(validateContentMd5(b64), hex);
  assert.equal(validateContentMd5(` ${b64} `), hex);
  assert.equal(validateContentMd5(null), null);
  for (
    const bad of [
      "",
      "abc",
      hex, // hex, not base64
      b64.slice(0, -2), // padding missing
      btoa("0123456789abcdef0"), // 17 bytes
      btoa("0123456789abcde"), // 15 bytes
      "XrY7u+Ae7tCTyyK7j1rNww=!",
      "XrY7u+Ae7tCTyyK7j1rNwx==", // non-zero trailing bits
    ]
  ) {
    const err = throwsWith(() => validateContentMd5(bad), "InvalidDigest");
    assert.equal(err.status, 400);
  }
});

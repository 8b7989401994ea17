import assert from "node:assert/strict";
import { SvcError } from "../lib/errors.ts";
import { formBoundary, partOf } from "./form-part-headers.ts";

const MALFORMED = /not well-formed multipart\/form-data/;

Deno.test("formBoundary reads the boundary parameter", () => {
  assert.equal(formBoundary("multipart/form-data; boundary=abc"), "abc");
  assert.equal(formBoundary('Multipart/Form-Data; charset=utf-8; BOUNDARY="a b:c"'), "a b:c");
  for (
    const bad of [
      null,
      "application/x-www-form-urlencoded",
      "multipart/form-data",
      "multipart/form-data; boundary=",
      `multipart/form-data; boundary=${"a".repeat(71)}`,
      'multipart/form-data; boundary="ends with space "',
      "multipart/mixed; boundary=abc",
    ]
  ) {
    assert.throws(
      () => formBoundary(bad),
      (err) => err instanceof SvcError && MALFORMED.test(err.message),
      String(bad),
    );
  }
});

Deno.test("partOf reads name, filename and type; a part without a form-data name is refused", () => {
  assert.deepEqual(
    partOf(
      'Content-Disposition: form-data; name="file"; filename="C:\\dir\\a.txt"\r\nContent-Type: text/plain',
    ),
    { name: "file", filename: "C:\\dir\\a.txt", contentType: "text/plain" },
  );
  assert.deepEqual(partOf("Content-Disposition: form-data; name=key"), {
    name: "key",
    filename: null,
    contentType: null,
  });
  for (
    const bad of [
      "",
      "Content-Type: text/plain",
      "Content-Disposition: attachment; name=x",
      "no colon",
    ]
  ) {
    assert.throws(
      () => partOf(bad),
      (err) => err instanceof SvcError && MALFORMED.test(err.message),
      bad,
    );
  }
});

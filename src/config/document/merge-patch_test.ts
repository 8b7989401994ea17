import assert from "node:assert/strict";
import { mergePatch } from "./merge-patch.ts";

// Every row of RFC 7396 Appendix A ("Example Test Cases"): original, patch, result.
const RFC_CASES: [unknown, unknown, unknown][] = [
  [{ a: "b" }, { a: "c" }, { a: "c" }],
  [{ a: "b" }, { b: "c" }, { a: "b", b: "c" }],
  [{ a: "b" }, { a: null }, {}],
  [{ a: "b", b: "c" }, { a: null }, { b: "c" }],
  [{ a: ["b"] }, { a: "c" }, { a: "c" }],
  [{ a: "c" }, { a: ["b"] }, { a: ["b"] }],
  [{ a: { b: "c" } }, { a: { b: "d", c: null } }, { a: { b: "d" } }],
  [{ a: [{ b: "c" }] }, { a: [1] }, { a: [1] }],
  [["a", "b"], ["c", "d"], ["c", "d"]],
  [{ a: "b" }, ["c"], ["c"]],
  [{ a: "foo" }, null, null],
  [{ a: "foo" }, "bar", "bar"],
  [{ e: null }, { a: 1 }, { e: null, a: 1 }],
  [[1, 2], { a: "b", c: null }, { a: "b" }],
  [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
];

Deno.test("mergePatch: every example of RFC 7396 Appendix A", () => {
  for (const [original, patch, expected] of RFC_CASES) {
    assert.deepEqual(mergePatch(original, patch), expected, JSON.stringify({ original, patch }));
  }
});

Deno.test("mergePatch: the RFC 7396 section 3 document example", () => {
  const original = {
    title: "Goodbye!",
    author: { givenName: "John", familyName: "Doe" },
    tags: ["example", "sample"],
    content: "This will be unchanged",
  };
  const patch = {
    title: "Hello!",
    phoneNumber: "+01-123-456-7890",
    author: { familyName: null },
    tags: ["example"],
  };
  assert.deepEqual(mergePatch(original, patch), {
    title: "Hello!",
    author: { givenName: "John" },
    tags: ["example"],
    content: "This will be unchanged",
    phoneNumber: "+01-123-456-7890",
  });
});

Deno.test("mergePatch: inputs are not modified and the result does not alias the patch", () => {
  const target = { a: { b: 1, c: [1, 2] }, d: 4 };
  const patch = { a: { b: 2, e: { f: [3] } }, d: null };
  const snapshotTarget = structuredClone(target);
  const snapshotPatch = structuredClone(patch);
  const result = mergePatch(target, patch) as { a: { e: { f: number[] } } };
  assert.deepEqual(target, snapshotTarget);
  assert.deepEqual(patch, snapshotPatch);
  result.a.e.f.push(9);
  assert.deepEqual(patch.a.e.f, [3]);
});

import assert from "node:assert/strict";
import { lookupXattr, setJsonXattr } from "../../native/xattr.ts";
import { fakeMeta } from "../../testing/object-fixtures.ts";
import type { StoredMeta } from "./fs-extents.ts";
import {
  fitsAttribute,
  META_XATTR,
  readStoredMeta,
  rewriteMetaInFile,
  SPILL_ABOVE,
  writeNewMetaSync,
} from "./fs-meta-spill.ts";

const BODY = new TextEncoder().encode("the object's bytes");
const small = (): StoredMeta => fakeMeta(BODY.length, { userMeta: { a: "1" } });
const big = (seed: string): StoredMeta =>
  fakeMeta(BODY.length, { userMeta: { big: seed.repeat(SPILL_ABOVE) } });

async function withObject(meta: StoredMeta, test: (path: string) => void | Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "svc-meta-spill-" });
  const path = `${dir}/object`;
  try {
    const file = Deno.openSync(path, { write: true, createNew: true });
    file.writeSync(BODY);
    writeNewMetaSync(path, file, BODY.length, meta);
    file.close();
    await test(path);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const attribute = (path: string) =>
  JSON.parse(new TextDecoder().decode(lookupXattr(path, META_XATTR)!)) as StoredMeta;
const bodyOf = (path: string) => Deno.readFileSync(path).subarray(0, BODY.length);
const ino = (path: string) => Deno.statSync(path).ino!;

Deno.test("a record that fits stays in the attribute; a larger one follows the bytes", async () => {
  assert.equal(fitsAttribute(small()), true);
  assert.equal(fitsAttribute(big("x")), false);
  await withObject(small(), (path) => {
    assert.deepEqual(readStoredMeta(path), small());
    assert.equal(Deno.statSync(path).size, BODY.length);
  });
  await withObject(big("x"), (path) => {
    const spill = attribute(path).spill!;
    assert.equal(spill.body, BODY.length);
    assert.equal(spill.at, BODY.length);
    assert.equal(Deno.statSync(path).size, BODY.length + spill.length);
    assert.deepEqual(readStoredMeta(path), { ...big("x"), spill });
    assert.deepEqual(bodyOf(path), BODY);
  });
});

Deno.test("rewrites in place alternate between two places and shrink back to the bytes", async () => {
  await withObject(big("a"), async (path) => {
    const sizes: number[] = [];
    for (const seed of ["b", "c", "d", "e"]) {
      assert.equal(
        await rewriteMetaInFile(path, ino(path), BODY.length, big(seed), () => true),
        true,
      );
      const stored = readStoredMeta(path)!;
      assert.equal(stored.userMeta.big, seed.repeat(SPILL_ABOVE));
      assert.equal(stored.spill!.body, BODY.length);
      sizes.push(Deno.statSync(path).size);
      assert.deepEqual(bodyOf(path), BODY);
    }
    // Same-sized records: after the first, before it, after it, before it.
    assert.equal(new Set(sizes).size, 2, `sizes ${sizes}`);
    assert.equal(await rewriteMetaInFile(path, ino(path), BODY.length, small(), () => true), true);
    assert.deepEqual(readStoredMeta(path), small());
    assert.equal(Deno.statSync(path).size, BODY.length);
  });
});

Deno.test("a rewrite declines when the file was replaced", async () => {
  await withObject(big("a"), async (path) => {
    assert.equal(
      await rewriteMetaInFile(path, ino(path) + 1, BODY.length, big("b"), () => true),
      false,
    );
    assert.equal(
      await rewriteMetaInFile(path, ino(path), BODY.length, big("b"), () => false),
      false,
    );
    assert.equal(readStoredMeta(path)!.userMeta.big, "a".repeat(SPILL_ABOVE));
  });
});

Deno.test("a reader never takes other bytes for the record its attribute names", async () => {
  await withObject(big("a"), (path) => {
    const spill = attribute(path).spill!;
    // Another record where this attribute points (a rewrite reused the space): the id differs.
    setJsonXattr(path, META_XATTR, { spill: { ...spill, id: "an older attribute" } });
    assert.throws(() => readStoredMeta(path), { name: "SvcError", message: /rewritten too often/ });
    // A record cut short by a truncation.
    setJsonXattr(path, META_XATTR, { spill: { ...spill, length: spill.length + 10 } });
    assert.throws(() => readStoredMeta(path), /rewritten too often/);
    // The file gone: no metadata.
    setJsonXattr(path, META_XATTR, { spill });
    assert.equal(readStoredMeta(`${path}-absent`), null);
  });
});

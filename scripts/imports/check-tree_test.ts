import assert from "node:assert/strict";

import { checkTree, type LayerRules } from "./check-tree.ts";
import { layerPicture, replaceLayerPicture } from "./layer-picture.ts";
import { checkDocPaths } from "./doc-paths.ts";

const rules: LayerRules = {
  layers: { lib: [], store: ["lib"], api: ["lib", "store"] },
  entryImports: ["api"],
  testingRoom: "testing",
  sharedOutsideSrc: [],
  maxFileLines: 400,
  maxFilesPerFolder: 25,
  modEntry: true,
};

/** A temporary tree holding `files` (path → text); removed after `body`. */
async function withTree(files: Record<string, string>, body: (root: string) => Promise<void>) {
  const root = await Deno.makeTempDir({ prefix: "check-tree-" });
  try {
    for (const [path, text] of Object.entries(files)) {
      await Deno.mkdir(`${root}/${path.slice(0, path.lastIndexOf("/"))}`, { recursive: true })
        .catch(() => {});
      await Deno.writeTextFile(`${root}/${path}`, text);
    }
    await body(root);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

const layered = {
  "main.ts": 'import { serve } from "./src/api/mod.ts";\nserve();\n',
  "src/lib/mod.ts": 'export { clamp } from "./clamp.ts";\n',
  "src/lib/clamp.ts": "export const clamp = (n: number) => Math.max(0, n);\n",
  "src/store/mod.ts": 'export { put } from "./put.ts";\n',
  "src/store/put.ts":
    'import { clamp } from "../lib/mod.ts";\nexport const put = () => clamp(1);\n',
  "src/api/mod.ts": 'import { put } from "../store/mod.ts";\nexport const serve = () => put();\n',
  "src/api/mod_test.ts": 'import { put } from "../store/put.ts";\nput();\n',
};

Deno.test("a layered tree passes", async () => {
  await withTree(layered, async (root) => {
    const report = await checkTree(root, rules);
    assert.deepEqual(report.violations, []);
    assert.deepEqual(report.files, 7);
  });
});

Deno.test("a planted cycle fails, type-only imports included", async () => {
  await withTree({
    ...layered,
    "src/store/a.ts": 'import type { B } from "./b.ts";\nexport interface A { b?: B }\n',
    "src/store/b.ts": 'import type { A } from "./a.ts";\nexport interface B { a?: A }\n',
  }, async (root) => {
    const { violations } = await checkTree(root, rules);
    assert.deepEqual(violations, [
      "import cycle of 2 files: src/store/a.ts -> src/store/b.ts",
    ]);
  });
});

Deno.test("a planted upward edge fails", async () => {
  await withTree({
    ...layered,
    "src/lib/clamp.ts": 'import { put } from "../store/mod.ts";\nexport const clamp = put;\n',
  }, async (root) => {
    const { violations } = await checkTree(root, rules);
    assert.ok(violations.some((v) => v.includes('room "lib" may not import room "store"')));
    // lib → store → lib is also a cycle through the two mod.ts files.
    assert.ok(violations.some((v) => v.startsWith("import cycle")));
  });
});

Deno.test("production may not import test support; tests may import anything", async () => {
  await withTree({
    ...layered,
    "src/testing/fixture.ts": "export const fixture = 1;\n",
    "src/store/put.ts":
      'import { fixture } from "../testing/fixture.ts";\nexport const put = () => fixture;\n',
  }, async (root) => {
    const { violations } = await checkTree(root, rules);
    assert.deepEqual(violations, [
      "src/store/put.ts:1: production code imports test support src/testing/fixture.ts",
    ]);
  });
});

Deno.test("another room is entered through its mod.ts", async () => {
  await withTree({
    ...layered,
    "src/api/mod.ts": 'import { put } from "../store/put.ts";\nexport const serve = () => put();\n',
  }, async (root) => {
    const { violations } = await checkTree(root, rules);
    assert.deepEqual(violations, [
      'src/api/mod.ts:1: enters room "store" past its mod.ts (src/store/put.ts)',
    ]);
  });
});

Deno.test("files outside a room, long files and crowded folders are reported", async () => {
  const crowded: Record<string, string> = {};
  for (let i = 0; i < 26; i++) crowded[`src/lib/n${i}.ts`] = "export {};\n";
  await withTree({
    ...layered,
    ...crowded,
    "src/loose.ts": "export {};\n",
    "src/store/long.ts": "export {};\n".repeat(401),
  }, async (root) => {
    const { violations } = await checkTree(root, rules);
    assert.deepEqual(violations.sort(), [
      "src/lib/: 28 files at one level (at most 25)",
      "src/loose.ts: not in a room of the layer table",
      "src/store/long.ts: 401 lines (at most 400)",
    ]);
  });
});

Deno.test("the layer table itself must be acyclic and name known rooms", async () => {
  await withTree(layered, async (root) => {
    const { violations } = await checkTree(root, {
      ...rules,
      layers: { lib: ["api"], store: ["lib", "cache"], api: ["lib", "store"] },
    });
    assert.ok(violations.includes('layer table: "store" names unknown room "cache"'));
    assert.ok(violations.some((v) => v.startsWith("layer table: rooms in a cycle")));
  });
});

Deno.test("the architecture picture is replaced between its markers", () => {
  const picture = layerPicture({ lib: [], api: ["lib"] });
  assert.deepEqual(picture, "```\napi  → lib\nlib  → (nothing)\n```");
  const doc = "# A\n<!-- layers:begin -->\nold\n<!-- layers:end -->\ntail\n";
  const next = replaceLayerPicture(doc, picture)!;
  assert.ok(next.includes("```\napi  → lib"));
  assert.ok(next.endsWith("<!-- layers:end -->\ntail\n"));
  assert.deepEqual(replaceLayerPicture("no markers", picture), undefined);
});

Deno.test("the architecture document may cite only files that exist; a moved one is repaired", () => {
  const files = ["src/lib/key-lock.ts", "src/storage/fs/fs-walk.ts", "ui/src/usage.ts"];
  const doc = "`objects/key-lock.ts`, `fs-walk.ts`, `src/storage/fs-walk.ts` and `gone.ts`.";
  const report = checkDocPaths(doc, files);
  assert.deepEqual(report.missing, ["gone.ts"]);
  assert.equal(
    report.repaired,
    "`lib/key-lock.ts`, `fs-walk.ts`, `src/storage/fs/fs-walk.ts` and `gone.ts`.",
  );
});

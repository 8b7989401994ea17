// The structure check of `deno task check` and `npm test`: import cycles, the layer table,
// test support kept out of production, rooms entered through mod.ts, file and folder sizes, and
// docs/ARCHITECTURE.md's picture of the layers equal to the table. Exits 1 on any violation.
//
//   deno run -A scripts/check-imports.ts [--write-docs]

import { checkTree, type LayerRules } from "./imports/check-tree.ts";
import { ENTRY_IMPORTS, LAYERS, SHARED_OUTSIDE_SRC, TESTING_ROOM } from "./imports/layers.ts";
import { layerPicture, replaceLayerPicture } from "./imports/layer-picture.ts";
import { checkDocPaths } from "./imports/doc-paths.ts";
import { sourceFiles } from "./imports/source-files.ts";

export const SVC_RULES: LayerRules = {
  layers: LAYERS,
  entryImports: ENTRY_IMPORTS,
  testingRoom: TESTING_ROOM,
  sharedOutsideSrc: SHARED_OUTSIDE_SRC,
  maxFileLines: 400,
  maxFilesPerFolder: 25,
  modEntry: true,
};

const ARCHITECTURE = "docs/ARCHITECTURE.md";

if (import.meta.main) {
  const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
  const report = await checkTree(root, SVC_RULES);
  const docsPath = `${root}/${ARCHITECTURE}`;
  const docs = await Deno.readTextFile(docsPath);
  const paths = checkDocPaths(docs, await sourceFiles(root));
  for (const path of paths.missing) {
    report.violations.push(`${ARCHITECTURE}: cites \`${path}\`, which is not in the tree`);
  }
  const wanted = replaceLayerPicture(paths.repaired, layerPicture(LAYERS));
  if (wanted === undefined) {
    report.violations.push(`${ARCHITECTURE}: no <!-- layers:begin --> … <!-- layers:end --> block`);
  } else if (wanted !== docs) {
    if (Deno.args.includes("--write-docs")) {
      await Deno.writeTextFile(docsPath, wanted);
      console.log(`${ARCHITECTURE}: layer picture rewritten from scripts/imports/layers.ts`);
    } else {
      report.violations.push(
        `${ARCHITECTURE}: the layer picture differs from scripts/imports/layers.ts, or a cited ` +
          `file moved ` +
          `(run: deno run -A scripts/check-imports.ts --write-docs)`,
      );
    }
  }
  for (const violation of report.violations) console.log(violation);
  console.log(
    `check-imports: ${report.files} files, ${report.edges} imports, ` +
      `${report.violations.length} violation(s)`,
  );
  if (report.violations.length > 0) Deno.exit(1);
}

/**
 * compile.sh embeds everything svc loads at run time: every worker entry point, dynamic import and
 * file read through import.meta.url in src/ and main.ts (the rule: tests/helpers/runtime-loads.ts)
 * is named by an `--include`, and every include exists. A binary missing one starts fine and fails
 * on the first upload, login or archive, so this is checked without building it.
 */
import assert from "node:assert/strict";
import {
  compileIncludes,
  findRuntimeLoads,
  isIncluded,
  type RuntimeLoad,
} from "./helpers/runtime-loads.ts";
import { BUILD_INFO_URL } from "../src/cli/version-info.ts";

const ROOT = new URL("../", import.meta.url);

async function productionFiles(dir: string): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(new URL(dir, ROOT))) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) files.push(...await productionFiles(path));
    else if (/\.(ts|tsx|js|mjs)$/.test(entry.name) && !/_test\.\w+$/.test(entry.name)) {
      files.push(path);
    }
  }
  return files;
}

async function sourceLoads(): Promise<RuntimeLoad[]> {
  const loads: RuntimeLoad[] = [];
  for (const file of ["main.ts", ...await productionFiles("src")]) {
    loads.push(...findRuntimeLoads(file, await Deno.readTextFile(new URL(file, ROOT))));
  }
  return loads;
}

const where = (load: RuntimeLoad) => `${load.file}:${load.line} ${load.text}`;

Deno.test("compile.sh includes every file the source loads at run time", async () => {
  const includes = compileIncludes(await Deno.readTextFile(new URL("compile.sh", ROOT)));
  const loads = await sourceLoads();
  // The five workers are known run-time loads: a scan finding none of them is a broken scan.
  for (
    const worker of [
      "hash-worker.ts",
      "bcrypt-worker.ts",
      "archive-worker.ts",
      "model-worker.ts",
      "frame-worker.ts",
    ]
  ) {
    assert.ok(loads.some((load) => load.target?.endsWith(`/${worker}`)), `${worker} not found`);
  }
  const unnamed = loads.filter((load) => load.target === undefined).map(where);
  assert.deepEqual(unnamed, [], "run-time loads whose target the source does not name");
  const missing = loads.filter((load) => !isIncluded(load.target!, includes)).map(where);
  assert.deepEqual(missing, [], "run-time loads compile.sh does not --include");
});

Deno.test("every compile.sh include exists (or is the build info compile.sh writes)", async () => {
  const includes = compileIncludes(await Deno.readTextFile(new URL("compile.sh", ROOT)));
  const generated = BUILD_INFO_URL.pathname.slice(ROOT.pathname.length);
  assert.ok(includes.includes(generated), `${generated} is not embedded`);
  const absent: string[] = [];
  for (const path of includes) {
    if (path === generated) continue;
    try {
      await Deno.stat(new URL(path, ROOT));
    } catch {
      absent.push(path);
    }
  }
  assert.deepEqual(absent, [], "compile.sh includes paths that do not exist");
});

// --- the scanner itself ---------------------------------------------------------------------------

Deno.test("findRuntimeLoads: workers, reads, resolve and dynamic imports, resolved to the root", () => {
  const source = [
    `const w = new Worker(new URL("./w.ts", import.meta.url), { type: "module" });`,
    `const a = new Worker(new URL('../up/a.ts', import.meta.url).href);`,
    "const t = await Deno.readTextFile(new URL(`./data.json`, import.meta.url));",
    `const r = import.meta.resolve("./r.ts");`,
    `const m = await import("./lazy.ts");`,
    `const p = await import("npm:pkg");`,
    `type T = typeof import("./types.ts");`,
    `await importKey("./not-an-import.ts"); x.import("./method.ts");`,
    `// new URL("./commented.ts", import.meta.url)`,
    `const u = "http://x"; /* import("./block.ts") */`,
  ].join("\n");
  const loads = findRuntimeLoads("src/room/file.ts", source);
  assert.deepEqual(loads.map((load) => [load.line, load.target]).sort(), [
    [1, "src/room/w.ts"],
    [2, "src/up/a.ts"],
    [3, "src/room/data.json"],
    [4, "src/room/r.ts"],
    [5, "src/room/lazy.ts"],
  ]);
});

Deno.test("findRuntimeLoads: loads the source does not name are reported without a target", () => {
  const source = [
    `const m = await import(name);`,
    "const n = await import(`./${name}.ts`);",
    `const d = import.meta.dirname + "/x";`,
    `const f = import.meta.filename;`,
  ].join("\n");
  const loads = findRuntimeLoads("main.ts", source);
  assert.deepEqual(loads.map((load) => [load.line, load.target]).sort(), [
    [1, undefined],
    [2, undefined],
    [3, undefined],
    [4, undefined],
  ]);
});

Deno.test("compileIncludes and isIncluded: flags and the includes array, files and folders", () => {
  const script = [
    `deno compile --include src/a.ts --include=./src/dir/ \\`,
    `includes=(`,
    `  src/b.ts # a worker`,
    `  "src/c.json"`,
    `)`,
    `for f in "\${includes[@]}"; do args+=(--include "$f"); done`,
  ].join("\n");
  const includes = compileIncludes(script);
  assert.deepEqual(includes.sort(), ["src/a.ts", "src/b.ts", "src/c.json", "src/dir"]);
  assert.ok(isIncluded("src/dir/x/y.ts", includes));
  assert.ok(isIncluded("src/b.ts", includes));
  assert.ok(!isIncluded("src/directory.ts", includes));
  assert.ok(!isIncluded("src/d.ts", includes));
});

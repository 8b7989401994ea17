import assert from "node:assert/strict";

const makeMods = new URL("./make-mods.ts", import.meta.url).pathname;
const deno = Deno.execPath();

/** Runs make-mods.ts in a temporary tree holding `files`, then `check` on the result. */
async function afterMakeMods(
  files: Record<string, string>,
  check: (
    code: number,
    output: string,
    read: (path: string) => Promise<string>,
  ) => void | Promise<void>,
) {
  const root = await Deno.makeTempDir({ prefix: "make-mods-" });
  try {
    for (const [path, text] of Object.entries(files)) {
      await Deno.mkdir(`${root}/${path.slice(0, path.lastIndexOf("/"))}`, { recursive: true });
      await Deno.writeTextFile(`${root}/${path}`, text);
    }
    const run = await new Deno.Command(deno, {
      args: ["run", "--allow-read", "--allow-write", makeMods],
      cwd: root,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const output = new TextDecoder().decode(run.stdout) + new TextDecoder().decode(run.stderr);
    await check(run.code, output, (path) => Deno.readTextFile(`${root}/${path}`));
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

Deno.test("make-mods writes a room's mod.ts from what other rooms import and routes them there", async () => {
  await afterMakeMods({
    "src/store/put.ts": "export const put = () => 1;\nexport interface Row { n: number }\n",
    "src/store/get.ts": 'export { put as alias } from "./put.ts";\nexport const get = () => 2;\n',
    "src/api/serve.ts": 'import { put, type Row } from "../store/put.ts";\n' +
      'import { get } from "../store/get.ts";\nexport const serve = (r: Row) => put() + get() + r.n;\n',
    "src/api/serve_test.ts": 'import { put } from "../store/put.ts";\nput();\n',
  }, async (code, output, read) => {
    assert.equal(code, 0, output);
    const mod = await read("src/store/mod.ts");
    assert.ok(mod?.includes('export { get } from "./get.ts";'), mod);
    assert.ok(mod?.includes('export { put } from "./put.ts";'), mod);
    assert.ok(mod?.includes('export type { Row } from "./put.ts";'), mod);
    const serve = await read("src/api/serve.ts");
    assert.ok(
      serve?.startsWith('import { put, type Row, get } from "../store/mod.ts";\n'),
      serve,
    );
    // Tests may reach inside a room: left as they were.
    assert.equal(
      await read("src/api/serve_test.ts"),
      'import { put } from "../store/put.ts";\nput();\n',
    );
  });
});

Deno.test("make-mods refuses a name two files of one room export", async () => {
  await afterMakeMods({
    "src/store/a.ts": "export const same = 1;\n",
    "src/store/b.ts": "export const same = 2;\n",
    "src/api/x.ts": 'import { same } from "../store/a.ts";\nexport const x = same;\n',
    "src/api/y.ts": 'import { same } from "../store/b.ts";\nexport const y = same;\n',
  }, (code, output) => {
    assert.equal(code, 1);
    assert.match(output, /room "store" exports "same" from both/);
  });
});

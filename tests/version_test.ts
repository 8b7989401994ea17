/**
 * `svc --version` and `svc version`: the release (kept equal to package.json), the commit of the
 * checkout it runs from and the Deno version, exit 0. Also the compiled case: a build-info.json
 * beside src/cli/version-info.ts (what compile.sh embeds) wins over git.
 */
import assert from "node:assert/strict";
import { runSvc } from "./helpers/run-svc.ts";
import { VERSION } from "../src/lib/version.ts";
import { BUILD_INFO_URL, formatVersion, versionInfo } from "../src/cli/version-info.ts";

const ROOT = new URL("../", import.meta.url);

async function gitHead(): Promise<string> {
  const output = await new Deno.Command("git", {
    args: ["rev-parse", "--short", "HEAD"],
    cwd: ROOT.pathname,
    stdout: "piped",
    stderr: "null",
  }).output().catch(() => undefined);
  return output?.success ? new TextDecoder().decode(output.stdout).trim() : "unknown";
}

Deno.test("VERSION is package.json's version", async () => {
  const pkg = JSON.parse(await Deno.readTextFile(new URL("package.json", ROOT)));
  assert.equal(VERSION, pkg.version);
});

for (const args of [["--version"], ["-V"], ["version"]]) {
  Deno.test(`svc ${args.join(" ")} prints version, commit and Deno version, exit 0`, async () => {
    const run = await runSvc(args);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(run.stdout.trim().split("\n"), [
      `svc ${VERSION}`,
      `commit ${await gitHead()}`,
      `deno ${Deno.version.deno}`,
    ]);
    assert.deepEqual(run.entries, [], "--version writes nothing");
  });
}

Deno.test("versionInfo: the commit compile.sh embeds wins over the checkout's", async () => {
  try {
    await Deno.stat(BUILD_INFO_URL);
    throw new Error(`${BUILD_INFO_URL.pathname} exists (a compile.sh run in progress?)`);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  await Deno.writeTextFile(BUILD_INFO_URL, JSON.stringify({ commit: "feedbee" }));
  try {
    const info = await versionInfo();
    assert.equal(info.commit, "feedbee");
    assert.equal(formatVersion(info), `svc ${VERSION}\ncommit feedbee\ndeno ${Deno.version.deno}`);
  } finally {
    await Deno.remove(BUILD_INFO_URL);
  }
  assert.equal((await versionInfo()).commit, await gitHead());
});

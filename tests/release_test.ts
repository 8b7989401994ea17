/**
 * The release kit (issue 29): the smoke test every release binary goes through, run here on the
 * source tree (the compile runtime may be unreachable, the checks are the same); release.sh
 * either lays out a complete release or stops with a clear message and writes nothing; the
 * third-party notices name every bundled package with its license.
 */
import assert from "node:assert/strict";
import { thirdPartyNotices } from "../scripts/release/third-party-notices.ts";
import { serverPackages } from "../scripts/release/licenses.ts";
import { buildUi } from "../scripts/build-ui.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const DENO = `${ROOT}node_modules/.bin/deno`;

async function run(program: string, args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(program, {
    args,
    cwd: ROOT,
    env: { DENO_NO_UPDATE_CHECK: "1", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

Deno.test("release: the smoke test passes on svc run from source", async () => {
  const { code, stdout, stderr } = await run(DENO, [
    "run",
    "-A",
    "scripts/release/smoke.ts",
    "--source",
  ]);
  assert.equal(code, 0, stdout + stderr);
  for (
    const line of [
      "admin login with the first-run password",
      "stored as reference, delta",
      "admin console loads",
      "stopped cleanly",
    ]
  ) {
    assert.ok(stdout.includes(line), `missing "${line}" in:\n${stdout}`);
  }
});

Deno.test("release: the smoke test fails on a binary that is not svc", async () => {
  const { code, stderr } = await run(DENO, [
    "run",
    "-A",
    "scripts/release/smoke.ts",
    "--binary",
    "/bin/true",
  ]);
  assert.equal(code, 1);
  assert.match(stderr, /smoke: FAILED: --version printed "true \(GNU coreutils\)/);
});

Deno.test("release: release.sh builds a complete release or stops cleanly", async () => {
  const out = await Deno.makeTempDir({ prefix: "svc-release-" });
  try {
    // A DENORT_DIR without the target's runtime is refused before anything is written.
    const empty = await Deno.makeTempDir({ prefix: "svc-denort-" });
    const refused = await run("bash", [
      "scripts/release.sh",
      "--targets",
      "aarch64-unknown-linux-gnu",
      "--out",
      `${out}/a`,
    ], { DENORT_DIR: empty });
    await Deno.remove(empty);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /holds no denort-aarch64-unknown-linux-gnu/);
    await assert.rejects(Deno.stat(`${out}/a`), Deno.errors.NotFound);

    const unknown = await run("bash", [
      "scripts/release.sh",
      "--targets",
      "x86_64-pc-windows-msvc",
    ]);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /not supported/);

    const built = await run("bash", [
      "scripts/release.sh",
      "--targets",
      "x86_64-unknown-linux-gnu",
      "--out",
      `${out}/b`,
    ]);
    if (built.code !== 0) {
      // No compile runtime here: the reason is said, and no partial release is left.
      assert.match(built.stderr, /could not obtain the denort runtime/);
      assert.match(built.stderr, /no release written/);
      await assert.rejects(Deno.stat(`${out}/b`), Deno.errors.NotFound);
      return;
    }
    const version = (await run(DENO, [
      "eval",
      'import { VERSION } from "./src/lib/mod.ts"; console.log(VERSION)',
    ])).stdout.trim();
    const dir = `${out}/b/svc-${version}-x86_64-unknown-linux-gnu`;
    for (
      const file of [
        "svc",
        "LICENSE",
        "THIRD_PARTY_NOTICES.txt",
        "svc.example.yaml",
        "svc.service",
        "README.md",
      ]
    ) {
      await Deno.stat(`${dir}/${file}`);
    }
    const check = await new Deno.Command("sha256sum", {
      args: ["-c", "SHA256SUMS"],
      cwd: `${out}/b`,
    }).output();
    assert.ok(check.success, "SHA256SUMS does not verify");
  } finally {
    await Deno.remove(out, { recursive: true }).catch(() => {});
  }
});

Deno.test("release: LICENSE is Apache-2.0 and the notices cover every bundled package", async () => {
  const license = await Deno.readTextFile(`${ROOT}LICENSE`);
  assert.match(license, /Apache License\s+Version 2\.0, January 2004/);
  const notices = await thirdPartyNotices();
  const server = await serverPackages();
  assert.ok(server.includes("hono") && server.includes("libsql") && server.includes("yaml"));
  assert.ok(!server.some((name) => name.startsWith("@types/") || name.endsWith("-musl")));
  assert.deepEqual(notices.server.map((p) => p.name), server);
  assert.deepEqual(notices.ui.map((p) => p.name), ["htm", "preact", "uplot"]);
  for (const p of [...notices.server, ...notices.ui]) {
    assert.ok(notices.text.includes(`${p.name} ${p.version} (${p.license})`), p.name);
    assert.notEqual(p.license, "UNKNOWN", `${p.name} declares no license`);
  }
  // Installed packages with a license file carry its text (hono's copyright line, for one).
  assert.match(notices.text, /Copyright \(c\) 2021 - present, Yusuke Wada/);
  assert.match(notices.text, /Deno runtime \(denort\)/);
});

Deno.test("release: the UI script ends with its bundled packages' licenses", async () => {
  const built = await buildUi();
  assert.deepEqual(built.packages, ["htm", "preact", "uplot"]);
  const generated = await Deno.readTextFile(`${ROOT}src/ui/ui-assets.generated.ts`);
  for (const name of built.packages) assert.match(generated, new RegExp(`-\\\\n${name} \\d`));
  assert.match(generated, /Leon Sorokin/); // uPlot's copyright, which minifying used to drop
});

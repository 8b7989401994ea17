import assert from "node:assert/strict";
import { assertError } from "./helpers/assertions.ts";
import { signedFetch as fetch, startSvc, type SvcProcess } from "./helpers/svc.ts";

/** Waits until the server has logged a line matching `pattern` after `since` lines. */
async function logged(svc: SvcProcess, pattern: RegExp, since: number): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const line = svc.logs.slice(since).find((l) => pattern.test(l));
    if (line) return line;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no log line ${pattern} in:\n${svc.logs.slice(since).join("\n")}`);
}

Deno.test("hot reload: SIGHUP applies max_object_size live, flags restart-only settings, refuses a bad file", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-reload-" });
  const configFile = `${dataDir}/svc.yaml`;
  await Deno.writeTextFile(configFile, "advanced:\n  max_object_size: 1000\n");
  await using svc = await startSvc({ dataDir });
  try {
    assert.equal((await fetch(`${svc.url}/reload`, { method: "PUT" })).status, 200);
    const body = new Uint8Array(2000);
    await assertError(fetch(`${svc.url}/reload/a`, { method: "PUT", body }), 400, "EntityTooLarge");

    await Deno.writeTextFile(
      configFile,
      "advanced:\n  max_object_size: 5000\n  max_delta_ratio: 0.5\n  request_timeout_secs: 10\n",
    );
    let mark = svc.logs.length;
    svc.kill("SIGHUP");
    const line = await logged(svc, /config reloaded/, mark);
    assert.match(line, /applied.*advanced\.max_delta_ratio.*advanced\.max_object_size/);
    assert.match(line, /requires_restart.*advanced\.request_timeout_secs/);
    const put = await fetch(`${svc.url}/reload/a`, { method: "PUT", body });
    assert.equal(put.status, 200, await put.text());

    // An invalid document changes nothing.
    await Deno.writeTextFile(configFile, "advanced:\n  max_object_size: -5\n");
    mark = svc.logs.length;
    svc.kill("SIGHUP");
    await logged(svc, /config reload refused/, mark);
    const again = await fetch(`${svc.url}/reload/b`, { method: "PUT", body });
    assert.equal(again.status, 200, "the running limit (5000) still holds");
  } finally {
    await svc.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("hot reload: moving storage.filesystem rebuilds storage live; a bad directory changes nothing", async () => {
  const workDir = await Deno.makeTempDir({ prefix: "svc-reload-dir-" });
  const first = `${workDir}/first`, second = `${workDir}/second`;
  const configFile = `${workDir}/svc.yaml`;
  await Deno.writeTextFile(configFile, `storage:\n  filesystem: ${first}\n`);
  await using svc = await startSvc({ dataDir: workDir, dataDirFromConfig: true });
  try {
    assert.equal((await fetch(`${svc.url}/old-bucket`, { method: "PUT" })).status, 200);
    await Deno.stat(`${first}/old-bucket`);

    await Deno.writeTextFile(configFile, `storage:\n  filesystem: ${second}\n`);
    let mark = svc.logs.length;
    svc.kill("SIGHUP");
    await logged(svc, /config reloaded/, mark);
    assert.equal((await fetch(`${svc.url}/new-bucket`, { method: "PUT" })).status, 200);
    await Deno.stat(`${second}/new-bucket`);
    assert.equal((await fetch(`${svc.url}/old-bucket`, { method: "HEAD" })).status, 404);
    const ready = await fetch(`${svc.url}/_/ready`);
    assert.equal(ready.status, 200, await ready.text());

    // A directory that cannot be opened (a file is in the way) is refused as a whole.
    await Deno.writeTextFile(`${workDir}/blocked`, "not a directory");
    await Deno.writeTextFile(configFile, `storage:\n  filesystem: ${workDir}/blocked/data\n`);
    mark = svc.logs.length;
    svc.kill("SIGHUP");
    await logged(svc, /config reload refused/, mark);
    assert.equal((await fetch(`${svc.url}/new-bucket`, { method: "HEAD" })).status, 200);
  } finally {
    await svc.stop();
    await Deno.remove(workDir, { recursive: true });
  }
});

Deno.test("hot reload: named backends are added live; removing the default or a backend in use is refused", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-reload-" });
  const configFile = `${dataDir}/svc.yaml`;
  const one = `storage:
  backends:
    - { name: main, type: filesystem, path: ${dataDir}/main }
`;
  const two = `storage:
  default_backend: main
  backends:
    - { name: main, type: filesystem, path: ${dataDir}/main }
    - { name: archive, type: filesystem, path: ${dataDir}/archive }
  buckets:
    old-builds: { backend: archive }
`;
  await Deno.mkdir(`${dataDir}/main`);
  await Deno.mkdir(`${dataDir}/archive`);
  await Deno.writeTextFile(configFile, one);
  await using svc = await startSvc({ dataDir, dataDirFromConfig: true });
  try {
    assert.equal((await fetch(`${svc.url}/fresh`, { method: "PUT" })).status, 200);
    await Deno.stat(`${dataDir}/main/fresh`);

    // Adding a backend and routing a bucket to it applies without a restart.
    await Deno.writeTextFile(configFile, two);
    let mark = svc.logs.length;
    svc.kill("SIGHUP");
    await logged(svc, /config reloaded/, mark);
    assert.equal((await fetch(`${svc.url}/old-builds`, { method: "PUT" })).status, 200);
    assert.equal(
      (await fetch(`${svc.url}/old-builds/a.txt`, { method: "PUT", body: "kept" })).status,
      200,
    );
    await Deno.stat(`${dataDir}/archive/old-builds/a.txt`);
    const listing = await (await fetch(`${svc.url}/`)).text();
    assert.match(listing, /<Name>fresh<\/Name>.*<Name>old-builds<\/Name>/);

    // The archive holds a bucket: dropping it is refused and everything keeps working.
    await Deno.writeTextFile(configFile, one);
    mark = svc.logs.length;
    svc.kill("SIGHUP");
    await logged(svc, /reload refused.*archive.{0,2} cannot be removed/, mark);
    assert.equal(await (await fetch(`${svc.url}/old-builds/a.txt`)).text(), "kept");

    // The default backend cannot be removed either.
    await Deno.writeTextFile(
      configFile,
      `storage:\n  backends:\n    - { name: archive, type: filesystem, path: ${dataDir}/archive }\n`,
    );
    mark = svc.logs.length;
    svc.kill("SIGHUP");
    await logged(svc, /reload refused.*main.{0,2} is the default backend/, mark);
    assert.equal((await fetch(`${svc.url}/fresh`)).status, 200);
  } finally {
    await svc.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});

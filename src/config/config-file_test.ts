import assert from "node:assert/strict";
import { parse } from "yaml";
import { ConfigPersistError, writeConfigFile } from "./config-file.ts";

Deno.test("config file: written whole, keeps the file's mode, new files are 0600", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/svc.yaml`;
  await writeConfigFile(path, { advanced: { listen_addr: "127.0.0.1:9001" } });
  assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
  assert.deepEqual(parse(await Deno.readTextFile(path)), {
    advanced: { listen_addr: "127.0.0.1:9001" },
  });
  await Deno.chmod(path, 0o640);
  await writeConfigFile(path, { access: { authentication: "none" } });
  assert.equal((await Deno.stat(path)).mode! & 0o777, 0o640);
  assert.deepEqual(parse(await Deno.readTextFile(path)), { access: { authentication: "none" } });
  assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["svc.yaml"], "no temp left");
});

Deno.test("config file: a read-only file is never replaced, even by root", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/svc.yaml`;
  await Deno.writeTextFile(path, "access: {authentication: none}\n");
  await Deno.chmod(path, 0o444);
  await assert.rejects(writeConfigFile(path, { access: {} }), ConfigPersistError);
  assert.equal(await Deno.readTextFile(path), "access: {authentication: none}\n");
  assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["svc.yaml"]);
});

Deno.test("config file: a missing directory fails cleanly", async () => {
  const dir = await Deno.makeTempDir();
  await assert.rejects(
    writeConfigFile(`${dir}/gone/svc.yaml`, {}),
    (err: Error) => err instanceof ConfigPersistError && /Cannot write/.test(err.message),
  );
});

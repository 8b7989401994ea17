/** Unit tests of the legacy flat shape: conversion into sections and the mixing error. */
import assert from "node:assert/strict";
import { normalizeLegacy } from "./legacy.ts";
import { loadConfig } from "./load.ts";
import { ConfigError, validateConfig } from "./schema/schema.ts";

Deno.test("a flat document is moved into its sections with a warning", () => {
  const warnings: string[] = [];
  const out = normalizeLegacy({
    listen_addr: "127.0.0.1:1",
    max_object_size: 5,
    backend: { type: "filesystem", path: "/d" },
    access_key_id: "AK",
    secret_access_key: "s",
    authentication: "sigv4",
    buckets: { abc: { public: true } },
  }, warnings);
  assert.deepEqual(out, {
    advanced: { listen_addr: "127.0.0.1:1", max_object_size: 5 },
    storage: { backend: { type: "filesystem", path: "/d" }, buckets: { abc: { public: true } } },
    access: { access_key_id: "AK", secret_access_key: "s", authentication: "sigv4" },
  });
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /legacy flat shape/);
});

Deno.test("a sectioned document is returned unchanged without a warning", () => {
  const warnings: string[] = [];
  const document = { advanced: { listen_addr: ":1" } };
  assert.equal(normalizeLegacy(document, warnings), document);
  assert.deepEqual(warnings, []);
});

Deno.test("mixing flat keys and sections is an error naming both", () => {
  assert.throws(
    () => normalizeLegacy({ listen_addr: ":1", backend: {}, storage: {} }, []),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.match(err.message, /mixed flat and sectioned/);
      assert.match(err.message, /listen_addr, backend/);
      assert.match(err.message, /sections storage/);
      return true;
    },
  );
});

Deno.test("validateConfig accepts the flat shape", () => {
  const config = validateConfig({ max_object_size: 9, filesystem: "/srv" });
  assert.equal(config.advanced.max_object_size, 9);
  assert.equal(config.storage.filesystem, "/srv");
});

Deno.test("the loader reads a flat file, applies the environment on top, and warns", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-legacy-test-" });
  try {
    const file = `${dir}/svc.yaml`;
    await Deno.writeTextFile(file, "listen_addr: 127.0.0.1:7000\nmax_object_size: 10\n");
    const loaded = await loadConfig({ configPath: file, env: { SVC_MAX_OBJECT_SIZE: "20" } });
    assert.equal(loaded.config.advanced.listen_addr, "127.0.0.1:7000");
    assert.equal(loaded.config.advanced.max_object_size, 20);
    assert.match(loaded.warnings[0], /legacy flat shape/);

    await Deno.writeTextFile(file, "listen_addr: 127.0.0.1:7000\nadvanced:\n  log_level: info\n");
    await assert.rejects(loadConfig({ configPath: file, env: {} }), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.match(err.message, /listen_addr/);
      assert.match(err.message, /advanced/);
      return true;
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** JSON Schema of the configuration: the four sections, types and defaults, per-section form. */
import assert from "node:assert/strict";
import { ConfigError } from "./schema.ts";
import { configJsonSchema, configSections } from "./json-schema.ts";

type Json = Record<string, unknown>;
const props = (schema: Json) => schema.properties as Record<string, Json>;

Deno.test("json schema: the document has the four sections as objects", () => {
  const schema = configJsonSchema();
  assert.equal(schema.type, "object");
  assert.match(String(schema.$schema), /json-schema\.org/);
  for (const section of ["admission", "access", "storage", "advanced"]) {
    assert.ok(section in props(schema), `missing section ${section}`);
  }
  assert.deepEqual(configSections().slice().sort(), ["access", "admission", "advanced", "storage"]);
  for (const section of ["access", "storage", "advanced"]) {
    assert.equal(props(schema)[section].type, "object", section);
  }
});

Deno.test("json schema: field types and defaults come from the model", () => {
  const advanced = props(configJsonSchema("advanced"));
  assert.equal(advanced.listen_addr.type, "string");
  assert.equal(advanced.listen_addr.default, "0.0.0.0:9000");
  assert.equal(advanced.request_timeout_secs.type, "integer");
  assert.equal(advanced.request_timeout_secs.default, 300);
  assert.equal(advanced.debug_headers.type, "boolean");
  assert.equal(advanced.debug_headers.default, false);
  const access = props(configJsonSchema("access"));
  assert.deepEqual(access.iam_mode.enum, ["gui", "declarative"]);
  assert.equal(access.iam_mode.default, "gui");
  const storage = props(configJsonSchema("storage"));
  assert.equal(storage.backend.type, "object");
  const backend = props(storage.backend);
  assert.deepEqual(backend.type.enum, ["filesystem", "s3"]);
  assert.equal(backend.region.default, "us-east-1");
  assert.equal(backend.force_path_style.default, true);
});

Deno.test("json schema: a section's schema is standalone and titled", () => {
  const storage = configJsonSchema("storage");
  assert.equal(storage.type, "object");
  assert.match(String(storage.title), /storage/);
  assert.ok(storage.$schema);
  JSON.parse(JSON.stringify(storage));
});

Deno.test("json schema: an unknown section is a ConfigError", () => {
  assert.throws(() => configJsonSchema("bogus"), ConfigError);
  assert.throws(() => configJsonSchema("__proto__"), ConfigError);
});

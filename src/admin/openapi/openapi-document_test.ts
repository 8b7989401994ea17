/**
 * The document is OpenAPI 3.1 in shape: the required fields, every `$ref` resolving inside it,
 * every path parameter declared (and every declared one in the path), unique operation ids,
 * known tags, and request body schemas converted from the routes' valibot schemas.
 */
import assert from "node:assert/strict";
import * as v from "valibot";
import { ADMIN_ROUTE_SPECS, openApiDocument, operationId } from "./openapi-document.ts";
import { area, documentPath, type JsonSchema } from "./route-spec.ts";
import { jsonSchemaOf } from "./schema-json.ts";

const document = openApiDocument("9.9.9");
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

type Operation = JsonSchema & {
  parameters?: { name: string; in: string; required?: boolean; schema?: unknown }[];
  responses: Record<string, unknown>;
  requestBody?: { content: Record<string, { schema: JsonSchema }> };
};

function operations(): [string, string, Operation][] {
  const out: [string, string, Operation][] = [];
  for (const [path, item] of Object.entries(document.paths as Record<string, JsonSchema>)) {
    for (const [method, operation] of Object.entries(item)) {
      out.push([path, method, operation as Operation]);
    }
  }
  return out;
}

/** The value a local `#/…` pointer names, or undefined. */
function resolve(pointer: string): unknown {
  if (!pointer.startsWith("#/")) return undefined;
  let current: unknown = document;
  for (const raw of pointer.slice(2).split("/")) {
    const key = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    if (current === null || typeof current !== "object" || !(key in current)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function refsIn(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((item) => refsIn(item, found));
  else if (value !== null && typeof value === "object") {
    for (const [key, inner] of Object.entries(value)) {
      if (key === "$ref" && typeof inner === "string") found.push(inner);
      else refsIn(inner, found);
    }
  }
  return found;
}

Deno.test("openapi document: the required top-level fields", () => {
  assert.equal(document.openapi, "3.1.0");
  const info = document.info as Record<string, unknown>;
  assert.equal(typeof info.title, "string");
  assert.equal(info.version, "9.9.9");
  assert.ok(Object.keys(document.paths as object).length > 50);
  // The document is JSON through and through (what the route serves).
  assert.deepEqual(JSON.parse(JSON.stringify(document)), document);
});

Deno.test("openapi document: every operation has responses, a unique id and a known tag", () => {
  const tags = new Set((document.tags as { name: string }[]).map((tag) => tag.name));
  const ids = new Set<string>();
  for (const [path, method, operation] of operations()) {
    const what = `${method} ${path}`;
    assert.ok(METHODS.includes(method), what);
    assert.ok(path.startsWith("/_/"), what);
    assert.ok(Object.keys(operation.responses).length > 0, what);
    for (const status of Object.keys(operation.responses)) {
      assert.match(status, /^([1-5]\d\d|[1-5]XX|default)$/, what);
    }
    const id = operation.operationId as string;
    assert.ok(!ids.has(id), `${what}: operationId ${id} repeats`);
    ids.add(id);
    for (const tag of operation.tags as string[]) assert.ok(tags.has(tag), what);
  }
});

Deno.test("openapi document: every path parameter is declared, and only those", () => {
  for (const [path, method, operation] of operations()) {
    const inPath = [...path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]).sort();
    const declared = (operation.parameters ?? []).filter((p) => p.in === "path");
    assert.deepEqual(declared.map((p) => p.name).sort(), inPath, `${method} ${path}`);
    for (const parameter of declared) assert.equal(parameter.required, true);
    for (const parameter of operation.parameters ?? []) {
      assert.ok(["path", "query", "header", "cookie"].includes(parameter.in));
      assert.ok(parameter.schema !== undefined, `${method} ${path} ${parameter.name}`);
    }
  }
});

Deno.test("openapi document: every $ref resolves", () => {
  const refs = refsIn(document);
  assert.ok(refs.length > 50);
  for (const ref of refs) assert.ok(resolve(ref) !== undefined, `unresolved ${ref}`);
});

Deno.test("openapi document: request bodies are the routes' schemas, as JSON Schema", () => {
  const users = (document.paths as Record<string, Record<string, Operation>>)[
    "/_/api/admin/users"
  ].post;
  const schema = users.requestBody!.content["application/json"].schema;
  assert.equal(schema.type, "object");
  assert.equal(schema.additionalProperties, false);
  assert.deepEqual(schema.required, ["name"]);
  assert.equal(schema.$schema, undefined);
  // Every JSON body schema is an object schema (our bodies are JSON objects).
  for (const [path, method, operation] of operations()) {
    const json = operation.requestBody?.content["application/json"]?.schema;
    if (json !== undefined) assert.equal(json.type, "object", `${method} ${path}`);
  }
});

Deno.test("openapi document: public routes opt out of the session requirement", () => {
  const paths = document.paths as Record<string, Record<string, Operation>>;
  assert.deepEqual(paths["/_/api/admin/login"].post.security, []);
  assert.deepEqual(paths["/_/api/admin/openapi.json"].get.security, []);
  assert.equal(paths["/_/api/admin/users"].get.security, undefined);
  assert.deepEqual(document.security, [{ session: [] }]);
});

Deno.test("openapi document: a route described twice is refused", () => {
  const rows = area("T");
  assert.throws(
    () => openApiDocument("1", [rows.get("/a", "A"), rows.get("/a", "Again")]),
    /GET \/_\/api\/admin\/a twice/,
  );
});

Deno.test("openapi document: paths, ids and converted schemas", () => {
  assert.equal(
    documentPath("/groups/:id/members/:user_id"),
    "/_/api/admin/groups/{id}/members/{user_id}",
  );
  assert.equal(documentPath("/_/health"), "/_/health");
  const rows = area("T");
  assert.equal(operationId(rows.post("/users/:id/clone", "Clone")), "postUsersIdClone");
  assert.equal(operationId(rows.get("/_/api/whoami", "Who")), "getApiWhoami");
  const json = jsonSchemaOf(v.strictObject({ n: v.optional(v.pipe(v.number(), v.integer())) }));
  assert.deepEqual(json, {
    type: "object",
    properties: { n: { type: "integer" } },
    required: [],
    additionalProperties: false,
  });
  const handWritten = { type: "object" };
  assert.equal(jsonSchemaOf(handWritten), handWritten);
  assert.ok(ADMIN_ROUTE_SPECS.length > 100);
});

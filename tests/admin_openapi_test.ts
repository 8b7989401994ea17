/**
 * The admin API's OpenAPI document, black-box: the real server serves it without a session and
 * without anything of its own (no key, password or path); and for a sample of routes, a body the
 * document's schema refuses answers 400 JSON naming the field, and one it accepts succeeds.
 */
import assert from "node:assert/strict";
import { ACCESS_KEY, SECRET_KEY, startSvc } from "./helpers/svc.ts";
import { ADMIN_PASSWORD, AdminClient } from "./helpers/admin.ts";

type Schema = {
  type?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: unknown;
  anyOf?: Schema[];
};
type Document = {
  openapi: string;
  paths: Record<
    string,
    Record<string, { requestBody?: { content: Record<string, { schema: Schema }> } }>
  >;
};

function bodySchema(document: Document, method: string, path: string): Schema {
  const operation = document.paths[`/_/api/admin${path}`]?.[method.toLowerCase()];
  const schema = operation?.requestBody?.content["application/json"]?.schema;
  assert.ok(schema, `the document describes the body of ${method} ${path}`);
  return schema;
}

Deno.test("admin openapi: served without a session, holding nothing of this server", async () => {
  await using svc = await startSvc();
  const anonymous = await fetch(`${svc.url}/_/api/admin/openapi.json`);
  assert.equal(anonymous.status, 200);
  assert.match(anonymous.headers.get("content-type") ?? "", /application\/json/);
  assert.equal(anonymous.headers.get("cache-control"), "no-store");
  const text = await anonymous.text();
  const document = JSON.parse(text) as Document;
  assert.equal(document.openapi, "3.1.0");
  assert.ok(document.paths["/_/api/admin/users"].post);
  assert.ok(document.paths["/_/health"].get);
  for (const secret of [ACCESS_KEY, SECRET_KEY, ADMIN_PASSWORD, svc.dataDir]) {
    assert.equal(text.includes(secret), false, `the document holds ${secret}`);
  }
  // The same document with a session: nothing is added for a logged-in caller.
  const admin = new AdminClient(svc.url);
  await admin.login();
  const logged = await admin.request("GET", "/openapi.json");
  assert.equal(await logged.text(), text);
  // The routes it describes still need their session.
  assert.equal((await fetch(`${svc.url}/_/api/admin/users`)).status, 401);
});

Deno.test("admin openapi: bodies the schema refuses answer 400 naming the field", async () => {
  await using svc = await startSvc();
  const admin = new AdminClient(svc.url);
  await admin.login();
  const document = await admin.json<Document>("GET", "/openapi.json");

  /** Sends a refused body: 400 `bad_request` whose `field` and message name `field`. */
  const refused = async (method: string, path: string, body: unknown, field: string) => {
    const response = await admin.request(method, path, body);
    const answer = await response.json();
    assert.equal(response.status, 400, `${method} ${path}: ${JSON.stringify(answer)}`);
    assert.equal(answer.error, "bad_request");
    assert.equal(answer.field, field, JSON.stringify(answer));
    assert.ok(String(answer.message).includes(`"${field}"`), answer.message);
  };

  // An unknown field: the document's schema is closed and does not list it.
  const users = bodySchema(document, "POST", "/users");
  assert.equal(users.additionalProperties, false);
  assert.equal(users.properties?.nickname, undefined);
  await refused("POST", "/users", { name: "alice", nickname: "al" }, "nickname");
  const alice = await admin.json<{ id: string; name: string }>(
    "POST",
    "/users",
    { name: "alice", permissions: [{ actions: ["read"], resources: ["*"] }] },
    201,
  );
  assert.equal(alice.name, "alice");
  // Inside a list: the path names the item.
  await refused(
    "POST",
    "/users",
    { name: "bob", permissions: [{ actions: ["fly"], resources: ["*"] }] },
    "permissions.0.actions.0",
  );

  // A required field.
  assert.deepEqual(bodySchema(document, "POST", "/groups/{id}/members").required, ["user_id"]);
  const group = await admin.json<{ id: string }>("POST", "/groups", { name: "readers" }, 201);
  await refused("POST", `/groups/${group.id}/members`, {}, "user_id");
  const joined = await admin.json<{ members: string[] }>(
    "POST",
    `/groups/${group.id}/members`,
    { user_id: alice.id },
  );
  assert.deepEqual(joined.members, ["alice"]);

  // A bucket name by S3's rules.
  assert.equal(bodySchema(document, "POST", "/buckets").properties?.name?.type, "string");
  await refused("POST", "/buckets", { name: "Not_A_Bucket" }, "name");
  await admin.json("POST", "/buckets", { name: "oas-bucket" }, 201);

  // A list's bounds.
  await refused("POST", "/objects/delete", { bucket: "oas-bucket", keys: [] }, "keys");
  const deleted = await admin.json<{ succeeded: number }>("POST", "/objects/delete", {
    bucket: "oas-bucket",
    keys: ["absent-key"],
  });
  assert.equal(deleted.succeeded, 1);

  // Types: a string, a boolean, a count.
  assert.equal(bodySchema(document, "POST", "/config/validate").properties?.yaml?.type, "string");
  await refused("POST", "/config/validate", { yaml: 42 }, "yaml");
  const exported = await (await admin.request("GET", "/config/export")).text();
  const validated = await admin.json<{ ok: boolean }>("POST", "/config/validate", {
    yaml: exported,
  });
  assert.equal(validated.ok, true);
  await refused("POST", "/config/trace", { path: "/a", authenticated: "yes" }, "authenticated");
  await admin.json("POST", "/config/trace", { path: "/oas-bucket/k" });
  await refused("POST", "/diagnostics/scan/start", { bytes_per_sec: -5 }, "bytes_per_sec");
  await admin.json("POST", "/diagnostics/scan/start", { bytes_per_sec: 0 }, 202);
});

import assert from "node:assert/strict";
import { Hono } from "hono";
import * as v from "valibot";
import { AdminError, renderAdminError } from "./admin-error.ts";
import { flag, integer, listOf, nonEmptyText, oneOf } from "./body-fields.ts";
import { parseBody, validBody } from "./valid-body.ts";

const schema = v.strictObject({
  bucket: nonEmptyText(),
  keys: v.optional(listOf(nonEmptyText(), 1, 3, "keys", "Keys.")),
  items: v.optional(
    v.array(v.strictObject({ part_number: integer(1, 9, "N."), etag: v.string() })),
  ),
  mode: v.optional(oneOf(["a", "b"], "Mode.")),
  sample: v.optional(flag("Sample.")),
  count: v.optional(v.number()),
});

function refusal(body: unknown, what?: string): { message: string; field: unknown } {
  try {
    parseBody(schema, body, what);
  } catch (err) {
    assert.ok(err instanceof AdminError);
    assert.equal(err.code, "bad_request");
    return { message: err.message, field: err.details.field };
  }
  throw new Error(`${JSON.stringify(body)} was accepted`);
}

Deno.test("valid body: an accepted body is the parsed output", () => {
  const body = { bucket: "b", keys: ["k"], mode: "a", sample: true };
  assert.deepEqual(parseBody(schema, body), body);
});

Deno.test("valid body: each refusal names the field", () => {
  assert.deepEqual(refusal({}), { message: 'Field "bucket" is required', field: "bucket" });
  assert.deepEqual(refusal({ bucket: "" }), {
    message: 'Field "bucket" must be a non-empty string',
    field: "bucket",
  });
  assert.deepEqual(refusal({ bucket: "b", extra: 1 }), {
    message: 'Unknown field "extra" (expected bucket, keys, items, mode, sample, count)',
    field: "extra",
  });
  assert.deepEqual(refusal({ bucket: "b", keys: [] }), {
    message: 'Field "keys" must list 1 to 3 keys',
    field: "keys",
  });
  assert.deepEqual(refusal({ bucket: "b", keys: ["a", ""] }), {
    message: 'Field "keys.1" must be a non-empty string',
    field: "keys.1",
  });
  assert.deepEqual(refusal({ bucket: "b", items: [{ part_number: 0, etag: "e" }] }), {
    message: 'Field "items.0.part_number" must be an integer from 1 to 9',
    field: "items.0.part_number",
  });
  assert.deepEqual(refusal({ bucket: "b", items: [{ part_number: 1, etag: "e", x: 1 }] }), {
    message: 'Unknown field "items.0.x" (expected part_number, etag)',
    field: "items.0.x",
  });
  assert.deepEqual(refusal({ bucket: "b", mode: "c" }), {
    message: 'Field "mode" must be one of "a", "b"',
    field: "mode",
  });
  assert.deepEqual(refusal({ bucket: "b", sample: "yes" }), {
    message: 'Field "sample" must be true or false',
    field: "sample",
  });
  // valibot's own wording for a type it checks without a message of ours.
  assert.deepEqual(refusal({ bucket: "b", count: "7" }), {
    message: 'Field "count" must be a number, got "7"',
    field: "count",
  });
  assert.deepEqual(refusal("text"), { message: `Body must be an object, got "text"`, field: "" });
  assert.equal(refusal({}, "backend").message, 'Invalid backend: Field "bucket" is required');
});

Deno.test("valid body: a route answers 400 JSON naming the field", async () => {
  const app = new Hono();
  app.onError(renderAdminError);
  app.post("/x", async (c) => c.json(await validBody(c, schema)));
  const post = (body: string) => app.request("/x", { method: "POST", body });
  const refused = await post(JSON.stringify({ bucket: 5 }));
  assert.equal(refused.status, 400);
  assert.deepEqual(await refused.json(), {
    error: "bad_request",
    message: 'Field "bucket" must be a non-empty string',
    field: "bucket",
  });
  const notJson = await post("{");
  assert.equal(notJson.status, 400);
  assert.match((await notJson.json()).message, /not valid JSON/);
  const ok = await post(JSON.stringify({ bucket: "b" }));
  assert.equal(ok.status, 200);
  assert.deepEqual(await ok.json(), { bucket: "b" });
});

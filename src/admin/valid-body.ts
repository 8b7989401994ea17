/**
 * Admin request bodies checked against their valibot schema (the same schema the OpenAPI document
 * shows, src/admin/openapi/), so what the document promises is what the server enforces. A body
 * the schema refuses answers 400 `bad_request` naming the first field at fault, both in the
 * message and as `field` (a dot path such as `items.0.source_key`; empty for the body itself):
 *
 *     {"error": "bad_request", "message": "Field \"bucket\" must be a non-empty string",
 *      "field": "bucket"}
 *
 * Schemas give their own messages as predicates ("must list 1 to 1000 keys"); the type checks
 * valibot makes without one are worded here the same way.
 */
import type { Context } from "hono";
import * as v from "valibot";
import { AdminError, jsonBody } from "./admin-error.ts";

export type BodySchema = v.GenericSchema;

const TYPE_WORDS: Record<string, string> = {
  string: "a string",
  number: "a number",
  boolean: "true or false",
  Array: "a list",
  Object: "an object",
  null: "null",
};

/** `("a" | "b")` → `"a" or "b"`; `string` → `a string`. */
function expectedWords(expected: string | null): string {
  if (expected === null) return "something else";
  const inner = expected.startsWith("(") && expected.endsWith(")")
    ? expected.slice(1, -1)
    : expected;
  const options = inner.split(" | ").map((option) => TYPE_WORDS[option] ?? option);
  return options.length === 1
    ? options[0]
    : `${options.slice(0, -1).join(", ")} or ${options[options.length - 1]}`;
}

/** The keys an object schema accepts (through optional, nullable and pipe wrappers). */
function entriesOf(schema: unknown): string[] | null {
  let current = schema as { entries?: Record<string, unknown>; wrapped?: unknown } | undefined;
  while (current && current.entries === undefined && current.wrapped !== undefined) {
    current = current.wrapped as typeof current;
  }
  return current?.entries ? Object.keys(current.entries) : null;
}

/** The sub-schema at `path` (object keys and list items), or undefined when it cannot be told. */
function schemaAt(schema: unknown, path: (string | number)[]): unknown {
  let current = schema as Record<string, unknown> | undefined;
  for (const key of path) {
    while (current && current.wrapped !== undefined) {
      current = current.wrapped as Record<string, unknown>;
    }
    if (!current) return undefined;
    if (current.entries !== undefined) {
      current = (current.entries as Record<string, unknown>)[String(key)] as typeof current;
    } else if (current.item !== undefined) current = current.item as typeof current;
    else return undefined;
  }
  return current;
}

/** The sentence and field of the first issue. */
export function describeIssue(
  issue: v.BaseIssue<unknown>,
  schema: BodySchema,
): { field: string; message: string } {
  const keys = (issue.path ?? []).map((item) => item.key as string | number);
  const field = keys.join(".");
  const label = field === "" ? "Body" : `Field "${field}"`;
  const objectIssue = issue.type === "object" || issue.type === "strict_object" ||
    issue.type === "loose_object";
  if (objectIssue && issue.expected === "never") {
    const allowed = entriesOf(schemaAt(schema, keys.slice(0, -1)));
    const expected = allowed ? ` (expected ${allowed.join(", ")})` : "";
    return { field, message: `Unknown field "${field}"${expected}` };
  }
  if (objectIssue && issue.received === "undefined" && field !== "") {
    return { field, message: `${label} is required` };
  }
  // A schema's own message is already a predicate; valibot's default ones start "Invalid".
  if (issue.kind === "schema" && issue.message.startsWith("Invalid ")) {
    return {
      field,
      message: `${label} must be ${expectedWords(issue.expected)}, got ${issue.received}`,
    };
  }
  if (issue.message.startsWith("Invalid ")) {
    return { field, message: `${label} is not valid (${issue.message})` };
  }
  return { field, message: `${label} ${issue.message}` };
}

/** `value` checked against `schema`; throws 400 naming the field. `what` prefixes the message. */
export function parseBody<S extends BodySchema>(
  schema: S,
  value: unknown,
  what?: string,
): v.InferOutput<S> {
  const parsed = v.safeParse(schema, value, { abortEarly: true });
  if (parsed.success) return parsed.output;
  const { field, message } = describeIssue(parsed.issues[0], schema);
  const text = what === undefined ? message : `Invalid ${what}: ${message}`;
  throw new AdminError("bad_request", text, { field });
}

/** Reads the JSON object body (bounded, admin-error.ts) and checks it against `schema`. */
export async function validBody<S extends BodySchema>(
  c: Context,
  schema: S,
  options: { what?: string; maxBytes?: number } = {},
): Promise<v.InferOutput<S>> {
  return parseBody(schema, await jsonBody(c, options.maxBytes), options.what);
}

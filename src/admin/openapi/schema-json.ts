/**
 * A body schema as the OpenAPI document shows it. Valibot schemas go through
 * `@valibot/to-json-schema` (the config's `json-schema.ts` uses it too), so the document shows the
 * schema the route enforces. Checks JSON Schema cannot say (a `check`, a transform) are left out,
 * so the document is a little looser than the route, never stricter. The converter writes draft-07;
 * the keywords it uses for our schemas (type, properties, required, additionalProperties, items,
 * enum, const, anyOf, minimum, minLength, pattern, description) mean the same in the 2020-12
 * dialect OpenAPI 3.1 uses, so only its `$schema` line is dropped.
 */
import { toJsonSchema } from "@valibot/to-json-schema";
import type * as v from "valibot";
import type { JsonSchema } from "./route-spec.ts";

/** Whether `value` is a valibot schema (rather than a JSON Schema written by hand). */
export function isValibotSchema(value: unknown): value is v.GenericSchema {
  return typeof value === "object" && value !== null &&
    (value as { kind?: unknown }).kind === "schema" &&
    typeof (value as { "~run"?: unknown })["~run"] === "function";
}

/** JSON Schema of a body: converted from valibot, or the hand-written one as given. */
export function jsonSchemaOf(schema: v.GenericSchema | JsonSchema): JsonSchema {
  if (!isValibotSchema(schema)) return schema;
  const json = toJsonSchema(schema, { errorMode: "ignore" }) as JsonSchema;
  delete json.$schema;
  return json;
}

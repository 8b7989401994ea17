/**
 * JSON Schema (draft-07) of the configuration document or of one section, derived from the valibot
 * model so it never drifts from what the loader accepts. Defaults appear as `default`. Checks that
 * JSON Schema cannot express (custom `check`s such as "no `..` components", transforms) are left
 * out rather than failing the conversion, so the JSON Schema is a little looser than the loader.
 */
import { toJsonSchema } from "@valibot/to-json-schema";
import type * as v from "valibot";
import { configSections, sectionSchema } from "../document/export.ts";
import { configSchema } from "./schema.ts";

export type JsonSchema = Record<string, unknown>;

/** The whole document's schema, or one section's (`section` unknown: ConfigError). */
export function configJsonSchema(section?: string): JsonSchema {
  const schema: v.GenericSchema = section === undefined
    ? configSchema as unknown as v.GenericSchema
    : sectionSchema(section);
  const json = toJsonSchema(schema, { errorMode: "ignore" }) as JsonSchema;
  json.title = section === undefined ? "svc configuration" : `svc configuration: ${section}`;
  return json;
}

export { configSections };

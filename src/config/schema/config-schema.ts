/**
 * The whole configuration schema: the four sections joined, and `Config`, the validated type the
 * rest of svc reads. Apart from schema.ts (which validates with it) so the cross-field checks
 * (schema-checks.ts) can name the type without importing the validator that runs them.
 */
import * as v from "valibot";
import { accessSchema } from "./schema-access.ts";
import { admissionSchema } from "./schema-admission.ts";
import { advancedSchema } from "./schema-advanced.ts";
import { describe } from "./schema-common.ts";
import { storageSchema } from "./schema-storage.ts";

export const configSchema = v.strictObject(
  {
    admission: v.optional(admissionSchema, {}),
    access: v.optional(accessSchema, {}),
    storage: v.optional(storageSchema, {}),
    advanced: v.optional(advancedSchema, {}),
  },
  (issue) =>
    issue.expected === "never"
      ? "unknown key"
      : `expected a mapping of sections, got ${describe(issue.input)}`,
);

export type Config = v.InferOutput<typeof configSchema>;

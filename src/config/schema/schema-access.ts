/**
 * The `access` section: IAM mode, the authentication switch, the bootstrap SigV4 pair and the
 * declarative IAM records (users, groups, OIDC providers, group mapping rules). Shapes are checked
 * here; cross-record rules (unique names and keys, references) are in schema.ts.
 */
import * as v from "valibot";
import {
  bool,
  int,
  list,
  nonEmpty,
  oneOf,
  record,
  str,
  strict,
  templated,
} from "./schema-common.ts";

/** An IAM entity name: non-empty, and not starting with `$` (reserved for synthetic principals). */
const iamName = v.pipe(
  nonEmpty,
  v.check(
    (name) => !name.startsWith("$"),
    (issue) => `"${issue.input}": names starting with "$" are reserved`,
  ),
);

const conditionValue = v.union(
  [templated, list(templated)],
  "expected a string or a list of strings",
);

export const permissionSchema = strict({
  effect: v.optional(oneOf(["Allow", "Deny"]), "Allow"),
  actions: v.pipe(list(nonEmpty), v.minLength(1, "expected at least one action")),
  resources: list(templated),
  /** `{ <operator>: { <key>: value | [values] } }`; string values may hold IAM templates. */
  conditions: v.optional(record(record(conditionValue))),
});

export const iamUserSchema = strict({
  name: iamName,
  access_key_id: nonEmpty,
  /** Empty in redacted exports; the reconciler keeps the stored secret then. */
  secret_access_key: v.optional(str, ""),
  enabled: v.optional(bool, true),
  groups: v.optional(list(nonEmpty), []),
  permissions: v.optional(list(permissionSchema), []),
});

export const iamGroupSchema = strict({
  name: iamName,
  description: v.optional(str),
  permissions: v.optional(list(permissionSchema), []),
});

export const authProviderSchema = strict({
  name: iamName,
  provider_type: v.optional(oneOf(["oidc"]), "oidc"),
  enabled: v.optional(bool, true),
  priority: v.optional(int(Number.MIN_SAFE_INTEGER), 0),
  display_name: v.optional(str),
  client_id: nonEmpty,
  /** null in redacted exports. */
  client_secret: v.optional(v.nullable(str)),
  issuer_url: v.pipe(
    nonEmpty,
    v.check(
      (url) => /^https?:\/\//.test(url),
      (issue) => `expected an http(s) URL, got "${issue.input}"`,
    ),
  ),
  scopes: v.optional(str, "openid email profile"),
});

export const groupMappingRuleSchema = strict({
  /** Provider name; null/absent = every provider. */
  provider: v.optional(v.nullable(nonEmpty)),
  priority: v.optional(int(Number.MIN_SAFE_INTEGER), 0),
  match_type: v.optional(nonEmpty, "email_domain"),
  match_field: v.optional(nonEmpty, "email"),
  match_value: nonEmpty,
  group: nonEmpty,
  /** Email rules on the `email` claim need the token's `email_verified: true`. */
  require_verified_email: v.optional(bool, true),
});

export const accessSchema = strict({
  iam_mode: v.optional(oneOf(["gui", "declarative"]), "gui"),
  /** `none` = open access; absent = decided by whether credentials exist. */
  authentication: v.optional(str),
  access_key_id: v.optional(nonEmpty),
  secret_access_key: v.optional(nonEmpty),
  iam_users: v.optional(list(iamUserSchema)),
  iam_groups: v.optional(list(iamGroupSchema)),
  auth_providers: v.optional(list(authProviderSchema)),
  group_mapping_rules: v.optional(list(groupMappingRuleSchema)),
});

export type AccessConfig = v.InferOutput<typeof accessSchema>;
export type Permission = v.InferOutput<typeof permissionSchema>;

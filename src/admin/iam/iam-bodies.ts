/**
 * The request bodies of the IAM routes (users, groups, external login providers and mapping
 * rules), as valibot schemas: the routes check a body's shape with them (valid-body.ts) and the
 * OpenAPI document shows them (src/admin/openapi/). What needs the model stays in the model
 * (src/iam/model.ts: name and key rules, resources, condition keys, `${…}` variables): the store
 * checks that on every way in, the declarative reconcile and backups included.
 */
import * as v from "valibot";
import { IAM_ACTIONS, IP_OPERATORS, MATCH_TYPES, STRING_OPERATORS } from "../../iam/mod.ts";
import { flag, nonEmptyText, oneOf, text } from "../body-fields.ts";

const NAME_RULE = "1-64 letters, digits or _ + = , . @ -";

function name(what: string) {
  return v.pipe(
    v.string("must be a string"),
    v.description(`The ${what}'s name: ${NAME_RULE}; names starting with "$" are reserved.`),
  );
}

const listOfText = (description: string) =>
  v.pipe(
    v.array(v.string("must be a string"), "must be a list of strings"),
    v.description(description),
  );

const conditionValues = v.union(
  [v.string(), v.array(v.string())],
  "must be a string or a list of strings",
);

/** One permission (src/iam/model.ts has the rules the store checks). */
export const permissionBody = v.strictObject({
  effect: v.optional(oneOf(["Allow", "Deny"], "Allow (the default) or Deny.")),
  actions: v.pipe(
    v.array(oneOf(IAM_ACTIONS as unknown as [string, ...string[]], "An action.")),
    v.minLength(1, "must be a non-empty list"),
    v.description("What it allows or denies."),
  ),
  resources: v.pipe(
    v.array(v.string("must be a string")),
    v.minLength(1, "must be a non-empty list"),
    v.description(
      "`*`, `bucket` (the bucket and every key in it) or `bucket/keyglob`; " +
        "`${iam:username}` and `${iam:access_key_id}` expand per user.",
    ),
  ),
  conditions: v.nullish(
    v.pipe(
      v.record(
        oneOf(
          [...STRING_OPERATORS, ...IP_OPERATORS] as unknown as [string, ...string[]],
          "A condition operator.",
        ),
        v.record(v.string(), conditionValues, "must be an object of condition keys"),
        "must be an object of condition operators",
      ),
      v.description(
        "{Operator: {key: value | [values]}}: every operator and key must hold. Keys: " +
          "s3:prefix, aws:username (string operators), aws:SourceIp (IP operators).",
      ),
    ),
  ),
});

const permissions = v.nullish(
  v.pipe(v.array(permissionBody, "must be a list of permissions"), v.description("Permissions.")),
);
const groups = v.nullish(listOfText("Group names (the memberships)."));

/** `POST /users`. */
export const createUserBody = v.strictObject({
  name: name("user"),
  access_key_id: v.optional(text("3-128 letters, digits or _ + = , . @ -; generated when absent.")),
  secret_access_key: v.optional(text("8-128 printable characters; generated when absent.")),
  enabled: v.optional(flag("Whether the user's keys work (default true).")),
  groups,
  permissions,
});

/** `PUT /users/:id`: the fields given are replaced. */
export const updateUserBody = v.strictObject({
  name: v.optional(name("user")),
  enabled: v.optional(flag("Whether the user's keys work.")),
  groups,
  permissions,
});

/** `POST /users/:id/clone` and `POST /groups/:id/clone`. */
export const cloneBody = v.strictObject({ name: name("copy") });

/** `POST /groups`. */
export const createGroupBody = v.strictObject({
  name: name("group"),
  description: v.nullish(text("Up to 1024 characters.")),
  permissions,
});

/** `PUT /groups/:id`: the fields given are replaced. */
export const updateGroupBody = v.partial(createGroupBody);

/** `POST /groups/:id/members`. */
export const addMemberBody = v.strictObject({ user_id: nonEmptyText("The user's id.") });

const providerFields = {
  name: name("provider"),
  provider_type: v.optional(oneOf(["oidc"], "Only oidc.")),
  display_name: v.nullish(text("The login button's label.")),
  issuer_url: text("The OIDC issuer, an http(s) URL."),
  client_id: text("The client id registered at the issuer."),
  client_secret: v.nullish(text("Its secret: accepted, never answered.")),
  scopes: v.nullish(text('Space-separated scopes (default "openid email profile").')),
  enabled: v.nullish(flag("Whether its login button shows (default true).")),
  priority: v.nullish(v.pipe(v.number("must be a number"), v.integer("must be an integer"))),
};

/** `POST /ext-auth/providers`. */
export const createProviderBody = v.strictObject(providerFields);
/** `PUT /ext-auth/providers/:id`: the fields given are replaced (no secret: kept). */
export const updateProviderBody = v.partial(createProviderBody);

const ruleFields = {
  provider: v.nullish(text("The provider's name (null: every provider).")),
  priority: v.nullish(v.pipe(v.number("must be a number"), v.integer("must be an integer"))),
  match_type: v.nullish(oneOf(MATCH_TYPES, "How match_value is compared (default email_domain).")),
  match_field: v.nullish(text("The claim compared (default email).")),
  match_value: text("The value it must have."),
  group: text("The group a matching identity joins."),
  require_verified_email: v.nullish(flag("Email rules need email_verified (default true).")),
};

/** `POST /ext-auth/mappings`. */
export const createRuleBody = v.strictObject(ruleFields);
/** `PUT /ext-auth/mappings/:id`. */
export const updateRuleBody = v.partial(createRuleBody);

/** `POST /ext-auth/mappings/preview`: the groups the rules give an identity. */
export const previewBody = v.strictObject({
  provider: text("The provider's name."),
  email: v.optional(text("The identity's email (when no claims are given).")),
  claims: v.optional(
    v.pipe(
      v.record(v.string(), v.unknown(), "must be an object"),
      v.description("The identity's token claims."),
    ),
  ),
});

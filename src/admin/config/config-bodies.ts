/**
 * The request bodies of the configuration, declarative IAM and backup routes, as valibot schemas:
 * the routes check bodies with them (valid-body.ts) and the OpenAPI document shows them
 * (src/admin/openapi/). A document's own fields are checked by the config schema when it is
 * applied (422 `invalid_config`), not here: these schemas check the envelope.
 */
import * as v from "valibot";
import { anyObject, flag, text } from "../body-fields.ts";

/** `PUT /config`, `PUT /config/section/:name`, `POST /config/section/:name/validate`. */
export const configPatchBody = anyObject(
  "A JSON merge patch (RFC 7396) of the operator's document (or of one section): null removes " +
    "a field; a secret left out or sent back redacted is kept.",
);

/** `POST /config/validate` and `POST /config/apply`: a whole document as YAML text. */
export const yamlDocumentBody = v.strictObject({
  yaml: text("The whole config document as YAML; secrets it leaves out are kept."),
});

/** `POST /config/declarative-iam-validate` and `-apply`. */
export const accessFragmentBody = v.strictObject({
  yaml: text(
    "An `access:` fragment (or its bare content) holding iam_users, iam_groups, " +
      "auth_providers, group_mapping_rules (and iam_mode: declarative).",
  ),
});

const traceText = (description: string) => v.nullish(text(description));

/** `POST /config/trace` (the same fields as the GET's query). */
export const traceBody = v.strictObject({
  method: traceText("The HTTP method (default GET)."),
  path: traceText("The request path (or give bucket and key)."),
  bucket: traceText("The bucket."),
  key: traceText("The key."),
  query: traceText("The query string."),
  source_ip: traceText("The client address."),
  authenticated: v.nullish(flag("Whether the request carries credentials.")),
});

/** `POST /backup` with `application/json`: the legacy export (the zip is the current form). */
export const legacyBackupBody = v.looseObject({
  users: v.nullish(
    v.pipe(
      v.array(v.looseObject({}, "must be an object"), "must be a list of users"),
      v.description("Users as the legacy export wrote them (name, access_key_id, …)."),
    ),
  ),
  groups: v.nullish(
    v.pipe(
      v.array(v.looseObject({}, "must be an object"), "must be a list of groups"),
      v.description("Groups as the legacy export wrote them."),
    ),
  ),
});

/**
 * The shared parts of the OpenAPI document: the one error shape (admin-error.ts), the session
 * cookie, and the answers several routes share. Rows refer to them as `ref("User")`.
 */
import { ADMIN_ERROR_STATUS } from "../admin-error.ts";
import { SESSION_COOKIE } from "../session/sessions.ts";
import type { JsonSchema } from "./route-spec.ts";

export function ref(name: string): JsonSchema {
  return { $ref: `#/components/schemas/${name}` };
}

const strings = { type: "array", items: { type: "string" } };

const permission: JsonSchema = {
  type: "object",
  properties: {
    effect: { enum: ["Allow", "Deny"] },
    actions: strings,
    resources: strings,
    conditions: { type: "object" },
  },
  required: ["effect", "actions", "resources"],
};

const user: JsonSchema = {
  type: "object",
  properties: {
    id: { type: "string" },
    name: { type: "string" },
    access_key_id: { type: "string" },
    has_secret: { type: "boolean" },
    enabled: { type: "boolean" },
    auth_source: { enum: ["local", "external"] },
    groups: strings,
    permissions: { type: "array", items: ref("Permission") },
    created_at: { type: "integer", description: "Milliseconds since the epoch." },
    updated_at: { type: "integer" },
  },
  required: ["id", "name", "access_key_id", "enabled", "groups", "permissions"],
};

export const SCHEMAS: Record<string, JsonSchema> = {
  Error: {
    type: "object",
    description: "Every admin error. `error` is stable (branch on it); `message` may change " +
      "wording; a code may add details (`field` names the body field a 400 refuses, " +
      "`retry_after_secs` comes with 429).",
    properties: {
      error: { enum: Object.keys(ADMIN_ERROR_STATUS) },
      message: { type: "string" },
      field: { type: "string", description: "The refused body field as a dot path." },
    },
    required: ["error", "message"],
  },
  Permission: permission,
  User: user,
  UserWithSecret: {
    allOf: [ref("User"), {
      type: "object",
      properties: { secret_access_key: { type: "string", description: "Shown this once." } },
      required: ["secret_access_key"],
    }],
  },
  Group: {
    type: "object",
    properties: {
      id: { type: "string" },
      name: { type: "string" },
      description: { type: "string" },
      permissions: { type: "array", items: ref("Permission") },
      members: { ...strings, description: "Member user names." },
      created_at: { type: "integer" },
      updated_at: { type: "integer" },
    },
    required: ["id", "name", "permissions", "members"],
  },
  ApplyOutcome: {
    type: "object",
    description: "What a config change did (or, validated only, would do).",
    properties: {
      applied: { ...strings, description: "Changed settings now in effect (dotted paths)." },
      requires_restart: { ...strings, description: "Changed settings that need a restart." },
      warnings: strings,
      persisted: { type: "boolean" },
      persisted_path: { type: ["string", "null"] },
    },
    required: ["applied", "requires_restart", "warnings", "persisted", "persisted_path"],
  },
  Deleted: {
    type: "object",
    properties: { deleted: { type: "boolean" }, id: { type: "string" }, name: { type: "string" } },
  },
  Ok: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] },
  BatchAnswer: {
    type: "object",
    description: "One result per item, in order.",
    properties: {
      results: {
        type: "array",
        items: {
          type: "object",
          properties: {
            ok: { type: "boolean" },
            error: { type: "string", description: "The S3 error code." },
            message: { type: "string" },
          },
          required: ["ok"],
        },
      },
      succeeded: { type: "integer" },
      failed: { type: "integer" },
    },
    required: ["results", "succeeded", "failed"],
  },
};

const errorContent = { "application/json": { schema: ref("Error") } };

export const RESPONSES: Record<string, JsonSchema> = {
  BadRequest: { description: "The request is refused (`bad_request`).", content: errorContent },
  Unauthorized: { description: "No valid session (`unauthorized`).", content: errorContent },
  Forbidden: {
    description: "The session may not use this route, or a cross-site write (`forbidden`, " +
      "`cross_site`).",
    content: errorContent,
  },
  Error: { description: "Any other error, in the one error shape.", content: errorContent },
};

export const SECURITY_SCHEMES: Record<string, JsonSchema> = {
  session: {
    type: "apiKey",
    in: "cookie",
    name: SESSION_COOKIE,
    description: "The admin session cookie `POST /_/api/admin/login` (or `/login-as`) sets.",
  },
};

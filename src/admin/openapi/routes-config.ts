/** Rows of the configuration and backup routes. */
import {
  configPatchBody,
  legacyBackupBody,
  traceBody,
  yamlDocumentBody,
} from "../config/config-bodies.ts";
import { ref } from "./components.ts";
import { area, type RouteSpec } from "./route-spec.ts";

const config = area("Configuration");
const backup = area("Backup");
const section = { name: "A config section (access, admission, storage, advanced, jobs, …)." };
const sectionQuery = { section: "Only this section." };
const outcome = ref("ApplyOutcome");
const validated = {
  allOf: [outcome, { type: "object", properties: { ok: { const: true } } }],
};
const invalid = "An invalid document answers 422 `invalid_config` naming the field.";
const traceFields = {
  method: "The HTTP method (default GET).",
  path: "The request path (or give bucket and key).",
  bucket: "The bucket.",
  key: "The key.",
  query: "The query string.",
  source_ip: "The client address.",
  authenticated: "true or false.",
};
const password = {
  "X-Svc-Backup-Password": "Seals (or opens) the backup with this password (12+ characters).",
};

export const CONFIG_ROUTES: RouteSpec[] = [
  config.get("/config", "The running config, secrets redacted", {
    returns: "Every section, defaults filled in, environment overrides applied.",
  }),
  config.put("/config", "Merge-patch the config", {
    body: configPatchBody,
    response: outcome,
    description: invalid,
  }),
  config.get("/config/section/:name", "One section of the running config", {
    params: section,
    query: { format: "json (default) or yaml." },
    returns: "The section, secrets redacted (YAML with format=yaml).",
  }),
  config.put("/config/section/:name", "Merge-patch one section", {
    params: section,
    body: configPatchBody,
    response: outcome,
    description: invalid,
  }),
  config.post("/config/section/:name/validate", "Check a section patch (dry run)", {
    params: section,
    body: configPatchBody,
    response: validated,
  }),
  config.get("/config/export", "The running config as YAML, secrets redacted", {
    query: sectionQuery,
    produces: "application/yaml",
  }),
  config.get("/config/defaults", "JSON Schema of the config (defaults as `default`)", {
    query: sectionQuery,
    returns: "A JSON Schema (draft-07).",
  }),
  config.post("/config/validate", "Check a whole YAML document (dry run)", {
    body: yamlDocumentBody,
    response: validated,
  }),
  config.post("/config/apply", "Apply a whole YAML document", {
    body: yamlDocumentBody,
    response: outcome,
    description: invalid,
  }),
  config.post("/config/trace", "Which admission rule would decide a request", {
    body: traceBody,
    returns: "The admission trace: each block tried and the decision.",
  }),
  config.get("/config/trace", "Which admission rule would decide a request", {
    query: traceFields,
    returns: "The admission trace.",
  }),
  config.post("/config/sync-now", "Force config-DB pull from the sync bucket", {
    returns: "`{ok, outcome, bucket}`: `adopted` (a newer state is now in force), `unchanged`, " +
      "or `published` (the bucket held none: this instance's went there).",
    description: "409 `conflict` when config sync is off (no `advanced.config_sync_bucket`, or " +
      "declarative IAM); 502 `bad_gateway` when the bucket could not be read.",
  }),
  backup.get("/backup", "Download a backup (config, IAM, secrets)", {
    headers: password,
    produces: "application/zip",
    returns: "`svc-backup-<time>.zip`: every secret in the clear unless a password is given.",
  }),
  backup.post("/backup", "Import a backup's IAM (users, groups)", {
    headers: password,
    bodyType: "application/zip",
    body: legacyBackupBody,
    returns: "Counts, `format`, the backup's manifest, `warnings`; the config part is never " +
      "applied.",
    description: "Send the zip (`application/zip`), or the legacy JSON form " +
      "(`application/json`, the schema below). Refused in declarative IAM mode.",
  }),
];

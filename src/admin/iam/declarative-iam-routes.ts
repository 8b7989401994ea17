/**
 * Declarative IAM routes under `/_/api/admin` (SPEC Admin API → Configuration):
 *
 * - `GET /config/declarative-iam-export[?include_secrets=true]`: the database's IAM as an
 *   `access:` YAML fragment with `iam_mode: declarative` (src/iam/declarative-export.ts);
 *   redacted unless asked, and every export is audited (`iam_declarative_export`, WARN with
 *   secrets).
 * - `POST /config/declarative-iam-validate {yaml}` / `POST /config/declarative-iam-apply {yaml}`:
 *   the fragment's IAM lists replace those of the operator's `access` section and `iam_mode`
 *   becomes `declarative`; the document then takes the one config apply path (dry run, or live:
 *   validated, persisted, reconciled in one transaction, audited). Applying a fragment therefore
 *   switches the server to declarative mode and writes the lists to the config file, so the file
 *   stays authoritative; the gui → declarative empty-YAML gate holds here too. The export-only
 *   fields (per-user `auth_source`, `external_identities`) reach the reconcile but never the file.
 *
 * A fragment holds IAM only: other `access` fields (authentication, the bootstrap pair) and other
 * sections are refused with 400 (use `/config/apply` for those).
 */
import { Hono } from "hono";
import type { Context } from "hono";
import {
  type ApplyOutcome,
  type ApplyRequest,
  carrySecrets,
  ConfigError,
  type ConfigPort,
  dropNullSecrets,
  exportDocument,
  normalizeLegacy,
  parseDocument,
} from "../../config/mod.ts";
import { isPlainObject } from "../../lib/mod.ts";
import type { AuditFn } from "../../observability/mod.ts";
import { actorFields, type AdminEnv } from "../admin-env.ts";
import { AdminError } from "../admin-error.ts";
import { validBody } from "../valid-body.ts";
import { accessFragmentBody } from "../config/config-bodies.ts";
import { auditedApply } from "../config/audited-apply.ts";
import { CONFIG_BODY_LIMIT } from "../config/config-routes.ts";

export interface DeclarativeIamRouteDeps {
  config: Pick<ConfigPort, "current" | "document"> & {
    apply(request: ApplyRequest & { iamAccess?: Record<string, unknown> }): Promise<ApplyOutcome>;
  };
  /** The database's IAM as YAML (src/iam/declarative-export.ts over the reconciler's state). */
  exportIam(includeSecrets: boolean): Promise<string>;
  audit: AuditFn;
}

const IAM_LISTS = ["iam_users", "iam_groups", "auth_providers", "group_mapping_rules"];
const FRAGMENT_FIELDS = ["iam_mode", ...IAM_LISTS, "external_identities"];

/** The `access` mapping of a `{yaml}` fragment (`access:` at the top, or its bare content). */
function fragmentOf(yaml: string): Record<string, unknown> {
  let parsed: Record<string, unknown>;
  try {
    parsed = parseDocument(yaml, "yaml");
  } catch (err) {
    if (err instanceof ConfigError) throw new AdminError("bad_request", err.message);
    throw err;
  }
  const keys = Object.keys(parsed);
  const access = keys.length === 1 && keys[0] === "access" ? parsed.access : parsed;
  if (!isPlainObject(access)) {
    throw new AdminError("bad_request", "The fragment's access must be a mapping");
  }
  const foreign = Object.keys(access).find((key) => !FRAGMENT_FIELDS.includes(key));
  if (foreign !== undefined) {
    throw new AdminError(
      "bad_request",
      `Unexpected field "${foreign}" in a declarative IAM fragment (expected ${
        FRAGMENT_FIELDS.join(", ")
      }; other settings go through /config/apply)`,
    );
  }
  if (access.iam_mode !== undefined && access.iam_mode !== "declarative") {
    throw new AdminError(
      "bad_request",
      `A declarative IAM fragment has iam_mode: declarative, got ${
        JSON.stringify(access.iam_mode)
      }`,
    );
  }
  return access;
}

/** The fragment without the fields the config file rejects (they go to the reconcile only). */
function fileShape(fragment: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const list of IAM_LISTS) {
    const value = fragment[list];
    if (list === "iam_users" && Array.isArray(value)) {
      out[list] = value.map((user) => {
        if (!isPlainObject(user)) return user;
        const { auth_source: _source, ...rest } = user;
        return rest;
      });
    } else if (value !== undefined && value !== null) {
      out[list] = value;
    }
  }
  return out;
}

export function declarativeIamRoutes(deps: DeclarativeIamRouteDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();

  const run = async (c: Context<AdminEnv>, dryRun: boolean): Promise<ApplyOutcome> => {
    const body = await validBody(c, accessFragmentBody, { maxBytes: CONFIG_BODY_LIMIT });
    const fragment = fragmentOf(body.yaml);
    const document = normalizeLegacy(structuredClone(deps.config.document()), []);
    const before = isPlainObject(document.access) ? document.access : {};
    const access: Record<string, unknown> = { ...before, iam_mode: "declarative" };
    for (const list of IAM_LISTS) delete access[list];
    Object.assign(access, fileShape(fragment));
    // A secret the file holds survives a redacted fragment (same rule as the config API).
    const next = dropNullSecrets(
      carrySecrets({ ...document, access }, document, exportDocument(deps.config.current())),
    ) as Record<string, unknown>;
    return auditedApply(
      c,
      deps,
      { document: next, dryRun, iamAccess: { ...fragment, iam_mode: "declarative" } },
      { route: "POST /config/declarative-iam-apply" },
    );
  };

  app.get("/config/declarative-iam-export", async (c) => {
    const flag = c.req.query("include_secrets");
    if (flag !== undefined && !["true", "false", "1", "0", ""].includes(flag)) {
      throw new AdminError("bad_request", `include_secrets must be true or false, got "${flag}"`);
    }
    const includeSecrets = flag === "true" || flag === "1" || flag === "";
    const text = await deps.exportIam(includeSecrets);
    deps.audit(
      "iam_declarative_export",
      { ...actorFields(c.var), include_secrets: includeSecrets },
      includeSecrets ? "warn" : "info",
    );
    c.header("cache-control", "no-store");
    return c.body(text, 200, { "content-type": "application/yaml; charset=utf-8" });
  });

  app.post("/config/declarative-iam-validate", async (c) => {
    return c.json({ ok: true, ...await run(c, true) });
  });

  app.post("/config/declarative-iam-apply", async (c) => {
    return c.json(await run(c, false));
  });

  return app;
}

/**
 * The configuration API under `/_/api/admin` (SPEC.md, Admin API → Configuration). Every change
 * goes through `ConfigPort.apply`, the one path SIGHUP also takes, which validates, applies live,
 * persists (temp + fsync + rename) and records `config_changed`; these routes only shape the
 * document it is given:
 *
 * - reads (`GET /config`, `GET /config/section/:name`) show the RUNNING config (`current()`:
 *   sectioned, every default filled in, environment overrides applied) with secrets removed;
 * - writes patch the OPERATOR'S DOCUMENT (`document()`: the config file as written, placeholders
 *   unexpanded), so an environment override is never written into the file. A merge patch
 *   (RFC 7396) or a whole `{yaml}` document gets the secrets it omits carried over first
 *   (config/secret-carry.ts): GET, edit, PUT never clears a credential; `null` does. A value sent
 *   back exactly as GET showed it is an echo, not an edit (config/running-echo.ts): it keeps the
 *   file's version (a default stays absent, a placeholder a placeholder, an environment override
 *   out of the file);
 * - a raw body is never `${env:…}`-expanded here: the document goes to `apply` as sent;
 * - an invalid document is a 422 `invalid_config` naming the field, on every route (validate
 *   routes included), a persist failure the 500 `persist_failed` the port throws.
 */
import { isPlainObject as isObject } from "../../lib/mod.ts";
import { Hono } from "hono";
import type { Context } from "hono";
import { stringify } from "yaml";
import { traceAdmission, type TraceInput, TraceInputError } from "../../admission/mod.ts";
import {
  type ApplyOutcome,
  carrySecrets,
  configJsonSchema,
  type ConfigPort,
  configSections,
  dropNullSecrets,
  exportConfig,
  exportDocument,
  keepOperatorValues,
  mergePatch,
  normalizeLegacy,
  parseDocument,
  redactSecrets,
} from "../../config/mod.ts";
import type { AuditFn } from "../../observability/mod.ts";
import type { AdminEnv } from "../admin-env.ts";
import { AdminError } from "../admin-error.ts";
import { validBody } from "../valid-body.ts";
import { configPatchBody, traceBody, yamlDocumentBody } from "./config-bodies.ts";
import { auditedApply } from "./audited-apply.ts";

/** Largest config request body accepted by default: far above any real config document. */
export const CONFIG_BODY_LIMIT = 1 << 20;

export interface ConfigRouteDeps {
  config: ConfigPort;
  /** Records refused config changes; successful ones are audited by `config.apply` itself. */
  audit: AuditFn;
  /** Request body limit in bytes (default CONFIG_BODY_LIMIT). */
  maxBodyBytes?: number;
}

const YAML_TYPE = "application/yaml; charset=utf-8";

/** A section name from the path or query, or 404 naming the known ones. */
function knownSection(name: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  if (!configSections().includes(name)) {
    throw new AdminError(
      "not_found",
      `Unknown config section "${name}" (expected one of ${configSections().join(", ")})`,
    );
  }
  return name;
}

function noStore(c: Context): void {
  c.header("cache-control", "no-store");
}

export function configRoutes(deps: ConfigRouteDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const limit = deps.maxBodyBytes ?? CONFIG_BODY_LIMIT;

  /** The operator's document, sectioned (a legacy flat file is read in its sectioned form). */
  const operatorDocument = (): Record<string, unknown> =>
    normalizeLegacy(structuredClone(deps.config.document()), []);

  /** What a client could have seen of the running config: the canonical, redacted export. */
  const shownDocument = (): Record<string, unknown> => exportDocument(deps.config.current());

  /** Hands the document to the one apply path; audits a refused live change. */
  const apply = (
    c: Context<AdminEnv>,
    document: Record<string, unknown>,
    dryRun: boolean,
    what: Record<string, unknown>,
  ): Promise<ApplyOutcome> => auditedApply(c, deps, { document, dryRun }, what);

  /** The document with `patch` merged into one section (or the whole document). */
  const patched = (patch: Record<string, unknown>, section?: string): Record<string, unknown> => {
    const document = operatorDocument();
    const running = deps.config.current() as unknown as Record<string, unknown>;
    if (section === undefined) {
      const edits = keepOperatorValues(patch, running, document, "patch");
      const carried = carrySecrets(edits, document, shownDocument());
      return dropNullSecrets(mergePatch(document, carried)) as Record<string, unknown>;
    }
    const before = isObject(document[section]) ? document[section] as Record<string, unknown> : {};
    const shown = shownDocument()[section];
    const edits = keepOperatorValues(patch, running[section], before, "patch");
    const carried = carrySecrets(edits, before, isObject(shown) ? shown : {}, section);
    const after = dropNullSecrets(mergePatch(before, carried), section) as Record<string, unknown>;
    const next = { ...document, [section]: after };
    if (Object.keys(after).length === 0) delete next[section];
    return next;
  };

  /** A whole document sent as `{yaml}`: parsed (never expanded), secrets carried. */
  const yamlDocument = async (c: Context<AdminEnv>): Promise<Record<string, unknown>> => {
    const body = await validBody(c, yamlDocumentBody, { maxBytes: limit });
    const parsed = normalizeLegacy(parseDocument(body.yaml, "yaml"), []);
    const document = operatorDocument();
    const restored = keepOperatorValues(parsed, deps.config.current(), document, "document");
    const carried = carrySecrets(restored, document, shownDocument());
    return dropNullSecrets(carried) as Record<string, unknown>;
  };

  app.get("/config", (c) => {
    noStore(c);
    return c.json(redactSecrets(deps.config.current()) as Record<string, unknown>);
  });

  app.put("/config", async (c) => {
    const patch = await validBody(c, configPatchBody, { maxBytes: limit });
    return c.json(await apply(c, patched(patch), false, { route: "PUT /config" }));
  });

  app.get("/config/section/:name", (c) => {
    const section = knownSection(c.req.param("name"))!;
    const format = c.req.query("format") ?? "json";
    if (format !== "json" && format !== "yaml") {
      throw new AdminError("bad_request", `Unknown format "${format}" (expected json or yaml)`);
    }
    noStore(c);
    const current = deps.config.current() as unknown as Record<string, unknown>;
    const value = redactSecrets(current[section], section) as Record<string, unknown>;
    if (format === "yaml") {
      return c.body(stringify(value, { lineWidth: 0 }), 200, { "content-type": YAML_TYPE });
    }
    return c.json(value);
  });

  app.put("/config/section/:name", async (c) => {
    const section = knownSection(c.req.param("name"))!;
    const patch = await validBody(c, configPatchBody, { maxBytes: limit });
    const route = "PUT /config/section";
    return c.json(await apply(c, patched(patch, section), false, { route, section }));
  });

  app.post("/config/section/:name/validate", async (c) => {
    const section = knownSection(c.req.param("name"))!;
    const patch = await validBody(c, configPatchBody, { maxBytes: limit });
    const outcome = await apply(c, patched(patch, section), true, {});
    return c.json({ ok: true, ...outcome });
  });

  app.get("/config/export", (c) => {
    const section = knownSection(c.req.query("section"));
    noStore(c);
    return c.body(exportConfig(deps.config.current(), { section }), 200, {
      "content-type": YAML_TYPE,
    });
  });

  app.get("/config/defaults", (c) => {
    const section = knownSection(c.req.query("section"));
    return c.json(configJsonSchema(section));
  });

  app.post("/config/validate", async (c) => {
    const outcome = await apply(c, await yamlDocument(c), true, {});
    return c.json({ ok: true, ...outcome });
  });

  app.post("/config/apply", async (c) => {
    const document = await yamlDocument(c);
    return c.json(await apply(c, document, false, { route: "POST /config/apply" }));
  });

  const trace = (input: TraceInput) => {
    try {
      return traceAdmission(deps.config.current(), input);
    } catch (err) {
      if (err instanceof TraceInputError) throw new AdminError("bad_request", err.message);
      throw err;
    }
  };

  app.post("/config/trace", async (c) => {
    const body: Record<string, unknown> = await validBody(c, traceBody, { maxBytes: limit });
    return c.json(trace(traceInput((name) => body[name], "body")));
  });

  app.get("/config/trace", (c) => {
    return c.json(trace(traceInput((name) => c.req.query(name), "query")));
  });

  return app;
}

const TRACE_FIELDS = ["method", "path", "bucket", "key", "query", "source_ip", "authenticated"];

/** A TraceInput from JSON body fields or query parameters (where booleans arrive as text). */
function traceInput(read: (name: string) => unknown, from: "body" | "query"): TraceInput {
  const text = (name: string): string | undefined => {
    const value = read(name);
    if (value === undefined || value === null) return undefined;
    if (typeof value !== "string") {
      throw new AdminError("bad_request", `${name} must be a string, got ${JSON.stringify(value)}`);
    }
    return value;
  };
  const flag = read("authenticated");
  let authenticated: boolean | undefined;
  if (flag === undefined || flag === null) authenticated = undefined;
  else if (typeof flag === "boolean") authenticated = flag;
  else if (from === "query" && ["true", "1", ""].includes(String(flag))) authenticated = true;
  else if (from === "query" && ["false", "0"].includes(String(flag))) authenticated = false;
  else {
    throw new AdminError(
      "bad_request",
      `authenticated must be true or false, got ${JSON.stringify(flag)}`,
    );
  }
  const input: TraceInput = {
    method: text("method") ?? "GET",
    path: text("path"),
    bucket: text("bucket"),
    key: text("key"),
    query: text("query"),
    sourceIp: text("source_ip"),
    authenticated,
  };
  if (input.path === undefined && input.bucket === undefined) {
    throw new AdminError(
      "bad_request",
      `Trace needs a path or a bucket (fields: ${TRACE_FIELDS.join(", ")})`,
    );
  }
  return input;
}

/**
 * Backends and buckets of the admin API: `GET/POST /backends`, `DELETE /backends/:name`,
 * `POST /test-s3`, and (bucket-routes.ts) `GET/POST /buckets`.
 *
 * Every change is a new config document through `ConfigPort.apply` (validate, apply live,
 * persist, audit `config_changed`), so a backend added here is in the config file and survives a
 * restart; the route itself audits `backend_created` / `backend_deleted` with who and from where.
 *
 * - POST validates the spec alone, then the whole document (dry run), then, for `type: s3`,
 *   probes the endpoint with the credentials (s3-probe.ts): only then is anything saved.
 * - With a single backend configured (`storage.backend`, `s3` or `filesystem`, or none: ./data),
 *   adding or removing a backend is refused with 409 and the steps to convert (see
 *   singleBackendConflict): converting silently would have to copy settings that may come from
 *   SVC_* variables into the file, and move the local state directory.
 * - DELETE refuses the default backend, one that `storage.buckets.*.backend` routes to, and one
 *   that holds buckets (its listing, bounded by `backend_list_timeout_secs`; a listing that fails
 *   refuses too: a backend error is never read as "empty").
 */
import { Hono } from "hono";
import { type Config, namedBackendSchema, storageOf } from "../../config/mod.ts";
import { withTimeout } from "../../lib/mod.ts";
import { actorFields, type AdminEnv } from "../admin-env.ts";
import { AdminError, jsonBody } from "../admin-error.ts";
import { parseBody, validBody } from "../valid-body.ts";
import { bucketRoutes } from "./bucket-routes.ts";
import { testS3Body } from "./storage-bodies.ts";
import { probeS3 } from "./s3-probe.ts";
import {
  type BackendRoutesDeps,
  backendView,
  defaultBackendName,
  singleBackendConflict,
  usesNamedBackends,
} from "./storage-admin.ts";

export type { BackendRoutesDeps, StorageView } from "./storage-admin.ts";

/** The `storage.backends` list of a document (empty when absent). */
function backendsOf(document: Record<string, unknown>): unknown[] {
  const backends = storageOf(document).backends;
  return Array.isArray(backends) ? backends : [];
}

/** `document` with `spec` appended to `storage.backends`; 409 when the name is taken. */
function withBackendAdded(
  document: Record<string, unknown>,
  spec: Record<string, unknown>,
  config: Config,
): Record<string, unknown> {
  const listed = backendsOf(document);
  const taken = new Set([
    ...config.storage.backends.map((backend) => backend.name),
    ...listed.map((entry) => (entry as { name?: unknown })?.name),
  ]);
  if (taken.has(spec.name as string)) {
    throw new AdminError("conflict", `A backend named "${spec.name}" already exists`);
  }
  // What the operator sent (validated), not the defaults the schema filled in.
  storageOf(document).backends = [...listed, spec];
  return document;
}

export function backendRoutes(deps: BackendRoutesDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();

  app.get("/backends", (c) => {
    const config = deps.config.current();
    const view = deps.storage();
    const backends = backendView(config).map((backend) => ({
      ...backend,
      ...(view.available ? { available: view.available(backend.name as string) } : {}),
    }));
    return c.json({
      backends,
      default_backend: defaultBackendName(config),
      named: usesNamedBackends(config),
    });
  });

  app.post("/backends", async (c) => {
    const body = await jsonBody(c);
    const spec = parseBody(namedBackendSchema, body, "backend");
    if (spec.type === "filesystem" && spec.path === undefined) {
      throw new AdminError(
        "bad_request",
        "Invalid backend: path is required for a filesystem backend",
      );
    }
    if (spec.type === "s3" && spec.endpoint === undefined) {
      throw new AdminError(
        "bad_request",
        "Invalid backend: endpoint is required for an s3 backend",
      );
    }
    const config = deps.config.current();
    if (!usesNamedBackends(config)) throw singleBackendConflict(config, "add a backend");
    const actor = actorFields(c.var) as { user: string; ip: string };
    await deps.config.apply({
      document: withBackendAdded(deps.config.document(), body, config),
      source: "admin_api",
      dryRun: true,
      persist: false,
      actor,
    });
    if (spec.type === "s3") await probeS3(spec, config.advanced);
    // Merged again into the document as it is now: the probe took time, and another change
    // may have landed meanwhile.
    const outcome = await deps.config.apply({
      document: withBackendAdded(deps.config.document(), body, deps.config.current()),
      source: "admin_api",
      dryRun: false,
      persist: true,
      actor,
    });
    deps.audit("backend_created", {
      ...actor,
      backend: spec.name,
      type: spec.type,
      ...(spec.type === "s3" ? { endpoint: spec.endpoint } : { path: spec.path }),
    }, "info");
    const shown = backendView(deps.config.current()).find((backend) => backend.name === spec.name);
    return c.json({ backend: shown ?? { name: spec.name, type: spec.type }, ...outcome }, 201);
  });

  app.delete("/backends/:name", async (c) => {
    const name = c.req.param("name");
    const config = deps.config.current();
    if (!usesNamedBackends(config)) throw singleBackendConflict(config, "remove a backend");
    const inDocument = (document: Record<string, unknown>) =>
      backendsOf(document).some((entry) => (entry as { name?: unknown })?.name === name);
    if (!inDocument(deps.config.document())) {
      throw new AdminError("not_found", `No backend named "${name}" is configured`);
    }
    if (name === defaultBackendName(config)) {
      throw new AdminError(
        "conflict",
        `Backend "${name}" is the default backend and cannot be removed`,
      );
    }
    const routed = Object.entries(config.storage.buckets)
      .filter(([, policy]) => policy.backend === name)
      .map(([bucket]) => bucket);
    if (routed.length > 0) {
      throw new AdminError(
        "conflict",
        `Backend "${name}" cannot be removed: storage.buckets routes ${
          routed.slice(0, 5).map((b) => `"${b}"`).join(", ")
        } to it`,
        { buckets: routed },
      );
    }
    const backend = deps.storage().backends.get(name);
    if (!backend) {
      // Configured but not open: its buckets cannot be checked, so it is not removed.
      throw new AdminError(
        "conflict",
        `Backend "${name}" cannot be removed: it is not open in the running storage, so its ` +
          "buckets cannot be checked",
      );
    }
    let held: string[];
    try {
      const timeoutMs = config.advanced.backend_list_timeout_secs * 1000;
      held = (await withTimeout(backend.listBuckets(), timeoutMs)).map((b) => b.name);
    } catch (err) {
      throw new AdminError(
        "conflict",
        `Backend "${name}" cannot be removed: its buckets could not be listed (${
          err instanceof Error ? err.message : String(err)
        })`,
      );
    }
    if (held.length > 0) {
      throw new AdminError(
        "conflict",
        `Backend "${name}" cannot be removed: it still holds bucket(s) ${
          held.slice(0, 5).map((b) => `"${b}"`).join(", ")
        }`,
        { buckets: held.slice(0, 100) },
      );
    }
    // The document as it is now (the listing took time), without the backend.
    const document = deps.config.document();
    if (!inDocument(document)) {
      throw new AdminError("not_found", `No backend named "${name}" is configured`);
    }
    const storage = storageOf(document);
    storage.backends = backendsOf(document).filter((entry) =>
      (entry as { name?: unknown })?.name !== name
    );
    const actor = actorFields(c.var) as { user: string; ip: string };
    const outcome = await deps.config.apply({
      document,
      source: "admin_api",
      dryRun: false,
      persist: true,
      actor,
    });
    deps.audit("backend_deleted", { ...actor, backend: name }, "warn");
    return c.json({ deleted: name, ...outcome });
  });

  app.post("/test-s3", async (c) => {
    const connection = await validBody(c, testS3Body, { what: "S3 connection" });
    const buckets = await probeS3(connection, deps.config.current().advanced);
    return c.json({ ok: true, buckets });
  });

  app.route("/", bucketRoutes(deps));
  return app;
}

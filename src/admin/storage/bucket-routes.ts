/**
 * `GET /buckets` (where each bucket lives: backend and alias) and `POST /buckets` (`{name,
 * backend?}`: create a bucket on a backend) of the admin API; mounted by backend-routes.ts.
 *
 * POST checks everything first (the name by S3's rules, the backend, that no backend already has
 * the bucket, that `storage.buckets` does not route it elsewhere, and, when a route must be
 * recorded, the new document by a dry run), then creates the bucket on the backend, then records
 * `storage.buckets.<name>.backend` through `apply` when the backend is not the default (an
 * unrouted bucket is looked for on the default backend first, so the default needs no entry). If
 * recording the route fails, the bucket just created is deleted again: nothing is half-done.
 */
import { Hono } from "hono";
import { getLogger } from "../../observability/mod.ts";
import { actorFields, type AdminEnv } from "../admin-env.ts";
import { AdminError } from "../admin-error.ts";
import { validBody } from "../valid-body.ts";
import { createBucketBody } from "./storage-bodies.ts";
import { storageOf } from "../../config/mod.ts";
import {
  adminErrorFromStorage,
  backendNames,
  type BackendRoutesDeps,
  defaultBackendName,
  mapLimited,
} from "./storage-admin.ts";

const log = getLogger("svc::admin");

/** Buckets whose route is looked up at once (an unrouted bucket may cost a HEAD per backend). */
const ROUTE_CONCURRENCY = 8;

/** `document` with `storage.buckets.<bucket>.backend` set (other policy fields kept). */
function withRoute(
  document: Record<string, unknown>,
  bucket: string,
  backend: string,
): Record<string, unknown> {
  const storage = storageOf(document);
  const buckets = (storage.buckets ?? {}) as Record<string, Record<string, unknown>>;
  storage.buckets = { ...buckets, [bucket]: { ...buckets[bucket], backend } };
  return document;
}

export function bucketRoutes(deps: BackendRoutesDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();

  app.get("/buckets", async (c) => {
    const config = deps.config.current();
    const { router } = deps.storage();
    let entries;
    try {
      entries = await router.listBuckets();
    } catch (err) {
      throw adminErrorFromStorage(err, "Listing buckets failed");
    }
    const policies = config.storage.buckets;
    const buckets = await mapLimited(entries, ROUTE_CONCURRENCY, async (entry) => {
      const policy = policies[entry.name];
      const shown = {
        name: entry.name,
        created: entry.created.getTime() > 0 ? entry.created.toISOString() : null,
        routed: policy?.backend !== undefined,
      };
      try {
        const route = await router.route(entry.name);
        return {
          ...shown,
          backend: route.name,
          alias: route.real !== entry.name ? route.real : null,
        };
      } catch (err) {
        return {
          ...shown,
          backend: policy?.backend ?? null,
          alias: policy?.alias ?? null,
          error: err instanceof Error ? err.message : String(err),
        };
      }
    });
    return c.json({ buckets, default_backend: defaultBackendName(config) });
  });

  app.post("/buckets", async (c) => {
    const { name, backend: requested } = await validBody(c, createBucketBody);
    const config = deps.config.current();
    const policy = config.storage.buckets[name];
    const backend = requested ?? policy?.backend ?? defaultBackendName(config);
    if (!backendNames(config).includes(backend)) {
      throw new AdminError(
        "bad_request",
        `Unknown backend "${backend}" (expected one of ${backendNames(config).join(", ")})`,
      );
    }
    if (policy?.backend !== undefined && policy.backend !== backend) {
      throw new AdminError(
        "conflict",
        `Bucket "${name}" is routed to backend "${policy.backend}" by storage.buckets`,
      );
    }
    const { router } = deps.storage();
    let existing;
    try {
      existing = await router.headBucket(name);
    } catch (err) {
      throw adminErrorFromStorage(err, `Checking bucket "${name}" failed`);
    }
    if (existing) throw new AdminError("conflict", `Bucket "${name}" already exists`);

    const needsRoute = backend !== defaultBackendName(config) && policy?.backend !== backend;
    const actor = actorFields(c.var) as { user: string; ip: string };
    if (needsRoute) {
      await deps.config.apply({
        document: withRoute(deps.config.document(), name, backend),
        source: "admin_api",
        dryRun: true,
        persist: false,
        actor,
      });
    }
    const real = policy?.alias ?? name;
    try {
      await router.createBucketOn(backend, real);
    } catch (err) {
      throw adminErrorFromStorage(err, `Creating bucket "${name}" on backend "${backend}" failed`);
    }
    let outcome = {};
    if (needsRoute) {
      try {
        outcome = await deps.config.apply({
          // The document as it is now: creating the bucket took time.
          document: withRoute(deps.config.document(), name, backend),
          source: "admin_api",
          dryRun: false,
          persist: true,
          actor,
        });
      } catch (err) {
        await router.deleteBucketOn(backend, real).catch((undo) =>
          log.error(`Bucket "${name}" was created on "${backend}" but its route was not saved`, {
            error: undo instanceof Error ? undo.message : String(undo),
          })
        );
        throw err;
      }
    }
    deps.audit("bucket_created", { ...actor, bucket: name, backend, routed: needsRoute }, "info");
    return c.json({
      bucket: name,
      backend,
      alias: real !== name ? real : null,
      routed: needsRoute || policy?.backend !== undefined,
      ...outcome,
    }, 201);
  });

  return app;
}

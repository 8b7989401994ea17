/**
 * Composes the surfaces on one Hono app: operator routes under `/_/`, S3 for everything else.
 * No logic lives here.
 */
import { Hono } from "hono";
import { uiRoutes } from "../ui/mod.ts";
import type { AdminEnv } from "../admin/mod.ts";
import {
  type Metrics,
  noteAccess,
  operatorOperation,
  requestBytesOf,
  responseBytesOf,
} from "../observability/mod.ts";

export interface AppSurfaces {
  s3: (request: Request, remoteAddress?: string) => Promise<Response>;
  /** Readiness: probes the backend (bounded, retried); 200 or 503. */
  ready: () => Promise<Response>;
  metrics: Pick<Metrics, "render" | "observeRequest" | "observeAdminRequest">;
  /**
   * Admin surfaces: the admin API (mounted at `/_/api/admin`) and the operator routes outside
   * that prefix that still belong to the admin plane (`/_/api/whoami`, `/_/stats`).
   */
  admin?: { api: Hono<AdminEnv>; operator: Hono<AdminEnv> };
}

/** An answer that is a small document, not a download or a live stream. */
function isDocument(contentType: string | null): boolean {
  const type = contentType?.split(";")[0].trim().toLowerCase() ?? "";
  return type !== "text/event-stream" &&
    (type === "application/json" || type.startsWith("text/") || type.endsWith("yaml"));
}

export function createApp(surfaces: AppSurfaces): Hono {
  const app = new Hono();
  // Operator routes are measured here; S3 requests are measured by the S3 handler.
  app.use("/_/*", async (c, next) => {
    const started = performance.now();
    await next();
    if (
      c.req.method !== "HEAD" && isDocument(c.res.headers.get("content-type")) &&
      !c.res.headers.has("content-length")
    ) {
      // Operator documents (JSON, YAML, text) are small and in memory: sized here, so the
      // response-size histogram observes every answer (Hono leaves the length to the server).
      // Downloads (ZIP, backups) and live tails stream and are never read here.
      const body = new Uint8Array(await c.res.arrayBuffer());
      const headers = new Headers(c.res.headers);
      headers.set("content-length", String(body.byteLength));
      const sized = new Response(body, { status: c.res.status, headers });
      c.res = undefined; // replace, rather than merge into, the answer
      c.res = sized;
    }
    const path = c.req.path;
    // The admin app set these (admin-app.ts) when it answered; other operator routes have none.
    const vars = c.var as { requestId?: string; principal?: { user: string } };
    noteAccess(c.req.raw, {
      requestId: vars.requestId,
      principal: vars.principal?.user ?? null,
      operation: operatorOperation(path),
    });
    if (path.startsWith("/_/api/") || path.startsWith("/_/stats")) {
      surfaces.metrics.observeAdminRequest({ method: c.req.method, path, status: c.res.status });
    }
    surfaces.metrics.observeRequest({
      method: c.req.method,
      status: c.res.status,
      operation: operatorOperation(c.req.path),
      seconds: (performance.now() - started) / 1000,
      requestBytes: requestBytesOf(c.req.raw),
      responseBytes: responseBytesOf(c.res, c.req.method),
    });
  });
  // Liveness: no backend I/O and no version, so it answers even when storage is down.
  app.get("/_/health", (c) => c.json({ status: "ok" }));
  app.get("/_/ready", () => surfaces.ready());
  // Prometheus scrape: unauthenticated, like health and readiness.
  app.get("/_/metrics", async () => {
    const { body, contentType } = await surfaces.metrics.render();
    return new Response(body, { headers: { "content-type": contentType } });
  });
  if (surfaces.admin) {
    app.route("/_/api/admin", surfaces.admin.api);
    app.route("/_", surfaces.admin.operator);
  }
  // The embedded UI: `/_/`, its pages and hashed assets; every other `/_/` path stays JSON.
  app.route("/", uiRoutes());
  app.all(
    "/_/*",
    (c) => c.json({ error: "not_found", message: `No route for ${c.req.path}` }, 404),
  );
  app.all("*", (c) => {
    // Deno.serve hands Hono its connection info as the env.
    const info = c.env as Deno.ServeHandlerInfo<Deno.NetAddr> | undefined;
    return surfaces.s3(c.req.raw, info?.remoteAddr?.hostname);
  });
  return app;
}

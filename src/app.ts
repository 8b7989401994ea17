/**
 * Composes the surfaces on one Hono app: operator routes under `/_/`, S3 for everything else.
 * No logic lives here.
 */
import { Hono } from "hono";

export interface AppSurfaces {
  s3: (request: Request, remoteAddress?: string) => Promise<Response>;
  /** Readiness: probes the backend (bounded, retried); 200 or 503. */
  ready: () => Promise<Response>;
}

export function createApp(surfaces: AppSurfaces): Hono {
  const app = new Hono();
  // Liveness: no backend I/O and no version, so it answers even when storage is down.
  app.get("/_/health", (c) => c.json({ status: "ok" }));
  app.get("/_/ready", () => surfaces.ready());
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

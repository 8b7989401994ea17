/**
 * The admin API under `/_/api/admin`: one Hono app that gives every route its request id and
 * client address, runs the session guard (which also refuses cross-site writes), mounts one
 * route file per area, and renders every error as the one JSON shape (admin-error.ts).
 */
import { Hono, type MiddlewareHandler } from "hono";
import { clientIp } from "../auth/mod.ts";
import type { AdminEnv } from "./admin-env.ts";
import { AdminError, renderAdminError } from "./admin-error.ts";
import { requestIsHttps } from "./session/cookie-security.ts";

export interface AdminAppParts {
  /** `trust_proxy_headers`: whether X-Forwarded-For names the client. */
  trustProxyHeaders: () => boolean;
  /** Session guard: sets `principal` or refuses (public routes pass). */
  guard: MiddlewareHandler<AdminEnv>;
  /** Route files, each mounted at the root of the admin prefix. */
  areas: Hono<AdminEnv>[];
}

/** Sets the request id, client address and transport every admin route reads. */
export function adminContext(trustProxyHeaders: () => boolean): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    const info = c.env as Deno.ServeHandlerInfo<Deno.NetAddr> | undefined;
    c.set("requestId", crypto.randomUUID());
    const trusted = trustProxyHeaders();
    c.set("clientIp", clientIp(c.req.raw.headers, info?.remoteAddr?.hostname, trusted));
    c.set("https", requestIsHttps(c.req.raw, trusted));
    await next();
    // Admin answers carry session-bound data: never cached by a browser or proxy.
    if (!c.res.headers.has("cache-control")) c.res.headers.set("cache-control", "no-store");
  };
}

export function createAdminApp(parts: AdminAppParts): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  app.onError(renderAdminError);
  app.notFound((c) => renderAdminError(new AdminError("not_found", "No such admin route"), c));
  app.use("*", adminContext(parts.trustProxyHeaders));
  app.use("*", parts.guard);
  for (const area of parts.areas) app.route("/", area);
  return app;
}

/**
 * The description against the routes: the app the runtime serves (runtime/app.ts over the admin
 * API and the operator routes, built by the runtime's own factories) registers exactly the
 * routes the document describes under `/_/`, method and path, both ways. The embedded UI's pages
 * are not API and are left out by subtracting what `uiRoutes()` registers. Each row's access
 * level is also checked against the session guard's public and browse lists.
 */
import assert from "node:assert/strict";
import { adminApi } from "../../runtime/admin-plane/admin-routes.ts";
import { operatorRoutes } from "../../runtime/admin-plane/operator-routes.ts";
import type { AdminPlaneDeps } from "../../runtime/admin-plane/admin-plane-deps.ts";
import { createApp } from "../../runtime/app.ts";
import { uiRoutes } from "../../ui/mod.ts";
import {
  BROWSE_SESSION_PATHS,
  DEFAULT_PUBLIC_ADMIN_PATHS,
  isPublicPath,
} from "../session/session-guard.ts";
import { ADMIN_ROUTE_SPECS } from "./openapi-document.ts";
import { OPENAPI_PATH } from "./openapi-routes.ts";
import { ADMIN_PREFIX, documentPath } from "./route-spec.ts";

/**
 * Stands in for every dependency: route factories only keep their deps at construction, so any
 * property, call or `new` of it answers another stand-in.
 */
function standIn(): never {
  const target = function () {};
  return new Proxy(target, {
    get: (_target, key) => (key === "then" ? undefined : standIn()),
    apply: () => standIn(),
    construct: () => standIn() as object,
  }) as never;
}

/** `METHOD /path/{param}` of every route the served app registers under `/_/`. */
function servedRoutes(): Set<string> {
  const deps = standIn() as AdminPlaneDeps;
  const app = createApp({
    s3: standIn(),
    ready: standIn(),
    metrics: standIn(),
    admin: { api: adminApi(deps), operator: operatorRoutes(deps) },
  });
  const key = (route: { method: string; path: string }) =>
    `${route.method} ${route.path.replace(/:([A-Za-z0-9_]+)/g, "{$1}")}`;
  const ui = new Set(uiRoutes().routes.map(key));
  return new Set(
    app.routes
      // Middleware (and the `/_/*` fallback) register as ALL; no admin route does.
      .filter((route) => route.method !== "ALL" && route.path.startsWith("/_/"))
      .map(key)
      .filter((route) => !ui.has(route)),
  );
}

const described = new Set(
  ADMIN_ROUTE_SPECS.map((spec) => `${spec.method} ${documentPath(spec.path)}`),
);

Deno.test("openapi: every served admin route is described", () => {
  const served = servedRoutes();
  // A guard against a vacuous pass: the stand-ins built the real areas.
  assert.ok(served.size > 100, `only ${served.size} routes served`);
  const missing = [...served].filter((route) => !described.has(route)).sort();
  assert.deepEqual(missing, [], "add a row to src/admin/openapi/routes-*.ts for each");
});

Deno.test("openapi: every described route is served", () => {
  const served = servedRoutes();
  const extra = [...described].filter((route) => !served.has(route)).sort();
  assert.deepEqual(extra, [], "rows describing no route");
});

Deno.test("openapi: no route is described twice", () => {
  assert.equal(described.size, ADMIN_ROUTE_SPECS.length);
});

Deno.test("openapi: each row's access matches the session guard", () => {
  const publicPaths = [...DEFAULT_PUBLIC_ADMIN_PATHS, OPENAPI_PATH];
  // Outside the admin prefix: whoami and the probes need no session, /_/stats an admin one.
  const outside: Record<string, string> = {
    "/_/api/whoami": "public",
    "/_/health": "public",
    "/_/ready": "public",
    "/_/metrics": "public",
    "/_/stats": "admin",
  };
  for (const spec of ADMIN_ROUTE_SPECS) {
    const access = spec.access ?? "admin";
    const what = `${spec.method} ${spec.path}`;
    if (spec.path.startsWith("/_/")) {
      assert.equal(access, outside[spec.path], what);
      continue;
    }
    const concrete = spec.path.replace(/:([A-Za-z0-9_]+)/g, "x");
    const expected = isPublicPath(concrete, publicPaths)
      ? "public"
      : isPublicPath(concrete, BROWSE_SESSION_PATHS)
      ? "browse"
      : "admin";
    assert.equal(access, expected, what);
  }
  assert.equal(ADMIN_PREFIX, "/_/api/admin");
});

/**
 * `GET /_/api/admin/openapi.json`: the admin API's OpenAPI 3.1 document. Readable without a
 * session (the runtime lists it among the guard's public paths): it describes routes and shapes
 * only, the same for every server, and holds no setting, name or secret of this one; the routes
 * it describes still need their session. Built once, on first request.
 */
import { Hono } from "hono";
import type { AdminEnv } from "../admin-env.ts";
import { openApiDocument } from "./openapi-document.ts";
import type { JsonSchema } from "./route-spec.ts";

/** The path under the admin prefix, for the guard's public list. */
export const OPENAPI_PATH = "/openapi.json";

export function openapiRoutes(options: { version: string }): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  let document: JsonSchema | undefined;
  app.get(OPENAPI_PATH, (c) => {
    document ??= openApiDocument(options.version);
    return c.json(document);
  });
  return app;
}

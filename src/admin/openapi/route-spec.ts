/**
 * One row of the admin API's description: what `GET /_/api/admin/openapi.json` says about one
 * route. Rows live in one file per area (routes-*.ts) and are written with `area(tag)`, so adding
 * a route is one line (plus its body schema, which the route itself checks):
 *
 *     const iam = area("IAM");
 *     iam.post("/users", "Create a user", { body: createUserBody, status: 201 }),
 *
 * A path is Hono's (`:id`), relative to `/_/api/admin`, or absolute when it starts with `/_/`
 * (health, metrics, stats, whoami). The route test (openapi-routes_test.ts) compares the rows with
 * the routes the running app registers, both ways.
 */
import type { BodySchema } from "../valid-body.ts";

export type JsonSchema = Record<string, unknown>;
export type HttpMethod = "GET" | "POST" | "PUT" | "DELETE";

/**
 * Who may call a route: `public` needs no session, `browse` any session (browse-only ones too),
 * `admin` an admin session (the default).
 */
export type Access = "public" | "browse" | "admin";

export interface RouteDetails {
  /** Longer text (Markdown) beside the summary. */
  description?: string;
  access?: Access;
  /** The JSON body: a valibot schema the route checks it with, or a JSON Schema. */
  body?: BodySchema | JsonSchema;
  /** A body that is not JSON (an upload, a zip): its media type. */
  bodyType?: string;
  /** Query parameters: name → description. */
  query?: Record<string, string>;
  /** Query parameters that must be given. */
  requiredQuery?: string[];
  /** Path parameters: name → description (default: "The <name>."). */
  params?: Record<string, string>;
  /** Request headers: name → description. */
  headers?: Record<string, string>;
  /** The success status (default 200). */
  status?: number;
  /** What the success answer holds, in words. */
  returns?: string;
  /** The success answer's JSON Schema (`$ref`s into components allowed). */
  response?: JsonSchema;
  /** A success answer that is not JSON: its media type (a zip, YAML, an event stream). */
  produces?: string;
}

export interface RouteSpec extends RouteDetails {
  method: HttpMethod;
  path: string;
  summary: string;
  tag: string;
}

export const ADMIN_PREFIX = "/_/api/admin";

/** The path as the document shows it: absolute, with `{param}` for Hono's `:param`. */
export function documentPath(path: string): string {
  const absolute = path.startsWith("/_/") ? path : `${ADMIN_PREFIX}${path === "/" ? "" : path}`;
  return absolute.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
}

/** Row builders for one tag: `iam.get(path, summary, details?)`. */
export function area(tag: string) {
  const row =
    (method: HttpMethod) =>
    (path: string, summary: string, details: RouteDetails = {}): RouteSpec => ({
      method,
      path,
      summary,
      tag,
      ...details,
    });
  return { get: row("GET"), post: row("POST"), put: row("PUT"), delete: row("DELETE") };
}

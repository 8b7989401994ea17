/**
 * The OpenAPI 3.1 document of the admin API, built from the route rows (routes-*.ts) and the
 * shared components. Request bodies come from the valibot schemas the routes check bodies with,
 * so the document cannot promise a shape the server does not enforce.
 */
import { RESPONSES, SCHEMAS, SECURITY_SCHEMES } from "./components.ts";
import { type Access, documentPath, type JsonSchema, type RouteSpec } from "./route-spec.ts";
import { jsonSchemaOf } from "./schema-json.ts";
import { CONFIG_ROUTES } from "./routes-config.ts";
import { DIAGNOSTICS_ROUTES } from "./routes-diagnostics.ts";
import { EXT_AUTH_ROUTES } from "./routes-ext-auth.ts";
import { IAM_ROUTES } from "./routes-iam.ts";
import { OPS_ROUTES } from "./routes-ops.ts";
import { SESSION_ROUTES } from "./routes-session.ts";
import { STORAGE_ROUTES } from "./routes-storage.ts";

/** Every described route. A new area's rows are added here. */
export const ADMIN_ROUTE_SPECS: readonly RouteSpec[] = [
  ...SESSION_ROUTES,
  ...IAM_ROUTES,
  ...EXT_AUTH_ROUTES,
  ...CONFIG_ROUTES,
  ...STORAGE_ROUTES,
  ...OPS_ROUTES,
  ...DIAGNOSTICS_ROUTES,
];

const ACCESS_TEXT: Record<Access, string> = {
  public: "No session needed.",
  browse: "Any session (browse-only sessions too).",
  admin: "Needs an admin session.",
};

const DESCRIPTION = "The admin API of svc: everything the embedded console does, for scripts " +
  "and generated clients. Log in with `POST /_/api/admin/login` (or `/login-as`); the session " +
  "is a cookie. State-changing requests a browser marks as cross-site are refused. Every error " +
  "answers the one `Error` shape. Request bodies are checked against the schemas shown: a " +
  "refused body answers 400 `bad_request` naming the field (`field`).";

/** `post /_/api/admin/users/{id}/clone` → `postUsersIdClone`. */
export function operationId(spec: RouteSpec): string {
  const words = documentPath(spec.path).replace(/^\/_\/(api\/admin\/?)?/, "").split(/[/{}._-]+/)
    .filter((word) => word !== "");
  return spec.method.toLowerCase() +
    words.map((word) => word[0].toUpperCase() + word.slice(1)).join("");
}

function parametersOf(spec: RouteSpec): JsonSchema[] {
  const names = [...spec.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((match) => match[1]);
  const inPath = names.map((name) => ({
    name,
    in: "path",
    required: true,
    description: spec.params?.[name] ?? `The ${name.replaceAll("_", " ")}.`,
    schema: { type: "string" },
  }));
  const inQuery = Object.entries(spec.query ?? {}).map(([name, description]) => ({
    name,
    in: "query",
    required: spec.requiredQuery?.includes(name) ?? false,
    description,
    schema: { type: "string" },
  }));
  const inHeader = Object.entries(spec.headers ?? {}).map(([name, description]) => ({
    name,
    in: "header",
    required: false,
    description,
    schema: { type: "string" },
  }));
  return [...inPath, ...inQuery, ...inHeader];
}

const BINARY = { type: "string", format: "binary" };

function requestBodyOf(spec: RouteSpec): JsonSchema | undefined {
  if (spec.body === undefined && spec.bodyType === undefined) return undefined;
  const content: Record<string, JsonSchema> = {};
  let required = spec.bodyType !== undefined;
  if (spec.bodyType !== undefined) content[spec.bodyType] = { schema: BINARY };
  if (spec.body !== undefined) {
    const schema = jsonSchemaOf(spec.body);
    content["application/json"] = { schema };
    required ||= Array.isArray(schema.required) && schema.required.length > 0;
  }
  return { required, content };
}

function responsesOf(spec: RouteSpec): JsonSchema {
  const status = String(spec.status ?? 200);
  const description = spec.returns ?? spec.summary;
  const success: JsonSchema = { description };
  if (spec.produces !== undefined) {
    success.content = { [spec.produces]: { schema: { type: "string" } } };
  } else if (spec.status !== 302) {
    success.content = { "application/json": { schema: spec.response ?? { type: "object" } } };
  }
  const responses: JsonSchema = { [status]: success };
  const refused = spec.body !== undefined || spec.query !== undefined ||
    spec.path.includes(":") || spec.headers !== undefined;
  if (refused) responses["400"] = { $ref: "#/components/responses/BadRequest" };
  if ((spec.access ?? "admin") !== "public") {
    responses["401"] = { $ref: "#/components/responses/Unauthorized" };
    responses["403"] = { $ref: "#/components/responses/Forbidden" };
  }
  responses.default = { $ref: "#/components/responses/Error" };
  return responses;
}

function operationOf(spec: RouteSpec): JsonSchema {
  const access = spec.access ?? "admin";
  const description = [spec.description, ACCESS_TEXT[access]].filter(Boolean).join("\n\n");
  const operation: JsonSchema = {
    tags: [spec.tag],
    summary: spec.summary,
    description,
    operationId: operationId(spec),
  };
  const parameters = parametersOf(spec);
  if (parameters.length > 0) operation.parameters = parameters;
  const body = requestBodyOf(spec);
  if (body !== undefined) operation.requestBody = body;
  operation.responses = responsesOf(spec);
  if (access === "public") operation.security = [];
  return operation;
}

/** The document; `specs` defaults to every described route. */
export function openApiDocument(
  version: string,
  specs: readonly RouteSpec[] = ADMIN_ROUTE_SPECS,
): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const spec of specs) {
    const path = documentPath(spec.path);
    const method = spec.method.toLowerCase();
    paths[path] ??= {};
    if (paths[path][method] !== undefined) {
      throw new Error(`The admin API description has ${spec.method} ${path} twice`);
    }
    paths[path][method] = operationOf(spec);
  }
  const tags = [...new Set(specs.map((spec) => spec.tag))].map((name) => ({ name }));
  return {
    openapi: "3.1.0",
    info: { title: "svc admin API", version, description: DESCRIPTION },
    servers: [{ url: "/", description: "The svc server itself." }],
    tags,
    security: [{ session: [] }],
    paths,
    components: { schemas: SCHEMAS, responses: RESPONSES, securitySchemes: SECURITY_SCHEMES },
  };
}

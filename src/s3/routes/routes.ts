/**
 * Route resolution: every S3 request becomes `{operation, action, bucket, key}` before anything
 * runs, from the declarative table in route-table.ts. The handler then authorizes the resolved
 * request and dispatches it; handlers receive a request whose bucket (and key) the path shape
 * guarantees non-null.
 *
 * Resolution is pure (no I/O), so it also gives the metrics label before authentication. A
 * request no route serves resolves to a refusal (NotImplemented, MethodNotAllowed, a bad
 * versionId), thrown after authentication exactly where the old switch threw it.
 */
import { SvcError } from "../../lib/mod.ts";
import type { S3Request } from "../request.ts";
import { notImplemented } from "../response.ts";
import type { S3Services } from "./s3-services.ts";
import type {
  BucketRequest,
  ObjectRequest,
  OperationLabel,
  PathShape,
  Resolved,
  Route,
  RouteTable,
  ServedRoute,
} from "./route-types.ts";

const LABELS: Record<PathShape, Record<string, OperationLabel>> = {
  service: { GET: "list_buckets", HEAD: "head_root" },
  bucket: {
    GET: "list_objects",
    PUT: "create_bucket",
    DELETE: "delete_bucket",
    HEAD: "head_bucket",
    POST: "post_bucket",
  },
  object: {
    GET: "get_object",
    PUT: "put_object",
    DELETE: "delete_object",
    HEAD: "head_object",
    POST: "post_object",
  },
};

/** The label of a method on a path shape: metrics keep their coarse, bounded set. */
export function labelOf(method: string, shape: PathShape): OperationLabel | undefined {
  return LABELS[shape][method];
}

export function shapeOf(request: S3Request): PathShape {
  return request.bucket === null ? "service" : request.key === null ? "bucket" : "object";
}

function methodNotAllowed(request: S3Request): SvcError {
  return new SvcError(
    "MethodNotAllowed",
    `The specified method "${request.method}" is not allowed against this resource`,
    { Method: request.method, ResourceType: request.key === null ? "BUCKET" : "OBJECT" },
  );
}

/** Refusals that come before the table: they hold whatever the method. */
function preRouteRefusal(table: RouteTable, request: S3Request): SvcError | undefined {
  const q = request.query;
  if (q.size === 0) return undefined; // most object GETs and PUTs: nothing to look up
  if (request.key === null) {
    const family = table.unsupported.bucket.find((name) => q.has(name));
    if (family) return notImplemented(`The bucket "${family}" API`);
    if (q.has("tagging")) return notImplemented("Bucket tagging");
    return undefined;
  }
  // Object versioning is not implemented: only the "null" version (the current object) exists.
  const versionId = q.get("versionId");
  if (versionId !== null && versionId !== "null") {
    return new SvcError("InvalidArgument", `Invalid version id specified: "${versionId}"`, {
      ArgumentName: "versionId",
      ArgumentValue: versionId,
    });
  }
  const family = table.unsupported.object.find((name) => q.has(name));
  if (family) return notImplemented(`The object "${family}" API`);
  return undefined;
}

function matches(route: Route, shape: PathShape, request: S3Request): boolean {
  return route.shape === shape && (route.method === "*" || route.method === request.method) &&
    (route.query ?? []).every((name) => request.query.has(name)) &&
    (route.when === undefined || route.when(request));
}

/** The rows of each shape and method, in table order (`*` rows included): built once. */
const candidatesOf = new WeakMap<RouteTable, Map<string, readonly Route[]>>();

function candidates(table: RouteTable, shape: PathShape, method: string): readonly Route[] {
  let index = candidatesOf.get(table);
  if (index === undefined) {
    index = new Map();
    candidatesOf.set(table, index);
  }
  const name = `${shape} ${method}`;
  let rows = index.get(name);
  if (rows === undefined) {
    rows = table.routes.filter((route) =>
      route.shape === shape && (route.method === "*" || route.method === method)
    );
    // Any method string may arrive: only the methods some row names are remembered.
    if (rows.some((route) => route.method === method)) index.set(name, rows);
  }
  return rows;
}

/** The first route of the table that matches, in table order. */
export function resolveRoute(table: RouteTable, request: S3Request): Resolved {
  const shape = shapeOf(request);
  const label = labelOf(request.method, shape);
  if (shape !== "service") {
    const refusal = preRouteRefusal(table, request);
    if (refusal) return { kind: "refused", error: refusal, label };
  }
  const route = candidates(table, shape, request.method)
    .find((candidate) => matches(candidate, shape, request));
  if (route === undefined) return { kind: "refused", error: methodNotAllowed(request), label };
  if ("refuse" in route) {
    const error = route.refuse === "MethodNotAllowed"
      ? methodNotAllowed(request)
      : notImplemented(route.refuse.notImplemented);
    return { kind: "refused", error, operation: route.operation, label };
  }
  return {
    kind: "route",
    route,
    operation: route.operation,
    action: route.action,
    bucket: request.bucket,
    key: request.key,
    label: route.label,
  };
}

/** Runs a resolved route's handler with the request narrowed to what its shape guarantees. */
export function runRoute(
  route: ServedRoute,
  services: S3Services,
  request: S3Request,
): Promise<Response> {
  switch (route.shape) {
    case "service":
      return route.handle(services, request);
    case "bucket":
      return route.handle(services, request as BucketRequest);
    case "object":
      return route.handle(services, request as ObjectRequest);
  }
}

/** Narrows a request whose path names a bucket (for callers outside the table, e.g. tests). */
export function bucketRequestOf(request: S3Request): BucketRequest {
  if (request.bucket === null) throw new Error("The request names no bucket");
  return request as BucketRequest;
}

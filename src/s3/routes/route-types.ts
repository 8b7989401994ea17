/**
 * The shapes of the S3 route table: what a row declares, what a request resolves to, and the
 * narrowed requests handlers receive. Kept apart from the table and the resolver so that the
 * operation handlers (s3/ops) and the rows that name them can share these types without
 * importing the table they are part of.
 */
import type { SvcError } from "../../lib/mod.ts";
import type { S3Action } from "../access.ts";
import type { S3Request } from "../request.ts";
import type { S3Services } from "./s3-services.ts";
import type { S3OperationLabel } from "../../observability/mod.ts";

export type PathShape = "service" | "bucket" | "object";
export type BucketRequest = S3Request & { readonly bucket: string };
export type ObjectRequest = S3Request & { readonly bucket: string; readonly key: string };

/**
 * The bounded `operation` label of a request (metrics), decided by method and path shape: the
 * label set the metrics define (observability owns it, so the registry needs nothing of s3).
 */
export type OperationLabel = S3OperationLabel;

export interface RouteMatch {
  /** The S3 operation name (AWS's API name). */
  operation: string;
  /** `*`: any method (a refusal row that holds whatever the method). */
  method: string;
  /** Query subresources that must all be present. */
  query?: readonly string[];
  /** Any further condition (a header, a query value, either of two parameters). */
  when?: (request: S3Request) => boolean;
}

/** A route that runs a handler: `action` is what IAM checks on the request's resource. */
export type Served<S extends PathShape, R> = RouteMatch & {
  shape: S;
  /** The metrics label; equal to labelOf(method, shape) (route-table_test.ts checks it). */
  label: OperationLabel;
  action: S3Action;
  handle: (services: S3Services, request: R) => Promise<Response>;
};

/**
 * A row svc refuses: 501 NotImplemented with a message (families left to the admin API, or
 * absent), or 405 MethodNotAllowed (a subresource that takes only some methods).
 */
export type Refused = RouteMatch & {
  shape: PathShape;
  refuse: { notImplemented: string } | "MethodNotAllowed";
};

export type Route =
  | Served<"service", S3Request>
  | Served<"bucket", BucketRequest>
  | Served<"object", ObjectRequest>
  | Refused;

export type ServedRoute = Exclude<Route, Refused>;

/** What a request resolved to: a route to authorize and run, or the error that answers it. */
export type Resolved =
  | {
    kind: "route";
    route: ServedRoute;
    operation: string;
    action: S3Action;
    bucket: string | null;
    key: string | null;
    label: OperationLabel;
  }
  | { kind: "refused"; error: SvcError; operation?: string; label: OperationLabel | undefined };

/** The subresource families refused before any route is looked at, per shape. */
export interface RouteTable {
  routes: readonly Route[];
  unsupported: Record<"bucket" | "object", readonly string[]>;
}

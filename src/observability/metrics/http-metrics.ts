/**
 * The four HTTP metrics (requests, duration, request and response sizes) over S3 and operator
 * requests.
 *
 * Label sets are bounded by construction: `method` is one of GET, PUT, HEAD, DELETE, POST and
 * `operation` one of the 15 documented values. A request outside them (another method, an S3
 * request with no operation label such as `PUT /`, an operator route other than health, stats and
 * metrics) is not measured at all, in none of the four HTTP metrics, so their counts agree. No
 * input of `observeRequest` carries a bucket name or an object key.
 *
 * A HEAD response sends no body: its response size is observed as 0 whatever Content-Length says.
 * An unknown size (`undefined`) is not observed. Duration is up to the response headers; a
 * streamed body is not included.
 */
import { DURATION_BUCKETS, type MetricRegistry, SIZE_BUCKETS } from "./metric-registry.ts";

/** The S3 operation labels; the S3 router's `OperationLabel` is this type. */
export type S3OperationLabel =
  | "list_buckets"
  | "head_root"
  | "list_objects"
  | "create_bucket"
  | "delete_bucket"
  | "head_bucket"
  | "post_bucket"
  | "get_object"
  | "put_object"
  | "delete_object"
  | "head_object"
  | "post_object";

export type OperatorOperation = "health" | "stats" | "metrics";
export type RequestOperation = S3OperationLabel | OperatorOperation;

export interface RequestSample {
  method: string;
  status: number;
  /** undefined: the request has no documented operation and is not measured. */
  operation: RequestOperation | undefined;
  /** Until the response headers were ready. */
  seconds: number;
  /** Request body bytes; undefined when unknown (not observed). */
  requestBytes?: number;
  /** Response body bytes; undefined when unknown (not observed). HEAD always counts 0. */
  responseBytes?: number;
}

export const METHODS = ["GET", "PUT", "HEAD", "DELETE", "POST"] as const;
/** The 15 documented values (metrics_test.ts checks them against the type). */
export const OPERATIONS = ("list_buckets head_root list_objects create_bucket delete_bucket " +
  "head_bucket post_bucket get_object put_object delete_object head_object post_object " +
  "health stats metrics").split(" ") as RequestOperation[];
export const METHOD_NAMES: ReadonlySet<string> = new Set<string>(METHODS);
const OPERATION_NAMES = new Set<string>(OPERATIONS);

const OPERATOR_ROUTES = new Map([["health", "health"], ["stats", "stats"], ["metrics", "metrics"]]);

/** The operation label of an operator route (`/_/health`, `/_/stats`, `/_/metrics`). */
export function operatorOperation(path: string): OperatorOperation | undefined {
  const match = /^\/_\/([a-z]+)\/?$/.exec(path);
  return match ? OPERATOR_ROUTES.get(match[1]) as OperatorOperation : undefined;
}

/** A status code a label may carry. */
export function isHttpStatus(status: number): boolean {
  return Number.isInteger(status) && status >= 100 && status <= 599;
}

/** Registers the family; the answer counts one finished request (false: outside the label sets). */
export function httpMetrics(
  { counter, histogram }: MetricRegistry,
): (sample: RequestSample) => boolean {
  const M = ["method" as const];
  const requests = counter("svc_http_requests_total", "HTTP requests.", [
    ...M,
    "status",
    "operation",
  ]);
  const durationHelp = "Time to response headers.";
  const duration = histogram("svc_http_request_duration_seconds", durationHelp, DURATION_BUCKETS, [
    ...M,
    "operation",
  ]);
  const reqSize = histogram("svc_http_request_size_bytes", "Request body bytes.", SIZE_BUCKETS, M);
  const resSize = histogram(
    "svc_http_response_size_bytes",
    "Response body bytes.",
    SIZE_BUCKETS,
    M,
  );
  return (sample) => {
    const method = sample.method.toUpperCase();
    const { operation, status } = sample;
    if (!METHOD_NAMES.has(method) || !OPERATION_NAMES.has(operation ?? "")) return false;
    if (!isHttpStatus(status)) return false;
    requests.inc({ method, status: String(status), operation: operation! });
    const seconds = Number.isFinite(sample.seconds) ? Math.max(0, sample.seconds) : 0;
    duration.observe({ method, operation }, seconds);
    const size = (value: number | undefined) =>
      value !== undefined && Number.isFinite(value) && value >= 0;
    if (size(sample.requestBytes)) reqSize.observe({ method }, sample.requestBytes!);
    const responseBytes = method === "HEAD" ? 0 : sample.responseBytes;
    if (size(responseBytes)) resSize.observe({ method }, responseBytes!);
    return true;
  };
}

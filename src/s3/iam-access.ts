/**
 * The S3 side of IAM: the access hooks of src/s3/access.ts answered from the current IAM index.
 * Each call reads `holder.current` once, so a request is judged by one snapshot even while an
 * admin change swaps it.
 *
 * - Open access (no principal) and the bootstrap key are allowed everything.
 * - ListBuckets is open to every IAM user and filtered to the buckets they may list in (AWS
 *   answers AccessDenied without s3:ListAllMyBuckets; a filtered list lets every client start).
 * - DeleteObjects is judged key by key (a refused key fails alone), not as a bucket action.
 * - Listings pass the request's `prefix` ("" when absent) as `s3:prefix`, and show only the keys
 *   the user may `list` and `read` (see IamIndex.listVisibility).
 * - `aws:SourceIp` is the client address the request context carries (proxy headers believed
 *   only with `trust_proxy_headers`).
 */
import { BOOTSTRAP_PRINCIPAL, type Decision, type IamIndex, type Principal } from "../iam/mod.ts";
import { accessDenied, type S3Access } from "../s3/access.ts";
import type { S3Request } from "../s3/request.ts";

/** Operations whose `prefix` query parameter is the `s3:prefix` of the request. */
const PREFIXED = new Set([
  "ListObjects",
  "ListObjectsV2",
  "ListObjectVersions",
  "ListMultipartUploads",
]);

/** Service-level reads every IAM user may make (their answers are filtered or empty). */
const SERVICE_LEVEL = new Set(["ListBuckets", "HeadService"]);

function principalOf(request: S3Request): Principal | null {
  return request.auth?.principal ?? null;
}

/** Told of every decision IAM made on a request (metrics); not of bootstrap or open access. */
export type DecisionObserver = (decision: Decision) => void;

export function iamS3Access(
  holder: { readonly current: IamIndex },
  onDecision: DecisionObserver = () => {},
): S3Access {
  return {
    authorize(request, target) {
      const principal = target.principal;
      if (principal === null || principal.name === BOOTSTRAP_PRINCIPAL) return;
      if (SERVICE_LEVEL.has(target.operation)) return;
      // DeleteObjects names its keys in the body: each is judged alone (the batch-key check),
      // so a user limited to a prefix may batch-delete inside it.
      if (target.operation === "DeleteObjects" && target.check === "request") return;
      const decision = holder.current.authorize(principal, {
        action: target.action,
        bucket: target.bucket ?? undefined,
        key: target.key ?? undefined,
        sourceIp: request.clientIp,
        prefix: target.action === "list" && target.key === null
          ? (PREFIXED.has(target.operation) ? request.query.get("prefix") ?? "" : "")
          : undefined,
      });
      onDecision(decision);
      if (!decision.allowed) throw accessDenied(target);
    },
    visibleKeys(request, bucket) {
      const principal = principalOf(request);
      if (principal === null) return undefined;
      return holder.current.listVisibility(principal, {
        bucket,
        prefix: request.query.get("prefix") ?? "",
        sourceIp: request.clientIp,
      });
    },
    visibleBuckets(request) {
      const principal = principalOf(request);
      if (principal === null || principal.name === BOOTSTRAP_PRINCIPAL) return undefined;
      const index = holder.current;
      return (bucket) =>
        index.mayList(principal, { bucket, prefix: "", sourceIp: request.clientIp });
    },
  };
}

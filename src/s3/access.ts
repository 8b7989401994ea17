/**
 * Authorization of S3 requests: the hooks IAM implements (src/iam/, wired by the runtime). Every
 * request is resolved to `{operation, action, bucket, key}` by the route table (routes.ts) and
 * authorized before its handler runs; a few operations touch more than the request's own
 * resource and ask again for each extra resource (the copy source, each key of DeleteObjects,
 * the key a POST form names). Listings ask which keys or buckets the principal may see.
 *
 * The default, ALLOW_ALL, allows whatever authentication let in: the behaviour before IAM.
 */
import type { KeyVisibility, Principal } from "../iam/mod.ts";
import { SvcError } from "../lib/mod.ts";
import type { S3Request } from "./request.ts";

// Part of this port's vocabulary (visibleKeys returns it); IAM defines it, as it computes it.
export type { KeyVisibility };

/** The IAM actions of SPEC.md (`*` in a permission covers all five). */
export type S3Action = "read" | "list" | "write" | "delete" | "admin";

/**
 * Why authorize is asked: the request itself, or a further resource the operation touches.
 * - `request`: every authenticated request, before its handler (key null for bucket-level ones);
 * - `copy-source`: CopyObject / UploadPartCopy, `read` on the source object;
 * - `batch-key`: DeleteObjects, `delete` on each key (a refusal fails that key only);
 * - `form-key`: a POST form upload, `write` on the key its verified policy names, with the
 *   form's signer as principal (unknown before the policy is verified);
 * - `listed-key`: ListParts, `read` on the upload's key (a listing of an object's parts shows
 *   only what the user may read, as listings do).
 */
export type AccessCheck = "request" | "copy-source" | "batch-key" | "form-key" | "listed-key";

export interface AccessTarget {
  /** The S3 operation (routes.ts), e.g. `CopyObject` for a copy-source check too. */
  operation: string;
  action: S3Action;
  /** Null only for service-level operations (ListBuckets). */
  bucket: string | null;
  /** Null for bucket-level operations. */
  key: string | null;
  check: AccessCheck;
  /** Who acts: the authenticated principal, or a form's signer (null: open access). */
  principal: Principal | null;
}

export interface S3Access {
  /** Throws SvcError AccessDenied (see accessDenied) to refuse. */
  authorize(request: S3Request, target: AccessTarget): void;
  /** ListObjects / ListObjectsV2 / ListMultipartUploads: undefined shows every key (no cost). */
  visibleKeys(request: S3Request, bucket: string): KeyVisibility | undefined;
  /** ListBuckets: undefined shows every bucket. */
  visibleBuckets(request: S3Request): ((bucket: string) => boolean) | undefined;
}

/** The behaviour before IAM: authentication decided everything. */
export const ALLOW_ALL: S3Access = {
  authorize() {},
  visibleKeys: () => undefined,
  visibleBuckets: () => undefined,
};

/** The S3 error an authorize hook throws; the message names the action, never a policy. */
export function accessDenied(target: Pick<AccessTarget, "action" | "bucket" | "key">): SvcError {
  const resource = target.bucket === null
    ? "the service"
    : target.key === null
    ? `bucket "${target.bucket}"`
    : `"${target.bucket}/${target.key}"`;
  return new SvcError(
    "AccessDenied",
    `Access Denied: no ${target.action} permission on ${resource}`,
  );
}

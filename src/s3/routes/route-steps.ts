/**
 * Steps the route rows share: the write gate, the extra authorize checks (access.ts), the
 * size estimates a quota check needs, and the request predicates that tell rows apart.
 */
import type { ObjectService } from "../../objects/mod.ts";
import type { AccessTarget } from "../access.ts";
import * as objectOps from "../ops/object-ops.ts";
import type { S3Request } from "../request.ts";
import type { BucketRequest, ObjectRequest } from "./route-types.ts";
import type { S3Services } from "./s3-services.ts";
import { declaredLength, gateWrite, type WriteIntent } from "../write-gate.ts";

export const hasCopySource = (request: S3Request) => request.headers.has("x-amz-copy-source");
export const isPart = (request: S3Request) =>
  request.query.has("uploadId") || request.query.has("partNumber");
export const isFormData = (request: S3Request) =>
  (request.headers.get("content-type") ?? "").toLowerCase().startsWith("multipart/form-data");

/** Runs the write gate for this request's bucket (and key, for object writes). */
export function gate(
  services: S3Services,
  request: BucketRequest,
  kind: WriteIntent["kind"],
  declaredBytes?: WriteIntent["declaredBytes"],
): Promise<void> {
  return gateWrite(services, {
    kind,
    bucket: request.bucket,
    ...(request.key !== null ? { key: request.key } : {}),
    ...(declaredBytes ? { declaredBytes } : {}),
  });
}

export const declared = (request: S3Request) => () =>
  Promise.resolve(declaredLength(request.headers));

/** Asks the access hooks about one more resource of the request (see access.ts AccessCheck). */
export function authorizeAlso(
  services: S3Services,
  request: S3Request,
  target: Omit<AccessTarget, "principal">,
  principal = request.auth?.principal ?? null,
): void {
  // An anonymous request was admitted by a public prefix (admission), not by IAM.
  if (request.anonymous) return;
  services.access?.authorize(request, { ...target, principal });
}

/** The size of the copy source, for the quota check of a copy; undefined when unknown. */
export async function copySourceSize(objects: ObjectService, request: S3Request) {
  try {
    const source = objectOps.parseCopySource(request.headers.get("x-amz-copy-source")!);
    return (await objects.head(source.bucket, source.key)).meta.size;
  } catch {
    return undefined; // the copy itself reports a bad or missing source
  }
}

/** The total of an upload's stored parts, for the quota check of its completion. */
export async function uploadedBytes(services: S3Services, request: ObjectRequest) {
  try {
    const uploadId = request.query.get("uploadId") ?? "";
    const { parts } = await services.multipart.listParts(request.bucket, request.key, uploadId);
    return parts.reduce((sum, part) => sum + part.size, 0);
  } catch {
    return undefined; // the completion itself reports a missing upload
  }
}

export const copySourceCheck =
  (services: S3Services, request: S3Request, operation: string) =>
  (source: { bucket: string; key: string }) =>
    authorizeAlso(services, request, {
      operation,
      action: "read",
      bucket: source.bucket,
      key: source.key,
      check: "copy-source",
    });

/** A listing's filter: none for anonymous readers (their public prefixes narrow it instead). */
export function visibleKeysOf(services: S3Services, request: BucketRequest) {
  if (request.anonymous) return undefined;
  return services.access?.visibleKeys(request, request.bucket);
}

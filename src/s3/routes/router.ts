/**
 * S3 dispatch: the services every handler uses, and the step that resolves a request through
 * the route table (route-table.ts, routes.ts), authorizes it and runs its handler.
 */
import type { AdmissionChain } from "../../admission/build.ts";
import type { CredentialStore } from "../../iam/credentials.ts";
import type { MultipartService } from "../../objects/multipart/multipart-service.ts";
import type { ObjectService } from "../../objects/object-service.ts";
import type { UsageCounter } from "../../objects/usage/usage.ts";
import type { S3Access } from "../access.ts";
import type { EffectiveBucketPolicy } from "../bucket-policy.ts";
import type { S3Request } from "../request.ts";
import type { BucketWriteGate } from "../write-gate.ts";
import { S3_ROUTES } from "./route-table.ts";
import { type OperationLabel, type Resolved, resolveRoute, runRoute } from "./routes.ts";

export type { OperationLabel } from "./routes.ts";

export interface S3Services {
  objects: ObjectService;
  multipart: MultipartService;
  /** The current credential store (POST policy uploads verify against it). */
  credentials: () => CredentialStore;
  /** The admission chain of the current config snapshot (evaluated before authentication). */
  admission: () => AdmissionChain;
  /** A bucket's policy in the current config snapshot (public prefixes, quota, target-only). */
  bucketPolicy: (bucket: string) => EffectiveBucketPolicy;
  /** Per-bucket usage, for quotas. */
  usage: UsageCounter;
  /** Authorization hooks (IAM); absent means ALLOW_ALL: authentication decides everything. */
  access?: S3Access;
  /** Buckets held by maintenance jobs (writes 503) and writes in flight per bucket. */
  maintenanceGate?: BucketWriteGate;
}

/** Resolves a request against svc's route table (pure: no I/O, no authentication needed). */
export function resolveS3(request: S3Request): Resolved {
  return resolveRoute(S3_ROUTES, request);
}

export function operationLabel(request: S3Request): OperationLabel | undefined {
  return resolveS3(request).label;
}

/**
 * The authorize step: after authentication, before dispatch. Refusals carry no action (they
 * answer NotImplemented / MethodNotAllowed whoever asks). Requests admitted anonymously by a
 * public prefix were authorized by admission; a POST form is authorized once its policy is
 * verified and its signer known (the `form-key` check in route-table.ts).
 */
export function authorizeRequest(services: S3Services, request: S3Request, resolved: Resolved) {
  if (resolved.kind === "refused" || request.anonymous || request.auth?.formPost) return;
  services.access?.authorize(request, {
    operation: resolved.operation,
    action: resolved.action,
    bucket: resolved.bucket,
    key: resolved.key,
    check: "request",
    principal: request.auth?.principal ?? null,
  });
}

/** Runs the resolved request's handler, or throws its refusal where the old switch did. */
export async function dispatchS3(
  services: S3Services,
  request: S3Request,
  resolved: Resolved = resolveS3(request),
): Promise<Response> {
  if (resolved.kind === "refused") throw resolved.error;
  return await runRoute(resolved.route, services, request);
}

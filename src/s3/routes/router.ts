/**
 * S3 dispatch: the step that resolves a request through the route table (route-table.ts,
 * routes.ts), authorizes it and runs its handler. The services it passes are in s3-services.ts.
 */
import type { S3Request } from "../request.ts";
import { S3_ROUTES } from "./route-table.ts";
import { resolveRoute, runRoute } from "./routes.ts";
import type { OperationLabel, Resolved } from "./route-types.ts";
import type { S3Services } from "./s3-services.ts";

export type { OperationLabel } from "./route-types.ts";

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

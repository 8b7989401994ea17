/**
 * The S3 request: the shared request context (src/http/request-context.ts) plus the outcome of
 * admission and authentication, and S3's query-parameter helpers.
 */
import type { AuthOutcome, ReplayDecision } from "../auth/mod.ts";
import { SvcError } from "../lib/mod.ts";
import { parseRequestContext, type RequestContext } from "../http/mod.ts";
import type { WriteContext, WriteOperation } from "../objects/mod.ts";

export { splitRawUrl } from "../http/mod.ts";

/** How an unsigned request was let in (decided by admission.ts, carried on the request). */
export interface AnonymousAdmission {
  /** The block that admitted it. */
  block: string;
  /** Set when the block admits only these key prefixes: listings are filtered to them. */
  publicPrefixes?: readonly string[];
}

/** The shared request context plus what authentication and admission decided. */
export interface S3Request extends RequestContext {
  /** Who signed the request; set by the handler before dispatch. */
  auth?: AuthOutcome;
  /**
   * What replay detection decided for this run (a repeated upload's body comparison); set by the
   * S3 handler before dispatch, absent when the request runs outside replay detection.
   */
  replay?: ReplayDecision;
  /** Set when the admission chain let the request in without authentication. */
  anonymous?: AnonymousAdmission;
  /**
   * Browser POST forms only: takes the request's concurrency slot, called once the policy is
   * verified (reading the fields holds no slot). Set by the S3 handler.
   */
  takeSlot?: () => Promise<void>;
  /** The client address (proxy headers believed only when trusted); set by the S3 handler. */
  clientIp?: string;
}

/** Who made this write and through which request, for the object service's observers. */
export function writeContextOf(request: S3Request, operation: WriteOperation): WriteContext {
  return {
    operation,
    principal: request.auth?.principal?.name ?? null,
    sourceIp: request.clientIp ?? null,
    requestId: request.requestId,
  };
}

export function parseS3Request(raw: Request, requestId: string, signal: AbortSignal): S3Request {
  return parseRequestContext(raw, requestId, signal);
}

/** Integer query parameter within bounds; absent → fallback; junk → InvalidArgument. */
export function intParam(
  query: URLSearchParams,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = query.get(name);
  if (raw === null || raw === "") return fallback;
  const value = Number(raw);
  if (!/^-?\d+$/.test(raw.trim()) || !Number.isSafeInteger(value) || value < min) {
    throw new SvcError(
      "InvalidArgument",
      `Argument ${name} must be an integer between ${min} and ${max}, got "${raw}"`,
      {
        ArgumentName: name,
        ArgumentValue: raw,
      },
    );
  }
  return Math.min(value, max);
}

/**
 * The one error type of the admin API and its one JSON shape. Every `/_/api` error answers
 *
 *     {"error": "<snake_case code>", "message": "<sentence for a human>", ...details}
 *
 * with the status the code implies. `error` is stable (clients branch on it); `message` may change
 * wording; details are extra fields a code documents (for example `retry_after_secs`). A JobsError
 * (the jobs' own refusal) answers the same way by its code. A full disk (ENOSPC, EDQUOT,
 * SQLITE_FULL) is a 507 `insufficient_storage`. Anything else thrown is a 500 `internal` whose
 * message hides the cause (logged).
 */
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { ConfigError } from "../config/mod.ts";
import { isNoSpaceError, jsonDepthOver, MAX_JSON_DEPTH, SvcError } from "../lib/mod.ts";
import { readBounded } from "../http/mod.ts";
import { getLogger } from "../observability/mod.ts";
import { JobsError } from "../jobs/mod.ts";

const log = getLogger("svc::admin");

function messageOf(err: unknown): string {
  return (err as Error)?.message ?? String(err);
}

/** Codes and their statuses; add a row before using a new code. */
export const ADMIN_ERROR_STATUS = {
  bad_request: 400,
  invalid_config: 422,
  unauthorized: 401,
  forbidden: 403,
  cross_site: 403,
  iam_declarative: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  too_many_requests: 429,
  internal: 500,
  persist_failed: 500,
  bad_gateway: 502,
  unavailable: 503,
  insufficient_storage: 507,
} as const satisfies Record<string, ContentfulStatusCode>;

export type AdminErrorCode = keyof typeof ADMIN_ERROR_STATUS;

export class AdminError extends Error {
  readonly code: AdminErrorCode;
  readonly details: Record<string, unknown>;
  constructor(code: AdminErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = "AdminError";
    this.code = code;
    this.details = details;
  }
  get status(): ContentfulStatusCode {
    return ADMIN_ERROR_STATUS[this.code];
  }
}

/** The JSON body and status for anything thrown inside an admin route. */
export function adminErrorBody(err: unknown): {
  status: ContentfulStatusCode;
  body: Record<string, unknown>;
} {
  if (err instanceof AdminError) {
    return {
      status: err.status,
      body: { ...err.details, error: err.code, message: err.message },
    };
  }
  // A job refusal: jobs raise their own error, with a code that is also one of ours.
  if (err instanceof JobsError) {
    const code: AdminErrorCode = err.code;
    return { status: ADMIN_ERROR_STATUS[code], body: { error: code, message: err.message } };
  }
  // Validation of a config document: the message names the field and value, and is safe to show.
  if (err instanceof ConfigError) {
    return { status: 422, body: { error: "invalid_config", message: err.message } };
  }
  // A full disk (objects or the config database): a clear answer, not an internal error.
  if (isNoSpaceError(err)) {
    log.error("admin request failed: the disk is full", { error: messageOf(err) });
    return {
      status: 507,
      body: {
        error: "insufficient_storage",
        message: "Insufficient storage: the server's disk is full (or over its quota); the " +
          "request did not complete. Retrying will fail until space is freed.",
      },
    };
  }
  log.error("admin request failed", { error: messageOf(err) });
  return {
    status: 500,
    body: { error: "internal", message: "Internal error; see the server log" },
  };
}

/** Hono `onError` handler rendering the shape above. */
export function renderAdminError(err: unknown, c: Context): Response {
  const { status, body } = adminErrorBody(err);
  const response = c.json(body, status);
  if (err instanceof AdminError && typeof err.details.retry_after_secs === "number") {
    response.headers.set("retry-after", String(err.details.retry_after_secs));
  }
  return response;
}

/**
 * Reads a JSON object body or throws bad_request (never a 500 for a client's typo). The body is
 * read bounded, so a chunked body without Content-Length cannot grow past `maxBytes` in memory,
 * and its nesting is bounded (`MAX_JSON_DEPTH`) before it is parsed: the routes walk bodies
 * recursively (merge patch, validation), and a body nested 150,000 deep overflowed the stack (500).
 */
export async function jsonBody(c: Context, maxBytes = 1 << 20): Promise<Record<string, unknown>> {
  const length = Number(c.req.header("content-length") ?? "0");
  if (length > maxBytes) {
    throw new AdminError("payload_too_large", `Body of ${length} bytes exceeds ${maxBytes}`);
  }
  let text = "";
  if (c.req.raw.body !== null) {
    try {
      text = new TextDecoder().decode(await readBounded(c.req.raw.body, maxBytes));
    } catch (err) {
      if (err instanceof SvcError) {
        throw new AdminError("payload_too_large", `Body exceeds ${maxBytes} bytes`);
      }
      throw err;
    }
  }
  if (jsonDepthOver(text, MAX_JSON_DEPTH) > 0) {
    throw new AdminError(
      "bad_request",
      `Body nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`,
      { max_depth: MAX_JSON_DEPTH },
    );
  }
  let parsed: unknown;
  try {
    parsed = text.trim() === "" ? {} : JSON.parse(text);
  } catch (err) {
    throw new AdminError("bad_request", `Body is not valid JSON: ${(err as Error).message}`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new AdminError("bad_request", "Body must be a JSON object");
  }
  return parsed as Record<string, unknown>;
}

/**
 * The S3 entry point: request id, concurrency queue, deadline, dispatch, and one place where any
 * failure becomes an S3 error document. The server stays up whatever a request throws.
 */
import { type Authenticator, clientIp } from "../auth/mod.ts";
import type { Principal } from "../iam/mod.ts";
import { isNoSpaceError, type Semaphore, SvcError } from "../lib/mod.ts";
import { watchForStalls } from "../http/mod.ts";
import { getLogger, noteAccess, requestBytesOf, responseBytesOf } from "../observability/mod.ts";
import { admit } from "./admission.ts";
import { parseS3Request, type S3Request, splitRawUrl } from "./request.ts";
import { DEBUG_HEADERS, errorResponse } from "./response.ts";
import { authorizeRequest, dispatchS3, type OperationLabel, resolveS3 } from "./routes/router.ts";
import type { S3Services } from "./routes/s3-services.ts";

const log = getLogger("svc::s3");

export interface S3HandlerOptions {
  services: S3Services;
  authenticator: Authenticator;
  semaphore: Semaphore;
  /** Read per request so a config reload applies to the next request. */
  requestTimeoutMs: () => number;
  /** `body_stall_timeout_secs`: a body with no byte for this long is cut. */
  bodyStallMs?: () => number;
  /** `header_timeout_secs`: a browser POST form must deliver its fields within this. */
  formFieldsMs?: () => number;
  /** `debug_headers`: keep `x-amz-storage-type` and `x-svc-cache` on responses. */
  debugHeaders?: () => boolean;
  /** Whether X-Forwarded-For / X-Real-IP name the client (`advanced.trust_proxy_headers`). */
  trustProxyHeaders?: () => boolean;
  /** Told about every request once its response headers are ready (metrics). */
  onComplete?: (sample: RequestSample) => void;
}

export interface RequestSample {
  method: string;
  status: number;
  operation: OperationLabel | undefined;
  /** Until the response headers were ready; a streamed body is not included. */
  seconds: number;
  requestBytes?: number;
  responseBytes?: number;
}

/**
 * Request ids: a random 32-bit process prefix and a counter, 16 hex digits as S3's. Unique
 * within the process and unlikely to repeat across restarts; an id is a label for logs and
 * support, not a secret, so it needs no fresh randomness per request (which cost ~10 µs).
 */
const requestIdPrefix = crypto.getRandomValues(new Uint32Array(1))[0].toString(16)
  .padStart(8, "0").toUpperCase();
let requestCounter = crypto.getRandomValues(new Uint32Array(1))[0];

export function newRequestId(): string {
  requestCounter = (requestCounter + 1) >>> 0;
  return requestIdPrefix + requestCounter.toString(16).padStart(8, "0").toUpperCase();
}

function resourceOf(url: string): string {
  const { path } = splitRawUrl(url);
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** Resolves with `work` or rejects with the deadline's reason once it has passed. */
function withDeadline<T>(work: Promise<T>, deadline: AbortSignal): Promise<T> {
  if (deadline.aborted) return Promise.reject(deadline.reason);
  work.catch(() => {}); // the loser of the race must not surface as an unhandled rejection
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(deadline.reason);
    deadline.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => deadline.removeEventListener("abort", onAbort));
  });
}

/**
 * Who an in-process request acts as (the admin browse helpers): it skips admission and SigV4 —
 * the caller's session already authenticated the user — and is authorized, gated and executed
 * like any S3 request of that principal (null: open access).
 */
export interface ActingAs {
  principal: Principal | null;
}

export type S3Handler = (
  raw: Request,
  remoteAddress?: string,
  acting?: ActingAs,
) => Promise<Response>;

/**
 * The request's concurrency slot, taken at most once and released only if taken: a browser POST
 * form takes it late (after its policy is verified), every other request before dispatch.
 */
class Slot {
  #held = false;
  constructor(private readonly semaphore: Semaphore, private readonly signal: AbortSignal) {}
  async take(): Promise<void> {
    if (this.#held) return;
    await this.semaphore.acquire(this.signal);
    this.#held = true;
  }
  release(): void {
    if (!this.#held) return;
    this.#held = false;
    this.semaphore.release();
  }
}

/** The shape the router sends to PostObject: its fields are read before it takes a slot. */
function isFormUpload(request: S3Request): boolean {
  return request.method === "POST" && request.bucket !== null && request.key === null &&
    !request.query.has("delete") &&
    (request.headers.get("content-type") ?? "").toLowerCase().startsWith("multipart/form-data");
}

/** A request that may change a bucket's objects (every method but GET, HEAD and OPTIONS). */
function isMutation(request: S3Request): boolean {
  const method = request.method.toUpperCase();
  return request.bucket !== null && method !== "GET" && method !== "HEAD" && method !== "OPTIONS";
}

/** The same request with its body cut when it stalls (see http/stall-watch.ts). */
function withStallWatch(raw: Request, stallMs: number, deadline: AbortController): Request {
  if (raw.body === null || !(stallMs > 0)) return raw;
  const seconds = stallMs / 1000;
  const body = watchForStalls(
    raw.body,
    stallMs,
    () =>
      new SvcError(
        "RequestTimeout",
        `Your socket connection to the server was not read from or written to within the timeout period: no byte of the request body arrived for ${seconds} seconds`,
      ),
    (reason) => deadline.abort(reason),
  );
  return new Request(raw, { body, duplex: "half" } as RequestInit);
}

export function createS3Handler(options: S3HandlerOptions): S3Handler {
  return async (raw, remoteAddress, acting) => {
    const started = performance.now();
    let operation: OperationLabel | undefined;
    const requestId = newRequestId();
    const deadline = new AbortController();
    const timeoutMs = options.requestTimeoutMs();
    const timer = setTimeout(() => {
      deadline.abort(
        new SvcError(
          "RequestTimeout",
          `The request did not complete within ${timeoutMs / 1000} seconds`,
        ),
      );
    }, timeoutMs);
    const signal = AbortSignal.any([raw.signal, deadline.signal]);
    const slot = new Slot(options.semaphore, signal);
    let fieldsTimer: ReturnType<typeof setTimeout> | undefined;
    let response: Response;
    let parsed: S3Request | undefined;
    let apiName: string | undefined; // AWS's operation name, for the access log
    try {
      const watched = withStallWatch(raw, options.bodyStallMs?.() ?? 0, deadline);
      const request = parseS3Request(watched, requestId, signal);
      parsed = request;
      request.clientIp = clientIp(
        request.headers,
        remoteAddress,
        options.trustProxyHeaders?.() ?? false,
      );
      // Resolved before anything runs: the metrics label, then the authorize step, need it.
      const resolved = resolveS3(request);
      operation = resolved.label;
      apiName = resolved.operation;
      const fieldsMs = options.formFieldsMs?.() ?? 0;
      if (isFormUpload(request) && fieldsMs > 0) {
        // A stranger may send a form: reading its fields holds no slot, and must end quickly.
        fieldsTimer = setTimeout(() => {
          deadline.abort(
            new SvcError(
              "RequestTimeout",
              `The fields of the POST form did not arrive within ${fieldsMs / 1000} seconds`,
            ),
          );
        }, fieldsMs);
        request.takeSlot = async () => {
          clearTimeout(fieldsTimer);
          await slot.take();
        };
      } else {
        // The signal covers the deadline: a request that waits too long leaves the queue (504).
        await slot.take();
      }
      try {
        // Admission runs first: an anonymous reader of a public prefix never meets the
        // authenticator, and a denied request is refused before its signature is checked.
        const anonymous = acting
          ? null
          : admit(options.services.admission(), request, remoteAddress);
        if (acting) {
          request.auth = { principal: acting.principal };
        } else if (anonymous !== null) {
          request.anonymous = anonymous;
          request.auth = { principal: null };
        } else {
          request.auth = options.authenticator.authenticate(request, remoteAddress);
        }
        authorizeRequest(options.services, request, resolved);
        try {
          // Replay detection wraps the operation itself (not the deadline race): a repeat waits
          // for, and is answered by, what the first execution really did.
          // A mutating request counts as in flight on its bucket until its work settles (past a
          // deadline too): a maintenance job drains these before it reads the bucket.
          const fenced = request.bucket && options.services.maintenanceGate?.fenced(request.bucket);
          if (fenced) {
            throw new SvcError("ServiceUnavailable", fenced, { BucketName: request.bucket! });
          }
          const leave = isMutation(request)
            ? options.services.maintenanceGate?.enter(request.bucket!)
            : undefined;
          let work: Promise<Response>;
          try {
            work = options.authenticator.execute(
              request,
              request.auth.verified,
              remoteAddress,
              (decision) => {
                request.replay = decision;
                return dispatchS3(options.services, request, resolved);
              },
            );
          } catch (err) {
            leave?.();
            throw err;
          }
          if (leave) work.then(leave, leave);
          response = await withDeadline(work, deadline.signal);
        } catch (err) {
          // A forged chunk signature or POST policy signature surfaces only while the body is
          // read; it counts toward the lockout like any other bad signature.
          options.authenticator.recordLateFailure(err, request, remoteAddress);
          throw err;
        }
      } finally {
        slot.release();
      }
    } catch (err) {
      // A full disk is logged once a minute by errorResponse, not per request.
      if (!(err instanceof SvcError) && !isNoSpaceError(err)) {
        log.error("request failed", {
          requestId,
          method: raw.method,
          error: err instanceof Error ? err.stack ?? err.message : String(err),
        });
      }
      response = errorResponse(err, resourceOf(raw.url), requestId);
    } finally {
      clearTimeout(timer);
      clearTimeout(fieldsTimer);
    }
    if (raw.method === "HEAD") {
      // A HEAD answer carries the headers of the GET it mirrors but never a body.
      response = new Response(null, { status: response.status, headers: response.headers });
    }
    // For the access log: read before the debug headers go (the storage decision is one).
    noteAccess(raw, {
      requestId,
      operation: apiName,
      principal: parsed?.auth?.principal?.name ?? null,
      bucket: parsed?.bucket ?? null,
      key: parsed?.key ?? null,
      storage: response.headers.get("x-amz-storage-type") ?? undefined,
    });
    // The admin plane's own requests (acting) keep them: the browse panel shows storage kinds.
    if (!acting && !options.debugHeaders?.()) {
      for (const name of DEBUG_HEADERS) response.headers.delete(name);
    }
    response.headers.set("x-amz-request-id", requestId);
    response.headers.set("x-amz-id-2", requestId);
    options.onComplete?.({
      method: raw.method.toUpperCase(),
      status: response.status,
      operation,
      seconds: (performance.now() - started) / 1000,
      requestBytes: requestBytesOf(raw),
      responseBytes: responseBytesOf(response, raw.method),
    });
    return response;
  };
}

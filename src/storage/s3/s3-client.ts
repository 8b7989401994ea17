/**
 * Signed requests to one S3-compatible backend, with retries.
 *
 * Signing is aws4fetch's AwsV4Signer with the configured credentials only. No request carries
 * `x-amz-checksum-*` or `x-amz-sdk-checksum-algorithm`: cheap S3 providers reject the SDKs'
 * default CRC headers, and our bodies are verified by svc itself. Text bodies are signed with
 * their real sha256, file bodies with UNSIGNED-PAYLOAD (hashing a spool file again before
 * sending it would double the work for no protection TLS does not already give).
 *
 * Retries: up to `maxAttempts` attempts, exponential backoff with full jitter. A throttling
 * answer (503, 429, SlowDown…) means the backend did nothing, so any request is repeated; a
 * network error, timeout or 500/502/504 leaves the outcome unknown, so only requests marked
 * idempotent are. A streamed GET is retried only until its headers arrive: once the body has
 * started, a failure reaches the consumer as a stream error.
 */
import { AwsV4Signer } from "aws4fetch";
import type { S3BackendOptions } from "./s3-options.ts";
import { encodeKeyPath, encodeQuery } from "./s3-keys.ts";
import {
  BackendError,
  BackendUnavailableError,
  isThrottling,
  isTransientStatus,
} from "./s3-errors.ts";
import { parseErrorDocument } from "./s3-xml.ts";
import { BackendLiveness } from "./s3-liveness.ts";
import {
  BackendTimeoutError,
  fetchAttempt,
  fileBodyAttempt,
  type FileSlice,
  type RawResponse,
  type Timeouts,
} from "./s3-transport.ts";

export interface S3Request {
  method: "GET" | "HEAD" | "PUT" | "POST" | "DELETE";
  bucket?: string;
  key?: string;
  query?: Record<string, string | undefined>;
  headers?: Record<string, string>;
  body?: string | FileSlice;
  /** Whether sending it again is harmless when the first outcome is unknown. */
  idempotent: boolean;
  /** Hand the response body over as a stream instead of reading it. */
  stream?: boolean;
  signal?: AbortSignal;
}

/** Bucket names that are a single, plain URL segment (S3 rules, plus legacy upper case/_). */
export const ADDRESSABLE_BUCKET = /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/;

const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const DEFAULT_ATTEMPTS = 3;
const DEFAULT_RETRY_BASE_MS = 200;
const MAX_BACKOFF_MS = 5000;

export class S3Client {
  private readonly timeouts: Timeouts;
  private readonly signingCache = new Map<string, ArrayBuffer>();
  private readonly endpoint: URL;
  /** Whether the backend seems frozen: then attempts probe it briefly (s3-liveness.ts). */
  private readonly liveness: BackendLiveness;

  constructor(private readonly options: S3BackendOptions) {
    this.endpoint = new URL(options.endpoint);
    this.liveness = new BackendLiveness(options.connectTimeoutMs);
    this.timeouts = {
      connectMs: options.connectTimeoutMs,
      readMs: options.readTimeoutMs,
      attemptMs: options.attemptTimeoutMs,
      stallGraceMs: options.stallGraceMs,
    };
  }

  /** The URL of a bucket or object, path-style or virtual-host style. */
  url(bucket?: string, key?: string, query?: Record<string, string | undefined>): string {
    // A bucket that is not one URL segment (`..`, `a/b`, `%2e%2e` decoded) would let the URL
    // parser resolve the path to another bucket: it never leaves this process.
    if (bucket !== undefined && !ADDRESSABLE_BUCKET.test(bucket)) {
      throw new RangeError(`Bucket name "${bucket}" cannot be addressed on an S3 backend`);
    }
    const { protocol, host } = this.endpoint;
    const keyPath = key === undefined ? "" : `/${encodeKeyPath(key)}`;
    let base: string;
    if (bucket === undefined) base = `${protocol}//${host}/`;
    else if (this.options.forcePathStyle) base = `${protocol}//${host}/${bucket}${keyPath}`;
    else base = `${protocol}//${bucket}.${host}${keyPath || "/"}`;
    const search = query ? encodeQuery(query) : "";
    return search ? `${base}?${search}` : base;
  }

  /**
   * Sends the request, retrying as the file header says. Resolves with a 2xx response; throws
   * BackendError for any other status and BackendUnavailableError when no answer came.
   */
  async send(request: S3Request): Promise<RawResponse> {
    const maxAttempts = this.options.maxAttempts ?? DEFAULT_ATTEMPTS;
    const operation = describe(request);
    for (let attempt = 1;; attempt++) {
      let failure: Error;
      let retryable: boolean;
      try {
        const response = await this.attempt(request);
        if (response.status >= 200 && response.status < 300) return response;
        const text = response.body ? await new Response(response.body).text() : response.text;
        const doc = parseErrorDocument(text);
        const code = doc?.code ?? response.headers.get("x-amz-error-code") ?? "";
        const message = doc?.message ?? response.headers.get("x-amz-error-message") ?? "";
        retryable = isThrottling(response.status, code) ||
          (request.idempotent && isTransientStatus(response.status, code));
        failure = new BackendError(response.status, code, message, operation, retryable);
      } catch (err) {
        if (request.signal?.aborted) throw request.signal.reason;
        // A timeout while the backend answers nothing at all would only wait again: 503 now.
        retryable = request.idempotent &&
          !(err instanceof BackendTimeoutError && this.liveness.suspected());
        const what = err instanceof BackendTimeoutError
          ? err.message
          : `Backend unreachable: ${err instanceof Error ? err.message : String(err)}`;
        failure = new BackendUnavailableError(what, operation, { cause: err });
      }
      if (!retryable || attempt >= maxAttempts) throw failure;
      await sleep(this.backoffMs(attempt), request.signal);
    }
  }

  private backoffMs(attempt: number): number {
    const base = this.options.retryBaseMs ?? DEFAULT_RETRY_BASE_MS;
    return Math.random() * Math.min(MAX_BACKOFF_MS, base * 2 ** (attempt - 1));
  }

  private async attempt(request: S3Request): Promise<RawResponse> {
    const url = this.url(request.bucket, request.key, request.query);
    const headers = new Headers(request.headers);
    // Signed and unique per attempt, as the AWS SDKs send it: two identical requests in one
    // second are then two requests, not a replay, to a backend with replay detection (svc).
    headers.set("amz-sdk-invocation-id", crypto.randomUUID());
    const body = request.body;
    if (typeof body === "object") {
      headers.set("content-length", String(body.length));
      headers.set("x-amz-content-sha256", "UNSIGNED-PAYLOAD");
    } else {
      headers.set("x-amz-content-sha256", body ? await sha256Hex(body) : EMPTY_SHA256);
    }
    const signed = await new AwsV4Signer({
      method: request.method,
      url,
      headers,
      accessKeyId: this.options.accessKeyId,
      secretAccessKey: this.options.secretAccessKey,
      service: "s3",
      region: this.options.region,
      cache: this.signingCache,
    }).sign();
    const init = { method: request.method, headers: signed.headers };
    if (typeof body === "object") {
      return fileBodyAttempt(url, init, body, this.timeouts, request.signal, this.liveness);
    }
    return fetchAttempt(
      url,
      { ...init, body },
      this.timeouts,
      !!request.stream,
      request.signal,
      this.liveness,
    );
  }
}

function describe(request: S3Request): string {
  const target = [request.bucket, request.key].filter((p) => p !== undefined).join("/");
  const sub = Object.keys(request.query ?? {}).filter((k) => k !== "list-type")[0];
  return `${request.method} ${target ? `"${target}"` : "/"}${sub ? ` ?${sub}` : ""}`;
}

async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const id = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(id);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

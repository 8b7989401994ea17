/**
 * The one HTTP client of `svc admin`: requests under `/_/api/admin` with the session cookie, and
 * the mapping of what went wrong to an exit code and one line: the server cannot be reached (4),
 * the session is missing or expired (401: 3), anything else the server refuses (1), with the
 * API's `{error, message}` shown as `message (HTTP status error)`.
 */
import { ADMIN_EXIT, AdminCliError } from "./exit-codes.ts";

export const ADMIN_PREFIX = "/_/api/admin";
/** How long a JSON request may take; streams (backup) have no limit. */
const REQUEST_TIMEOUT_MS = 60_000;

export type Json = Record<string, unknown>;

export interface SendOptions {
  json?: unknown;
  body?: BodyInit;
  headers?: Record<string, string>;
  query?: Record<string, string | undefined>;
  /** No timeout: the body is a stream that may take long. */
  stream?: boolean;
}

/** The `{error, message}` of an error body as one line. */
export function apiErrorLine(status: number, text: string): string {
  let body: Json = {};
  try {
    const parsed = JSON.parse(text);
    if (parsed && typeof parsed === "object") body = parsed;
  } catch { /* not JSON: the text itself, cut short */ }
  const message = typeof body.message === "string"
    ? body.message
    : text.trim().slice(0, 200) || "(no message)";
  const code = typeof body.error === "string" ? ` ${body.error}` : "";
  const retry = typeof body.retry_after_secs === "number"
    ? `; retry in ${body.retry_after_secs} s`
    : "";
  return `${message} (HTTP ${status}${code})${retry}`;
}

export class AdminHttp {
  constructor(readonly server: URL, readonly cookie?: string) {}

  url(path: string, query: Record<string, string | undefined> = {}): URL {
    const base = this.server.pathname.replace(/\/+$/, "");
    const full = path.startsWith("/_/") ? path : `${ADMIN_PREFIX}${path}`;
    const url = new URL(`${base}${full}`, this.server);
    for (const [name, value] of Object.entries(query)) {
      if (value !== undefined) url.searchParams.set(name, value);
    }
    return url;
  }

  /** Sends one request; only an unreachable server throws (exit 4). */
  async send(method: string, path: string, options: SendOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { ...options.headers };
    if (this.cookie) headers.cookie = this.cookie;
    let body = options.body;
    if (options.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(options.json);
    }
    try {
      return await fetch(this.url(path, options.query), {
        method,
        headers,
        body,
        redirect: "manual",
        signal: options.stream ? undefined : AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (err) {
      throw new AdminCliError(
        ADMIN_EXIT.unreachable,
        `Cannot reach the server at ${this.server.origin}: ${(err as Error).message}`,
      );
    }
  }

  /** Throws the response's error (exit 3 for 401, else 1) unless it is a 2xx. */
  async check(response: Response, what: string): Promise<Response> {
    if (response.ok) return response;
    const line = apiErrorLine(response.status, await response.text());
    if (response.status === 401) {
      throw new AdminCliError(
        ADMIN_EXIT.auth,
        `${what}: ${line}; not logged in or the session expired: run svc admin login`,
      );
    }
    throw new AdminCliError(ADMIN_EXIT.failed, `${what} failed: ${line}`);
  }

  /** Sends, checks and parses a JSON answer. */
  async json<T = Json>(method: string, path: string, options: SendOptions = {}): Promise<T> {
    const response = await this.check(
      await this.send(method, path, options),
      `${method} ${path}`,
    );
    const text = await response.text();
    try {
      return (text === "" ? {} : JSON.parse(text)) as T;
    } catch {
      throw new AdminCliError(
        ADMIN_EXIT.failed,
        `${method} ${path} answered ${response.status} with a body that is not JSON`,
      );
    }
  }
}

/** The `name=value` pairs of a response's Set-Cookie headers, as a Cookie header. */
export function cookieOf(response: Response): string {
  return response.headers.getSetCookie()
    .map((line) => line.split(";")[0].trim())
    .filter((pair) => /^[^=]+=./.test(pair))
    .join("; ");
}

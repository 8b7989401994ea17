/**
 * The one way the UI talks to svc: JSON over `/_/api/...` with the session cookie. Every failure
 * becomes an ApiError whose message is words a person can act on (the admin API's own message
 * when it sent one). A 401 outside the login calls tells the app the session ended.
 */

export const ADMIN = "/_/api/admin";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

let expiredListener: (message: string) => void = () => {};

/** Called with a message when a request finds the session gone (401). */
export function onSessionExpired(listener: (message: string) => void): void {
  expiredListener = listener;
}

export interface CallOptions {
  method?: string;
  body?: unknown;
  query?: Record<string, string | number | undefined | null | string[]>;
  /** Don't treat a 401 as an expired session (login forms). */
  login?: boolean;
  signal?: AbortSignal;
}

export function queryString(query: CallOptions["query"]): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) { for (const v of value) params.append(name, v); }
    else params.set(name, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

/** Turns a failed answer into an ApiError (and reports an expired session). */
export async function failure(response: Response, login = false): Promise<ApiError> {
  let body: Record<string, unknown> = {};
  try {
    body = await response.json();
  } catch { /* not JSON: a proxy's page, or a dropped connection */ }
  const message = typeof body.message === "string"
    ? body.message
    : `svc answered ${response.status} ${response.statusText || ""}`.trim();
  const error = new ApiError(
    response.status,
    typeof body.error === "string" ? body.error : `http_${response.status}`,
    message,
    body,
  );
  if (response.status === 401 && !login) {
    expiredListener("Your session has ended (expired or logged out elsewhere). Log in again.");
  }
  return error;
}

/** Fetches `path` (under `/_/api/admin` unless it starts with `/`); parses JSON. */
export async function call<T = Record<string, unknown>>(
  path: string,
  options: CallOptions = {},
): Promise<T> {
  const url = (path.startsWith("/") ? path : `${ADMIN}/${path}`) + queryString(options.query);
  let response: Response;
  try {
    response = await fetch(url, {
      method: options.method ?? (options.body === undefined ? "GET" : "POST"),
      headers: options.body === undefined ? {} : { "content-type": "application/json" },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      credentials: "same-origin",
      signal: options.signal,
    });
  } catch (err) {
    if ((err as Error).name === "AbortError") throw err;
    throw new ApiError(0, "network", `Could not reach svc: ${(err as Error).message}`);
  }
  if (!response.ok) throw await failure(response, options.login);
  const type = response.headers.get("content-type") ?? "";
  if (type.includes("json")) return await response.json() as T;
  return await response.text() as unknown as T;
}

/** Words for any thrown value. */
export function describe(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error) return err.message || String(err);
  return String(err);
}

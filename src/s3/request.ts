/**
 * Turns an HTTP request into the parts an S3 operation needs: bucket, key (percent-decoded from
 * the raw path, never normalised by a URL parser, so `..` segments are seen and refused rather
 * than silently resolved), query and headers.
 */
import type { AuthOutcome } from "../auth/authenticator.ts";
import type { AnonymousAdmission } from "./admission.ts";
import { SvcError } from "../errors.ts";

export interface S3Request {
  raw: Request;
  method: string;
  /** null for service-level requests (`/`). */
  bucket: string | null;
  /** null for bucket-level requests; may be "" only if the path was `/bucket/`. */
  key: string | null;
  query: URLSearchParams;
  headers: Headers;
  requestId: string;
  signal: AbortSignal;
  /** `/bucket/key` as the client sent it, for error documents. */
  resource: string;
  /** Who signed the request; set by the handler before dispatch. */
  auth?: AuthOutcome;
  /** Set when the admission chain let the request in without authentication. */
  anonymous?: AnonymousAdmission;
  /**
   * Browser POST forms only: takes the request's concurrency slot, called once the policy is
   * verified (reading the fields holds no slot). Set by the S3 handler.
   */
  takeSlot?: () => Promise<void>;
}

/** The raw path and query of a request URL, without any normalisation. */
export function splitRawUrl(url: string): { path: string; search: string } {
  const afterScheme = url.indexOf("://");
  const pathStart = url.indexOf("/", afterScheme >= 0 ? afterScheme + 3 : 0);
  if (pathStart < 0) return { path: "/", search: "" };
  const rest = url.slice(pathStart);
  const q = rest.indexOf("?");
  return q < 0 ? { path: rest, search: "" } : { path: rest.slice(0, q), search: rest.slice(q + 1) };
}

function decode(component: string): string {
  try {
    return decodeURIComponent(component);
  } catch {
    throw new SvcError("InvalidArgument", `Could not decode the request path "${component}"`);
  }
}

export function parseS3Request(raw: Request, requestId: string, signal: AbortSignal): S3Request {
  const { path, search } = splitRawUrl(raw.url);
  const trimmed = path.replace(/^\/+/, "");
  const slash = trimmed.indexOf("/");
  const bucket = trimmed === "" ? null : decode(slash < 0 ? trimmed : trimmed.slice(0, slash));
  let key: string | null = null;
  if (bucket !== null && slash >= 0) {
    const rawKey = trimmed.slice(slash + 1);
    key = rawKey === "" ? null : decode(rawKey);
  }
  return {
    raw,
    method: raw.method.toUpperCase(),
    bucket,
    key,
    query: new URLSearchParams(search),
    headers: raw.headers,
    requestId,
    signal,
    resource: decode(path),
  };
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

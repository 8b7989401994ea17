/**
 * The request context every surface shares (S3 and, through its id and path helpers, the admin
 * API): the parts of an HTTP request an operation needs — bucket, key (percent-decoded from the
 * raw path, never normalised by a URL parser, so `..` segments are seen and refused rather than
 * silently resolved), query and headers — plus its id and abort signal. Authentication and
 * admission add their results in `S3Request` (src/s3/request.ts), which extends this.
 */
import { SvcError } from "../lib/mod.ts";

export interface RequestContext {
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

export function parseRequestContext(
  raw: Request,
  requestId: string,
  signal: AbortSignal,
): RequestContext {
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

/**
 * Building S3 responses: XML documents, error documents, and the headers that describe an object.
 */
import { headerValue } from "./header-text.ts";
import { SvcError, toSvcError } from "../lib/mod.ts";
import { getLogger } from "../observability/mod.ts";
import type { ObjectInfo } from "../storage/mod.ts";
import { xmlDocument, xmlEscape } from "./xml.ts";

export const S3_NAMESPACE = "http://s3.amazonaws.com/doc/2006-03-01/";

/** svc has one owner for everything; S3 clients expect an Owner element in listings and ACLs. */
export const OWNER = {
  ID: "75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a",
  DisplayName: "svc",
};

const XML_TYPE = "application/xml";
const encoder = new TextEncoder();

export function xmlResponse(
  root: string,
  children: Record<string, unknown>,
  init: { status?: number; headers?: HeadersInit } = {},
): Response {
  const headers = new Headers(init.headers);
  headers.set("content-type", XML_TYPE);
  const body = encoder.encode(xmlDocument(root, children, { xmlns: S3_NAMESPACE }));
  headers.set("content-length", String(body.byteLength));
  return new Response(body, { status: init.status ?? 200, headers });
}

const log = getLogger("svc::s3");

/** One disk-full warning per this many ms, however many requests hit it. */
const DISK_FULL_LOG_EVERY_MS = 60_000;
let diskFullLoggedAt = -Infinity;
let diskFullSuppressed = 0;

/**
 * Logs a full disk once per minute with the number of requests it refused meanwhile: every write
 * fails the same way while the disk stays full, and a line per request would flood the log.
 */
function noteDiskFull(error: SvcError, resource: string): void {
  const now = performance.now();
  if (now - diskFullLoggedAt < DISK_FULL_LOG_EVERY_MS) {
    diskFullSuppressed++;
    return;
  }
  const cause = error.cause instanceof Error ? error.cause.message : String(error.cause ?? "");
  log.error("Disk full: writes answer 507 InsufficientStorage until space is freed", {
    resource,
    cause,
    refusedSinceLastReport: diskFullSuppressed,
  });
  diskFullLoggedAt = now;
  diskFullSuppressed = 0;
}

/** The S3 error document for anything thrown while serving `resource`. */
export function errorResponse(err: unknown, resource: string, requestId: string): Response {
  const error = toSvcError(err);
  if (error.code === "InsufficientStorage") noteDiskFull(error, resource);
  const headers = new Headers({ "content-type": XML_TYPE });
  if (error.code === "NotModified") return new Response(null, { status: 304 });
  // HEAD responses carry no body; S3 clients read the status and x-amz headers.
  const body = xmlDocument("Error", {
    Code: error.code,
    Message: error.message,
    ...error.details,
    Resource: resource,
    RequestId: requestId,
  });
  if (error.code === "MethodNotAllowed") headers.set("allow", error.details.Allow ?? "");
  const bytes = encoder.encode(body);
  headers.set("content-length", String(bytes.byteLength));
  return new Response(bytes, { status: error.status, headers });
}

export function quoteEtag(etag: string): string {
  return `"${etag}"`;
}

/** ISO-8601 with milliseconds, as S3 writes LastModified in listings. */
export function isoDate(ms: number): string {
  return new Date(ms).toISOString();
}

/** RFC 7231 date for Last-Modified and friends. */
export function httpDate(ms: number): string {
  return new Date(ms).toUTCString();
}

/** Headers describing an object on GET and HEAD (before response-* overrides). */
export function objectHeaders(info: ObjectInfo): Headers {
  const { meta } = info;
  const headers = new Headers({
    "content-type": meta.contentType,
    etag: quoteEtag(meta.etag),
    "last-modified": httpDate(meta.lastModified),
    "accept-ranges": "bytes",
  });
  for (const [name, value] of Object.entries(meta.headers)) {
    if (value !== undefined) headers.set(name, value);
  }
  for (const [name, value] of Object.entries(meta.userMeta)) {
    headers.set(`x-amz-meta-${name}`, headerValue(value));
  }
  if (meta.partsCount !== undefined) headers.set("x-amz-mp-parts-count", String(meta.partsCount));
  setStorageDebugHeaders(headers, info);
  return headers;
}

/** Debug headers; the handler removes them unless `debug_headers` is on. */
export const DEBUG_HEADERS = ["x-amz-storage-type", "x-svc-cache", "x-svc-deltaspace"] as const;

/**
 * How an object is stored (`delta`, `passthrough`, or `reference` for the write that created its
 * deltaspace's baseline), whether a delta read found its baseline in the cache, and the
 * deltaspace (group key or parent folder) of an object in a compressed bucket.
 */
export function setStorageDebugHeaders(headers: Headers, info: ObjectInfo): void {
  headers.set("x-amz-storage-type", info.debug?.decision ?? info.meta.storage);
  if (info.debug?.referenceCache) headers.set("x-svc-cache", info.debug.referenceCache);
  const deltaspace = info.debug?.deltaspace;
  if (deltaspace !== undefined) {
    // A key may hold any character; a header value may not (controls): percent-encode those.
    const plain = PRINTABLE_ASCII.test(deltaspace);
    headers.set(
      "x-svc-deltaspace",
      plain ? deltaspace : encodeURIComponent(deltaspace).replaceAll("%2F", "/"),
    );
  }
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** `?response-content-type=…` and friends override the stored headers on GET. */
const RESPONSE_OVERRIDES: Record<string, string> = {
  "response-content-type": "content-type",
  "response-content-language": "content-language",
  "response-expires": "expires",
  "response-cache-control": "cache-control",
  "response-content-disposition": "content-disposition",
  "response-content-encoding": "content-encoding",
};

export function applyResponseOverrides(headers: Headers, query: URLSearchParams): void {
  for (const [param, header] of Object.entries(RESPONSE_OVERRIDES)) {
    const value = query.get(param);
    if (value !== null) headers.set(header, value);
  }
}

/**
 * S3's `encoding-type=url` form: percent-encode everything but unreserved characters and `/`.
 * Both decodeURIComponent and Python's unquote_plus read it back exactly.
 */
export function urlEncodeKey(value: string): string {
  return encodeURIComponent(value).replace(/%2F/g, "/").replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/** The ACL document every bucket and object reports: the single owner with full control. */
export function ownerOnlyAcl(): Response {
  const owner = `<ID>${xmlEscape(OWNER.ID)}</ID><DisplayName>${
    xmlEscape(OWNER.DisplayName)
  }</DisplayName>`;
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n` +
    `<AccessControlPolicy xmlns="${S3_NAMESPACE}"><Owner>${owner}</Owner><AccessControlList>` +
    `<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser">` +
    `${owner}</Grantee><Permission>FULL_CONTROL</Permission></Grant></AccessControlList>` +
    `</AccessControlPolicy>`;
  return new Response(body, { headers: { "content-type": XML_TYPE } });
}

export function notImplemented(what: string): SvcError {
  return new SvcError("NotImplemented", `${what} is not implemented by svc`);
}

/**
 * `advanced.cors_permissive` (SPEC.md: dev only, off by default): lets a web page on any origin call
 * the S3 API, e.g. a front-end under development on another port. Preflights are answered before
 * authentication (browsers send them without credentials); every S3 answer names the caller's
 * origin and exposes the headers S3 clients read (ETag, version and request ids, metadata).
 * Requests still need their SigV4 signature: CORS only lets the browser show the answer. The admin
 * API and UI never get these headers: their session cookie stays same-site.
 */
type S3Handler = (request: Request, remoteAddress?: string) => Promise<Response>;

const ALLOWED_METHODS = "GET, HEAD, PUT, POST, DELETE";
// "*" exposes every header to browsers that know the wildcard; the names serve older ones.
const EXPOSED_HEADERS = [
  "*",
  "etag",
  "x-amz-version-id",
  "x-amz-request-id",
  "x-amz-id-2",
  "x-amz-delete-marker",
  "x-amz-tagging-count",
  "x-amz-mp-parts-count",
  "x-amz-checksum-sha256",
  "x-amz-checksum-crc32",
  "content-range",
  "content-length",
  "content-type",
  "last-modified",
  "accept-ranges",
].join(", ");
/** How long a browser may cache a preflight answer (seconds). */
const PREFLIGHT_MAX_AGE = "600";

function withHeaders(response: Response, extra: Record<string, string>): Response {
  let answer = response;
  try {
    for (const [name, value] of Object.entries(extra)) answer.headers.set(name, value);
  } catch {
    // Headers of a fetched response are immutable: copy it (the body streams through).
    answer = new Response(response.body, response);
    for (const [name, value] of Object.entries(extra)) answer.headers.set(name, value);
  }
  return answer;
}

export function permissiveCors(s3: S3Handler): S3Handler {
  return async (request, remoteAddress) => {
    const origin = request.headers.get("origin");
    const asked = request.headers.get("access-control-request-method");
    if (request.method === "OPTIONS" && origin !== null && asked !== null) {
      return new Response(null, {
        status: 200,
        headers: {
          "access-control-allow-origin": origin,
          "access-control-allow-methods": ALLOWED_METHODS,
          "access-control-allow-headers": request.headers.get("access-control-request-headers") ??
            "*",
          "access-control-max-age": PREFLIGHT_MAX_AGE,
          "vary": "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
        },
      });
    }
    const response = await s3(request, remoteAddress);
    if (origin === null) return response;
    const vary = response.headers.get("vary");
    return withHeaders(response, {
      "access-control-allow-origin": origin,
      "access-control-expose-headers": EXPOSED_HEADERS,
      "vary": vary ? `${vary}, Origin` : "Origin",
    });
  };
}

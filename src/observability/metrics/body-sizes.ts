/** The body sizes the HTTP size histograms observe, read from a request or a response. */

function declaredLength(headers: Headers): number | undefined {
  const value = headers.get("content-length");
  return value === null || !/^\d+$/.test(value.trim()) ? undefined : Number(value);
}

/** Request body bytes: Content-Length, 0 without a body, undefined when unknown. */
export function requestBytesOf(request: Request): number | undefined {
  return declaredLength(request.headers) ?? (request.body === null ? 0 : undefined);
}

/**
 * Response body bytes: 0 for HEAD, 204, 304 or a null body, else Content-Length; undefined only
 * for a stream sent without a length (svc sends none: every S3 answer with a body declares its
 * length, and app.ts sizes the operator answers).
 */
export function responseBytesOf(response: Response, method: string): number | undefined {
  if (method.toUpperCase() === "HEAD" || response.status === 204 || response.status === 304) {
    return 0;
  }
  const declared = declaredLength(response.headers);
  if (declared !== undefined) return declared;
  // Only reached without a Content-Length. Reading `body` turns a string body into a stream
  // (Deno then answers it chunked), which is why a declared length is checked first.
  return response.body === null ? 0 : undefined;
}

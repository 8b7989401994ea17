/**
 * The client address a request is judged by (lockout, and later aws:SourceIp). Proxy headers are
 * believed only when the operator says a trusted proxy sets them; otherwise anyone could choose
 * their own address and escape a lockout.
 */
export function clientIp(
  headers: Headers,
  remoteAddress: string | undefined,
  trustProxyHeaders: boolean,
): string {
  if (trustProxyHeaders) {
    const forwarded = headers.get("x-forwarded-for")?.split(",")[0]?.trim();
    if (forwarded) return forwarded;
    const real = headers.get("x-real-ip")?.trim();
    if (real) return real;
  }
  return remoteAddress ?? "unknown";
}

/**
 * The client address a request is judged by (lockout, and later aws:SourceIp). Proxy headers are
 * believed only when the operator says a trusted proxy sets them; otherwise anyone could choose
 * their own address and escape a lockout.
 *
 * Of X-Forwarded-For only the rightmost entry is believed: it is the one the trusted proxy
 * appended (the address it saw). Entries to its left come from the client and are whatever the
 * client chose to send. One proxy hop is assumed; X-Real-IP is the fallback for proxies that set
 * only that header (such a proxy must then drop a client's X-Forwarded-For).
 */
export function clientIp(
  headers: Headers,
  remoteAddress: string | undefined,
  trustProxyHeaders: boolean,
): string {
  if (trustProxyHeaders) {
    const forwarded = headers.get("x-forwarded-for")?.split(",").map((entry) => entry.trim())
      .filter((entry) => entry !== "").at(-1);
    if (forwarded) return forwarded;
    const real = headers.get("x-real-ip")?.trim();
    if (real) return real;
  }
  return remoteAddress ?? "unknown";
}

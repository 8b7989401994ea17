/**
 * The shapes a bootstrap password hash may take: a bcrypt hash (`$2a$`, `$2b$` or `$2y$`, cost
 * 04-31) or the base64 of one (easier to pass through environments that mangle `$`). Shared by
 * config validation (so `svc config lint` catches a malformed one) and the admin plane.
 */
const BCRYPT_HASH = /^\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}$/;

/** The plain form of a hash value, or null when it is neither a bcrypt hash nor its base64. */
export function normalizeBcryptHash(value: string): string | null {
  const trimmed = value.trim();
  if (BCRYPT_HASH.test(trimmed)) return trimmed;
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)) return null;
  try {
    const standard = trimmed.replaceAll("-", "+").replaceAll("_", "/");
    const decoded = new TextDecoder("utf-8", { fatal: true }).decode(
      Uint8Array.from(atob(standard), (ch) => ch.charCodeAt(0)),
    ).trim();
    return BCRYPT_HASH.test(decoded) ? decoded : null;
  } catch {
    return null;
  }
}

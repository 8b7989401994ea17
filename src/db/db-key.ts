/**
 * Keys derived from the bootstrap password hash. The config database is encrypted with a key
 * derived from the bcrypt hash (SPEC: the hash "encrypts the config database, signs session
 * cookies"), so whoever holds the hash can read the database: the hash is the secret, which is
 * why svc keeps its own copy 0600 and strips it from exports.
 *
 * Each use gets its own key through a domain-separation label, so the database key never equals
 * the cookie-signing key: `hex(SHA-256(label || 0x00 || hash))`. The hash string is used as given
 * (after a base64 form was decoded), so the plain and base64 forms of one hash derive one key.
 */
import { createHash } from "node:crypto";

/** Label of the config-database encryption key (libSQL `encryptionKey`). */
export const DB_KEY_LABEL = "svc config-db key v1";
/** Label of the session-cookie HMAC key. */
export const COOKIE_KEY_LABEL = "svc session-cookie key v2";

/** Hex SHA-256 of `label`, a NUL byte and `passwordHash`. */
export function deriveKey(label: string, passwordHash: string): string {
  return createHash("sha256").update(label).update("\0").update(passwordHash).digest("hex");
}

/** The libSQL encryption key of the config database for a bootstrap hash. */
export function configDbKey(passwordHash: string): string {
  return deriveKey(DB_KEY_LABEL, passwordHash);
}

/**
 * The browse panel's S3 key pair of a session (`/session/s3-credentials`, browser-connect, an
 * OIDC browse login): kept in memory on the instance that stored it, one per session, ended
 * with the session (logout, expiry, restart).
 *
 * In a fleet (a coordination bucket is set) every instance must answer for it, so the pair also
 * travels sealed in a second cookie, `svc_browse`: AES-256-GCM under a key every instance
 * derives from the bootstrap hash that already keys the session cookies (its own label, so the
 * two keys differ), the session id as associated data. Another instance opens it only together
 * with a valid session cookie of that same session, and only while both hold: logout revokes
 * the session everywhere (the sealed pair with it) and clears the cookie; a password change
 * re-keys it away with the sessions. Chosen over a sealed document in the coordination bucket:
 * no backend round trip per read, nothing at rest in the shared bucket (not even sealed), and no
 * documents of expired sessions to sweep. The cookie's path is the credentials route only, so
 * it does not ride along with every admin request; it is HttpOnly and SameSite=Strict like the
 * session's. The secret is never logged and appears in no answer but the session's own GET.
 * Forgetting the pair (DELETE) clears the cookie and the memory here; a copy of the cookie
 * saved before then opens again only with that session's own cookie, until the session ends.
 */
import { Buffer } from "node:buffer";
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { deriveKey } from "../../db/mod.ts";
import { cookieIsSecure, type SecureCookies } from "./cookie-security.ts";

export interface KeyPair {
  access_key_id: string;
  secret_access_key: string;
}

export const BROWSE_COOKIE = "svc_browse";
/** Only the credentials route reads it. */
export const BROWSE_COOKIE_PATH = "/_/api/admin/session/s3-credentials";
const BROWSE_KEY_LABEL = "svc browse-pair key v1";
const VERSION = "v1";
/** A sealed value longer than this is refused before any work (ids and secrets are short). */
const MAX_SEALED_CHARS = 2048;

export interface BrowseSealing {
  /** The bootstrap hash in force (null: not a fleet; the pair stays in memory only). */
  passwordHash: () => string | null;
  secureCookies: () => SecureCookies;
}

interface Sealed {
  s: string;
  k: string;
  x: string;
  e: number;
}

export class BrowseCredentials {
  readonly #pairs = new Map<string, KeyPair & { expiresAt: number }>();
  readonly #sealing: BrowseSealing | undefined;
  readonly #now: () => number;

  constructor(sealing?: BrowseSealing, now: () => number = Date.now) {
    this.#sealing = sealing;
    this.#now = now;
  }

  #key(): Buffer | null {
    const hash = this.#sealing?.passwordHash() ?? null;
    return hash === null ? null : Buffer.from(deriveKey(BROWSE_KEY_LABEL, hash), "hex");
  }

  #cookie(value: string, maxAgeSecs: number, https: boolean): string {
    const secure = cookieIsSecure(this.#sealing!.secureCookies(), https) ? "; Secure" : "";
    return `${BROWSE_COOKIE}=${value}; Path=${BROWSE_COOKIE_PATH}; HttpOnly; SameSite=Strict; ` +
      `Max-Age=${maxAgeSecs}${secure}`;
  }

  /**
   * Keeps the pair for the session; returns the `Set-Cookie` value carrying it sealed to the
   * other instances, or null outside a fleet.
   */
  set(sessionId: string, pair: KeyPair, expiresAt: number, https = false): string | null {
    this.#pairs.set(sessionId, { ...pair, expiresAt });
    const key = this.#key();
    if (key === null) return null;
    const sealed: Sealed = {
      s: sessionId,
      k: pair.access_key_id,
      x: pair.secret_access_key,
      e: expiresAt,
    };
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", key, iv);
    cipher.setAAD(Buffer.from(`${VERSION}.${sessionId}`));
    const body = Buffer.concat([cipher.update(JSON.stringify(sealed), "utf8"), cipher.final()]);
    const value = [VERSION, iv, Buffer.concat([body, cipher.getAuthTag()])]
      .map((part) => typeof part === "string" ? part : part.toString("base64url")).join(".");
    const maxAge = Math.max(1, Math.floor((expiresAt - this.#now()) / 1000));
    return this.#cookie(value, maxAge, https);
  }

  /** The session's pair: from memory here, else from its sealed cookie (in a fleet). */
  get(sessionId: string, sealed?: string): KeyPair | undefined {
    const now = this.#now();
    const pair = this.#pairs.get(sessionId);
    if (pair && pair.expiresAt <= now) this.#pairs.delete(sessionId);
    if (pair && pair.expiresAt > now) {
      return { access_key_id: pair.access_key_id, secret_access_key: pair.secret_access_key };
    }
    return sealed === undefined ? undefined : this.#open(sessionId, sealed, now);
  }

  #open(sessionId: string, value: string, now: number): KeyPair | undefined {
    const key = this.#key();
    if (key === null || value.length > MAX_SEALED_CHARS) return undefined;
    const parts = value.split(".");
    if (parts.length !== 3 || parts[0] !== VERSION) return undefined;
    const iv = Buffer.from(parts[1], "base64url");
    const body = Buffer.from(parts[2], "base64url");
    if (iv.length !== 12 || body.length <= 16) return undefined;
    let sealed: Partial<Sealed>;
    try {
      const decipher = createDecipheriv("aes-256-gcm", key, iv);
      // Bound to the session: another session's cookie (or a tampered one) fails here.
      decipher.setAAD(Buffer.from(`${VERSION}.${sessionId}`));
      decipher.setAuthTag(body.subarray(body.length - 16));
      const plain = Buffer.concat([
        decipher.update(body.subarray(0, body.length - 16)),
        decipher.final(),
      ]);
      sealed = JSON.parse(plain.toString("utf8"));
    } catch {
      return undefined;
    }
    const { s, k, x, e } = sealed ?? {};
    if (s !== sessionId || typeof k !== "string" || typeof x !== "string") return undefined;
    if (typeof e !== "number" || e <= now) return undefined;
    return { access_key_id: k, secret_access_key: x };
  }

  /** Forgets the session's pair here; true when one was held in memory. */
  delete(sessionId: string): boolean {
    return this.#pairs.delete(sessionId);
  }

  /** The `Set-Cookie` value that removes the sealed pair from the browser (null outside a fleet). */
  clearCookie(https = false): string | null {
    return this.#key() === null ? null : this.#cookie("", 0, https);
  }
}

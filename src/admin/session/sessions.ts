/**
 * Admin sessions: what a cookie is and how one is checked. The store (db/session-store.ts) holds
 * the rows; this file makes and reads cookies.
 *
 * Cookie `svc_session=v1.<token>.<mac>`: a random 256-bit token and an HMAC-SHA256 of it under a
 * key derived from the bootstrap password hash (db-key.ts labels), so changing the password
 * invalidates every cookie at once even before the rows go. Attributes: `HttpOnly;
 * SameSite=Strict; Path=/_/` (the admin API, whoami and stats all live under it), `Secure` as
 * `secure_cookies` says (cookie-security.ts), `Max-Age` = `session_ttl_hours`. A session is bound to the client address it
 * logged in from; it expires at a fixed time (no sliding renewal). Every comparison of secret
 * material is constant-time.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import {
  COOKIE_KEY_LABEL,
  deriveKey,
  type SessionRecord,
  type SessionStore,
} from "../../db/mod.ts";
import type { AdminPrincipal } from "../admin-env.ts";
import { cookieIsSecure, PlainLoginWarnings, type SecureCookies } from "./cookie-security.ts";

export const SESSION_COOKIE = "svc_session";
const COOKIE_VERSION = "v1";

export interface SessionSettings {
  ttlHours: number;
  secureCookies: SecureCookies;
}

/** Where a session is opened from: the client address and whether it came over TLS. */
export interface SessionOrigin {
  ip: string;
  https: boolean;
}

export interface AdminSessionsDeps {
  store: SessionStore;
  /** The bootstrap hash in force (read at each use: a password change re-keys cookies). */
  passwordHash: () => string;
  /** `advanced.session_ttl_hours` and `advanced.secure_cookies` of the running config. */
  settings: () => SessionSettings;
  now?: () => number;
}

export interface IssuedSession {
  record: SessionRecord;
  principal: AdminPrincipal;
  /** The `Set-Cookie` header value. */
  setCookie: string;
}

export type SessionCheck =
  | { ok: true; principal: AdminPrincipal; record: SessionRecord }
  | { ok: false; reason: "missing" | "malformed" | "bad_signature" | "unknown" | "ip_mismatch" };

/** Equal-length digests compared in constant time, whatever the inputs' lengths. */
export function constantTimeEqual(a: string, b: string): boolean {
  const digest = (text: string) => createHash("sha256").update(text).digest();
  return timingSafeEqual(digest(a), digest(b));
}

function principalOf(record: SessionRecord): AdminPrincipal {
  return {
    user: record.user,
    admin: record.admin,
    sessionId: record.id,
    ...(record.accessKeyId === null ? {} : { accessKeyId: record.accessKeyId }),
  };
}

export class AdminSessions {
  readonly #deps: AdminSessionsDeps;
  readonly #now: () => number;
  readonly #plainLogins = new PlainLoginWarnings();

  constructor(deps: AdminSessionsDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? Date.now;
  }

  #mac(token: string): string {
    const key = deriveKey(COOKIE_KEY_LABEL, this.#deps.passwordHash());
    return createHmac("sha256", key).update(token).digest("base64url");
  }

  #cookie(value: string, maxAgeSecs: number, https: boolean): string {
    const secure = cookieIsSecure(this.#deps.settings().secureCookies, https) ? "; Secure" : "";
    return `${SESSION_COOKIE}=${value}; Path=/_/; HttpOnly; SameSite=Strict; ` +
      `Max-Age=${maxAgeSecs}${secure}`;
  }

  /**
   * Starts a session for `user` from `origin`; returns the row and the cookie to set. An IAM
   * user's session names the access key it was opened under (`accessKeyId`). An admin session
   * opened over plain HTTP from another host is logged as a warning (once per address).
   */
  async issue(
    user: string,
    admin: boolean,
    origin: SessionOrigin,
    accessKeyId: string | null = null,
  ): Promise<IssuedSession> {
    const clientIp = origin.ip;
    const now = this.#now();
    const ttlSecs = Math.max(1, Math.floor(this.#deps.settings().ttlHours * 3600));
    const token = randomBytes(32).toString("base64url");
    const record = await this.#deps.store.create(token, {
      user,
      admin,
      clientIp,
      accessKeyId,
      createdAt: now,
      expiresAt: now + ttlSecs * 1000,
    });
    const value = `${COOKIE_VERSION}.${token}.${this.#mac(token)}`;
    if (admin) this.#plainLogins.note(clientIp, origin.https, user);
    const setCookie = this.#cookie(value, ttlSecs, origin.https);
    return { record, principal: principalOf(record), setCookie };
  }

  /** Checks a cookie value presented from `clientIp`. */
  async check(cookie: string | undefined, clientIp: string): Promise<SessionCheck> {
    if (cookie === undefined || cookie === "") return { ok: false, reason: "missing" };
    const parts = cookie.split(".");
    if (parts.length !== 3 || parts[0] !== COOKIE_VERSION || parts[1].length !== 43) {
      return { ok: false, reason: "malformed" };
    }
    const [, token, mac] = parts;
    if (!constantTimeEqual(mac, this.#mac(token))) return { ok: false, reason: "bad_signature" };
    const record = await this.#deps.store.find(token, this.#now());
    if (record === null) return { ok: false, reason: "unknown" };
    if (!constantTimeEqual(record.clientIp, clientIp)) return { ok: false, reason: "ip_mismatch" };
    return { ok: true, principal: principalOf(record), record };
  }

  /** Ends one session. */
  async end(sessionId: string): Promise<void> {
    await this.#deps.store.delete(sessionId);
  }

  /** Ends every session; returns how many. */
  endAll(): Promise<number> {
    return this.#deps.store.deleteAll();
  }

  /** Removes expired rows (call on a timer; login also calls it). */
  prune(): Promise<number> {
    return this.#deps.store.prune(this.#now());
  }

  /** The `Set-Cookie` value that removes the cookie from the browser. */
  clearCookie(https: boolean): string {
    return this.#cookie("", 0, https);
  }
}

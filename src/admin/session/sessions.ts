/**
 * Admin sessions: what a cookie is and how one is checked, on any instance of a fleet.
 *
 * Cookie `svc_session=v2.<record>.<mac>`: the session record itself (id, user, admin flag, bound
 * client address, access key id, creation and expiry; base64url JSON) and an HMAC-SHA256 of
 * `v2.<record>` under a key derived from the bootstrap password hash (db-key.ts labels). Every
 * instance sharing the hash (config sync requires it) verifies a cookie another one issued, so a
 * console behind a round-robin load balancer keeps its session; changing the password re-keys
 * every cookie at once. No token is stored anywhere: a copied database yields no cookie.
 *
 * A session ends early through a revocation in the config database (db/session-store.ts:
 * logout, a session whose user lost its entitlement, a password change), which `onRevoked`
 * publishes to the other instances with the IAM snapshot (config sync). Users disabled, deleted,
 * stripped of admin or with rotated keys lose their sessions through the synced IAM itself
 * (`stillEntitled`, session-guard.ts). Cookies of the older `v1` form are refused: their users
 * log in again.
 *
 * Attributes: `HttpOnly; SameSite=Strict; Path=/_/` (the admin API, whoami and stats all live
 * under it), `Secure` as `secure_cookies` says (cookie-security.ts), `Max-Age` =
 * `session_ttl_hours`. A session is bound to the client address it logged in from; it expires at
 * a fixed time (no sliding renewal). Every comparison of secret material is constant-time.
 */
import { Buffer } from "node:buffer";
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
const COOKIE_VERSION = "v2";
/** A record longer than this is refused before any work (names are short; ids are fixed). */
const MAX_RECORD_CHARS = 2048;

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
  /**
   * A session was ended early: publishes the revocation to the other instances (config sync);
   * resolves once published (or failed: the next change or poll retries), never rejects.
   */
  onRevoked?: () => Promise<unknown>;
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
  | {
    ok: false;
    reason: "missing" | "malformed" | "bad_signature" | "expired" | "revoked" | "ip_mismatch";
  };

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

/** The record as the cookie carries it (short keys: the cookie travels with every request). */
function encodeRecord(record: SessionRecord): string {
  const wire = {
    i: record.id,
    u: record.user,
    a: record.admin,
    ip: record.clientIp,
    k: record.accessKeyId,
    c: record.createdAt,
    e: record.expiresAt,
  };
  return Buffer.from(JSON.stringify(wire)).toString("base64url");
}

/** The record of a verified cookie, or null when its fields are not what `encodeRecord` makes. */
function decodeRecord(encoded: string): SessionRecord | null {
  let wire: Record<string, unknown>;
  try {
    wire = JSON.parse(Buffer.from(encoded, "base64url").toString("utf8"));
  } catch {
    return null;
  }
  const { i, u, a, ip, k, c, e } = wire ?? {};
  if (
    typeof i !== "string" || !/^[0-9a-f]{32}$/.test(i) || typeof u !== "string" ||
    typeof a !== "boolean" || typeof ip !== "string" || (k !== null && typeof k !== "string") ||
    !Number.isSafeInteger(c) || !Number.isSafeInteger(e)
  ) return null;
  return {
    id: i,
    user: u,
    admin: a,
    clientIp: ip,
    accessKeyId: k as string | null,
    createdAt: c as number,
    expiresAt: e as number,
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

  #mac(signed: string): string {
    const key = deriveKey(COOKIE_KEY_LABEL, this.#deps.passwordHash());
    return createHmac("sha256", key).update(signed).digest("base64url");
  }

  #cookie(value: string, maxAgeSecs: number, https: boolean): string {
    const secure = cookieIsSecure(this.#deps.settings().secureCookies, https) ? "; Secure" : "";
    return `${SESSION_COOKIE}=${value}; Path=/_/; HttpOnly; SameSite=Strict; ` +
      `Max-Age=${maxAgeSecs}${secure}`;
  }

  /**
   * Starts a session for `user` from `origin`; returns its record and the cookie to set. An IAM
   * user's session names the access key it was opened under (`accessKeyId`). An admin session
   * opened over plain HTTP from another host is logged as a warning (once per address).
   */
  // deno-lint-ignore require-await
  async issue(
    user: string,
    admin: boolean,
    origin: SessionOrigin,
    accessKeyId: string | null = null,
  ): Promise<IssuedSession> {
    const clientIp = origin.ip;
    const now = this.#now();
    const ttlSecs = Math.max(1, Math.floor(this.#deps.settings().ttlHours * 3600));
    const record: SessionRecord = {
      id: randomBytes(16).toString("hex"),
      user,
      admin,
      clientIp,
      accessKeyId,
      createdAt: now,
      expiresAt: now + ttlSecs * 1000,
    };
    const signed = `${COOKIE_VERSION}.${encodeRecord(record)}`;
    const value = `${signed}.${this.#mac(signed)}`;
    if (admin) this.#plainLogins.note(clientIp, origin.https, user);
    const setCookie = this.#cookie(value, ttlSecs, origin.https);
    return { record, principal: principalOf(record), setCookie };
  }

  /** Checks a cookie value presented from `clientIp`. */
  async check(cookie: string | undefined, clientIp: string): Promise<SessionCheck> {
    if (cookie === undefined || cookie === "") return { ok: false, reason: "missing" };
    const parts = cookie.split(".");
    if (
      parts.length !== 3 || parts[0] !== COOKIE_VERSION || parts[1].length === 0 ||
      parts[1].length > MAX_RECORD_CHARS || parts[2].length !== 43
    ) {
      return { ok: false, reason: "malformed" };
    }
    const signed = `${parts[0]}.${parts[1]}`;
    if (!constantTimeEqual(parts[2], this.#mac(signed))) {
      return { ok: false, reason: "bad_signature" };
    }
    // Signed by an instance holding the key: the record is what it issued.
    const record = decodeRecord(parts[1]);
    if (record === null) return { ok: false, reason: "malformed" };
    if (record.expiresAt <= this.#now()) return { ok: false, reason: "expired" };
    if (!constantTimeEqual(record.clientIp, clientIp)) return { ok: false, reason: "ip_mismatch" };
    if (await this.#deps.store.revoked(record)) return { ok: false, reason: "revoked" };
    return { ok: true, principal: principalOf(record), record };
  }

  /** Ends one session, on every instance once config sync carried it. */
  async end(session: Pick<SessionRecord, "id" | "expiresAt">): Promise<void> {
    await this.#deps.store.revokeSession(session, this.#now());
    await this.#deps.onRevoked?.();
  }

  /** Ends every session issued until now (a password change), here and on the other instances. */
  async endAll(): Promise<void> {
    await this.#deps.store.revokeAll(this.#now());
    await this.#deps.onRevoked?.();
  }

  /** Removes revocations of sessions that have expired anyway; returns how many. */
  prune(): Promise<number> {
    return this.#deps.store.prune(this.#now());
  }

  /** The `Set-Cookie` value that removes the cookie from the browser. */
  clearCookie(https: boolean): string {
    return this.#cookie("", 0, https);
  }
}

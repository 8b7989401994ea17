/**
 * The pending state of an OIDC login, kept by the browser instead of svc: a login started with
 * `GET /oauth/authorize/:provider` puts its state, nonce, PKCE verifier, redirect URI and client
 * address into the `svc_oauth` cookie, sealed with AES-256-GCM under a key derived from the
 * bootstrap password hash (db-key.ts labels) with the provider's name as associated data, and
 * expiring in ten minutes. No server table grows with logins started and never finished, so a
 * stranger cannot fill one to lock everyone out; `AuthorizeBudget` bounds what one address may
 * start (answered 429 to that address only).
 *
 * A flow is used once: the callback clears the cookie, and remembers the states it consumed until
 * they expire (a list that only finished logins grow, each of which needed a started one).
 */
import { Buffer } from "node:buffer";
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { deriveKey } from "../../db/mod.ts";

export const FLOW_COOKIE = "svc_oauth";
export const FLOW_TTL_MS = 10 * 60_000;
const FLOW_KEY_LABEL = "svc oauth-flow key v1";
const COOKIE_PATH = "/_/api/admin/oauth/";

export interface LoginFlow {
  provider: string;
  state: string;
  nonce: string;
  verifier: string;
  redirectUri: string;
  ip: string;
  /** Unix ms. */
  expiresAt: number;
}

function flowKey(passwordHash: string): Buffer {
  return Buffer.from(deriveKey(FLOW_KEY_LABEL, passwordHash), "hex");
}

/**
 * `v1.<base64url(provider)>.<base64url(iv | ciphertext | tag)>`: the flow sealed for its
 * provider (named in clear so the callback knows which seal to open; the seal binds it).
 */
export function sealFlow(flow: LoginFlow, passwordHash: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", flowKey(passwordHash), iv);
  cipher.setAAD(Buffer.from(`provider:${flow.provider}`));
  const body = Buffer.concat([cipher.update(JSON.stringify(flow), "utf8"), cipher.final()]);
  const sealed = Buffer.concat([iv, body, cipher.getAuthTag()]).toString("base64url");
  return `v1.${Buffer.from(flow.provider).toString("base64url")}.${sealed}`;
}

/** The flow in a cookie value, or null (forged, altered, malformed). Expiry is the caller's. */
export function openFlow(value: string | undefined, passwordHash: string): LoginFlow | null {
  const parts = value?.split(".") ?? [];
  if (parts.length !== 3 || parts[0] !== "v1" || value!.length > 4096) return null;
  const provider = Buffer.from(parts[1], "base64url").toString("utf8");
  const raw = Buffer.from(parts[2], "base64url");
  if (raw.length < 12 + 16 + 2) return null;
  try {
    const decipher = createDecipheriv("aes-256-gcm", flowKey(passwordHash), raw.subarray(0, 12));
    decipher.setAAD(Buffer.from(`provider:${provider}`));
    decipher.setAuthTag(raw.subarray(raw.length - 16));
    const text = Buffer.concat([
      decipher.update(raw.subarray(12, raw.length - 16)),
      decipher.final(),
    ])
      .toString("utf8");
    const flow = JSON.parse(text) as LoginFlow;
    return flow.provider === provider ? flow : null;
  } catch {
    return null;
  }
}

export function flowCookie(value: string, secure: boolean, maxAgeSecs: number): string {
  return `${FLOW_COOKIE}=${value}; Path=${COOKIE_PATH}; HttpOnly; SameSite=Lax; ` +
    `Max-Age=${maxAgeSecs}${secure ? "; Secure" : ""}`;
}

/** States of finished logins, until their flows would have expired anyway. */
export class SpentStates {
  readonly #spent = new Map<string, number>();

  /** Records `state`; false when it was already spent. */
  spend(state: string, expiresAt: number, now: number): boolean {
    for (const [key, until] of this.#spent) {
      if (until > now) break;
      this.#spent.delete(key);
    }
    if (this.#spent.has(state)) return false;
    this.#spent.set(state, expiresAt);
    return true;
  }
}

/**
 * Authorize calls per client address: at most `limit` per `windowMs`. The table holds at most
 * `maxAddresses` windows; when full, the oldest window goes (an address can only win back its own
 * budget that way by spending as many other addresses).
 */
export class AuthorizeBudget {
  readonly #windows = new Map<string, { start: number; count: number }>();

  constructor(
    readonly limit = 30,
    readonly windowMs = 60_000,
    readonly maxAddresses = 100_000,
  ) {}

  /** Counts one call from `ip`; false when the address is over its budget. */
  take(ip: string, now: number): boolean {
    let window = this.#windows.get(ip);
    if (!window || now - window.start >= this.windowMs) {
      this.#windows.delete(ip);
      if (this.#windows.size >= this.maxAddresses) {
        const oldest = this.#windows.keys().next().value;
        if (oldest !== undefined) this.#windows.delete(oldest);
      }
      window = { start: now, count: 0 };
      this.#windows.set(ip, window);
    }
    window.count++;
    return window.count <= this.limit;
  }
}

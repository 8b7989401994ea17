/**
 * The admin plane's front door, as Hono middleware:
 * - `crossSiteCheck`: a state-changing request (POST, PUT, PATCH, DELETE) that a browser marks as
 *   coming from another site is refused with 403 `cross_site`, public routes included (login
 *   CSRF). Refused when `Sec-Fetch-Site` is present and not `same-origin`/`none`, or when
 *   `Origin` is present and its host differs from the request's `Host` (the request URL's host when
 *   the header is absent; `X-Forwarded-Host` first when `trust_proxy_headers`). Non-browser clients (curl,
 *   the CLI, SDKs) send neither header and pass. SameSite=Strict on the cookie is the other half.
 * - `requireSession`: sets `c.var.principal` from a valid session cookie or throws 401
 *   `unauthorized` (also what `/_/stats` uses, outside the admin prefix).
 * - `sessionGuard`: both, for everything under `/_/api/admin`, except that the routes SPEC.md
 *   lists as public need no session.
 * The admin app must set `c.var.clientIp` (auth/client-ip.ts) before these run.
 */
import type { Context, MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";
import type { AuditFn } from "../../observability/mod.ts";
import type { AdminEnv, AdminPrincipal } from "../admin-env.ts";
import { AdminError } from "../admin-error.ts";
import { type AdminSessions, SESSION_COOKIE } from "./sessions.ts";

/** Routes under the admin prefix that need no session (SPEC.md Authentication 11). */
export const DEFAULT_PUBLIC_ADMIN_PATHS: readonly string[] = [
  "/login",
  "/login-as",
  "/session",
  "/recover-db",
  "/policies",
  "/oauth/*",
  "/session/browser-connect",
  "/session/open-browser-connect",
];

/**
 * Routes a browse-only session (an IAM user without `admin`, or open access) may use; every
 * other guarded route needs an admin session (403 `forbidden`).
 */
export const BROWSE_SESSION_PATHS: readonly string[] = [
  "/logout",
  "/session/s3-credentials",
  "/jobs/bucket/*",
  "/objects/*",
];

export const ADMIN_PREFIX = "/_/api/admin";

const STATE_CHANGING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

export interface CrossSiteOptions {
  audit?: AuditFn;
  /**
   * Compare `Origin` with `X-Forwarded-Host` instead of `Host` when present (a trusted reverse
   * proxy that rewrites Host); follows `advanced.trust_proxy_headers`.
   */
  trustProxyHeaders?: () => boolean;
}

/** The host (and non-default port) of `Origin`, or null when it is not an http(s) origin. */
function originHost(origin: string): { host: string; protocol: string } | null {
  try {
    const url = new URL(origin);
    if (url.protocol !== "http:" && url.protocol !== "https:") return null;
    return { host: url.host, protocol: url.protocol };
  } catch {
    return null;
  }
}

/** `Host` normalised the way URL normalises an origin (lower case, default port dropped). */
function normalisedHost(host: string, protocol: string): string | null {
  try {
    return new URL(`${protocol}//${host}`).host;
  } catch {
    return null;
  }
}

/** Why a request is cross-site, or null when it is not. */
export function crossSiteReason(
  method: string,
  headers: Headers,
  url: string,
  trustProxyHeaders = false,
): string | null {
  if (!STATE_CHANGING.has(method.toUpperCase())) return null;
  const fetchSite = headers.get("sec-fetch-site");
  if (fetchSite !== null && fetchSite !== "same-origin" && fetchSite !== "none") {
    return `Sec-Fetch-Site is "${fetchSite}"`;
  }
  const origin = headers.get("origin");
  if (origin === null) return null;
  const parsed = originHost(origin);
  if (parsed === null) return `Origin "${origin}" is not an http(s) origin`;
  const forwarded = trustProxyHeaders
    ? headers.get("x-forwarded-host")?.split(",")[0]?.trim()
    : undefined;
  // The runtime builds the request URL from Host; the header is preferred when present.
  const requestHost = forwarded || headers.get("host") || new URL(url).host;
  const host = requestHost ? normalisedHost(requestHost, parsed.protocol) : null;
  if (host === null || host !== parsed.host) {
    return `Origin "${origin}" does not match the request host "${requestHost}"`;
  }
  return null;
}

export function crossSiteCheck(options: CrossSiteOptions = {}): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    const reason = crossSiteReason(
      c.req.method,
      c.req.raw.headers,
      c.req.url,
      options.trustProxyHeaders?.() ?? false,
    );
    if (reason !== null) {
      options.audit?.("admin_cross_site_refused", {
        ip: c.var.clientIp,
        method: c.req.method,
        path: c.req.path,
        reason,
      });
      throw new AdminError(
        "cross_site",
        `Cross-site request refused: ${reason}; state-changing admin requests must come from ` +
          `the admin console's own origin`,
      );
    }
    await next();
  };
}

export interface RequireSessionOptions {
  sessions: AdminSessions;
  audit?: AuditFn;
  /**
   * Whether a session's user may still hold it (an IAM user disabled, deleted or stripped of
   * `admin` since login loses the session at its next request). Absent: every session holds.
   */
  stillEntitled?: (principal: AdminPrincipal, clientIp: string) => boolean;
}

/** Checks the request's session cookie; records a cookie replayed from another address. */
export async function sessionOf(
  c: Context<AdminEnv>,
  options: RequireSessionOptions,
): Promise<Awaited<ReturnType<AdminSessions["check"]>>> {
  const result = await options.sessions.check(getCookie(c, SESSION_COOKIE), c.var.clientIp);
  if (!result.ok && result.reason === "ip_mismatch") {
    options.audit?.("admin_session_ip_mismatch", { ip: c.var.clientIp, path: c.req.path });
  }
  return result;
}

export function requireSession(options: RequireSessionOptions): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    const result = await sessionOf(c, options);
    if (!result.ok) {
      throw new AdminError(
        "unauthorized",
        result.reason === "missing"
          ? "Log in first: this route needs an admin session"
          : "The session is invalid or expired; log in again",
      );
    }
    if (options.stillEntitled && !options.stillEntitled(result.principal, c.var.clientIp)) {
      await options.sessions.end(result.record);
      options.audit?.("admin_session_revoked", {
        user: result.principal.user,
        ip: c.var.clientIp,
        session: result.principal.sessionId,
      });
      throw new AdminError(
        "unauthorized",
        "The session's user was disabled, deleted or lost its permissions; log in again",
      );
    }
    c.set("principal", result.principal);
    await next();
  };
}

export interface SessionGuardOptions extends RequireSessionOptions, CrossSiteOptions {
  /** Paths relative to `prefix` that need no session; `/x/*` matches below `/x`. */
  publicPaths?: readonly string[];
  /** Where the guarded app is mounted; default `/_/api/admin`. */
  prefix?: string;
}

/** True when `path` (relative to the prefix) is one of `publicPaths`. */
export function isPublicPath(path: string, publicPaths: readonly string[]): boolean {
  return publicPaths.some((pattern) =>
    pattern.endsWith("/*")
      ? path === pattern.slice(0, -2) || path.startsWith(pattern.slice(0, -1))
      : path === pattern
  );
}

export function sessionGuard(options: SessionGuardOptions): MiddlewareHandler<AdminEnv> {
  const prefix = options.prefix ?? ADMIN_PREFIX;
  const publicPaths = options.publicPaths ?? DEFAULT_PUBLIC_ADMIN_PATHS;
  const crossSite = crossSiteCheck(options);
  const session = requireSession(options);
  return (c, next) =>
    crossSite(c, async () => {
      const path = c.req.path.startsWith(prefix) ? c.req.path.slice(prefix.length) : c.req.path;
      if (isPublicPath(path, publicPaths)) return await next();
      await session(c, async () => {
        if (!c.var.principal.admin && !isPublicPath(path, BROWSE_SESSION_PATHS)) {
          throw new AdminError(
            "forbidden",
            "This session may only browse objects; log in with an admin account for this route",
          );
        }
        await next();
      });
    });
}

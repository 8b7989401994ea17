/**
 * Session and authentication routes, mounted at `/_/api/admin` behind `sessionGuard`:
 *   POST /login        {password} → cookie; {ok, user: "$bootstrap", admin_gui, expires_at}
 *   POST /logout       ends the caller's session, clears the cookie
 *   GET  /session      {valid, admin_gui} (public; never 401)
 *   PUT  /password     {current_password, new_password}: re-encrypts the config DB, ends every
 *                      session, re-issues the caller's cookie under the new key
 *   POST /recover-db   {password} (public): keeps the fresh DB after a wrong-hash boot
 * and `whoamiHandler` for `GET /_/api/whoami`, mounted outside the prefix.
 *
 * Every password check goes through the LoginLimiter (429 while an address is limited). Audit
 * events (never with a password): admin_login, admin_login_failed, admin_logout,
 * admin_password_changed, admin_password_change_failed, config_db_recovered,
 * config_db_recover_failed.
 */
import { type Handler, Hono } from "hono";
import { getCookie } from "hono/cookie";
import type { DbState } from "../../db/mod.ts";
import type { AuditFn } from "../../observability/mod.ts";
import { actorFields, type AdminEnv, sessionOrigin } from "../admin-env.ts";
import { AdminError, jsonBody } from "../admin-error.ts";
import { type BootstrapPassword, checkNewPassword, type Rekeyable } from "./bootstrap-password.ts";
import type { LoginAttempt, LoginLimiter } from "./login-limiter.ts";
import { type AdminSessions, SESSION_COOKIE } from "./sessions.ts";

/** The synthetic principal of the bootstrap password (SPEC: user names starting `$`). */
export const BOOTSTRAP_USER = "$bootstrap";

export interface SessionRoutesDeps {
  sessions: AdminSessions;
  password: Pick<BootstrapPassword, "verify" | "change" | "source" | "sourceLabel">;
  db: Rekeyable & {
    readonly state: DbState;
    acknowledgeRecovery(): Promise<{ asidePath: string }>;
  };
  limiter: LoginLimiter;
  audit: AuditFn;
  /**
   * Told when a session ends by logout (the browse panel's key pair goes with it); may answer a
   * `Set-Cookie` value to send as well (the sealed pair's cookie, cleared).
   */
  onSessionEnd?: (sessionId: string, https: boolean) => string | null | void;
}

function passwordField(body: Record<string, unknown>, name: string): string {
  const value = body[name];
  if (typeof value !== "string" || value === "") {
    throw new AdminError("bad_request", `Body field "${name}" must be a non-empty string`);
  }
  return value;
}

/** Checks `plain` under the limiter: resolves true/false, settles the attempt either way. */
export async function limitedVerify(
  limiter: LoginLimiter,
  ip: string,
  verify: () => Promise<boolean>,
): Promise<{ ok: boolean; attempt: LoginAttempt; locked: boolean }> {
  const attempt = limiter.begin(ip);
  let ok: boolean;
  try {
    ok = await verify();
  } catch (err) {
    attempt.abandoned();
    throw err;
  }
  if (ok) {
    attempt.succeeded();
    return { ok, attempt, locked: false };
  }
  return { ok, attempt, locked: attempt.failed() };
}

export function sessionRoutes(deps: SessionRoutesDeps): Hono<AdminEnv> {
  const { sessions, password, db, limiter, audit } = deps;
  const app = new Hono<AdminEnv>();

  app.post("/login", async (c) => {
    const ip = c.var.clientIp;
    const body = await jsonBody(c);
    const plain = passwordField(body, "password");
    const { ok, locked } = await limitedVerify(limiter, ip, () => password.verify(plain));
    if (!ok) {
      audit("admin_login_failed", { user: BOOTSTRAP_USER, ip, locked_out: locked }, "warn");
      throw new AdminError("unauthorized", "Wrong password");
    }
    await sessions.prune();
    const issued = await sessions.issue(BOOTSTRAP_USER, true, sessionOrigin(c.var));
    c.header("set-cookie", issued.setCookie);
    audit("admin_login", { user: BOOTSTRAP_USER, ip, session: issued.record.id }, "info");
    return c.json({
      ok: true,
      user: BOOTSTRAP_USER,
      admin_gui: true,
      expires_at: new Date(issued.record.expiresAt).toISOString(),
    });
  });

  app.post("/logout", async (c) => {
    const principal = c.var.principal;
    // The guard let the cookie through: its record says until when the revocation must last.
    const checked = await sessions.check(getCookie(c, SESSION_COOKIE), c.var.clientIp);
    await sessions.end(
      checked.ok ? checked.record : { id: principal.sessionId, expiresAt: Number.MAX_SAFE_INTEGER },
    );
    const cleared = deps.onSessionEnd?.(principal.sessionId, c.var.https === true);
    c.header("set-cookie", sessions.clearCookie(c.var.https === true));
    if (typeof cleared === "string") c.header("set-cookie", cleared, { append: true });
    audit("admin_logout", { ...actorFields(c.var), session: principal.sessionId }, "info");
    return c.json({ ok: true });
  });

  app.get("/session", async (c) => {
    const result = await sessions.check(getCookie(c, SESSION_COOKIE), c.var.clientIp);
    return c.json({ valid: result.ok, admin_gui: result.ok && result.principal.admin });
  });

  app.put("/password", async (c) => {
    const ip = c.var.clientIp;
    const principal = c.var.principal;
    if (password.source !== "state_file") {
      // Before any check: nothing the caller sends can make this route work.
      throw new AdminError(
        "conflict",
        `The bootstrap password hash is set by ${password.sourceLabel}; change it there and ` +
          `restart svc`,
        { source: password.source },
      );
    }
    const body = await jsonBody(c);
    const current = passwordField(body, "current_password");
    const next = body.new_password;
    checkNewPassword(next);
    const { ok, locked } = await limitedVerify(limiter, ip, () => password.verify(current));
    if (!ok) {
      audit("admin_password_change_failed", { ...actorFields(c.var), locked_out: locked }, "warn");
      throw new AdminError("forbidden", "The current password is wrong");
    }
    // Revoked first, under the old key: the other instances of a fleet adopt the revocation
    // (config sync) before the re-encrypted state stops opening for them until they get the
    // new hash too. Here, the new hash re-keys every cookie anyway.
    await sessions.endAll();
    await password.change(next, db);
    const issued = await sessions.issue(
      principal.user,
      principal.admin,
      sessionOrigin(c.var),
      principal.accessKeyId ?? null,
    );
    c.header("set-cookie", issued.setCookie);
    audit("admin_password_changed", { ...actorFields(c.var), sessions_ended: "all" }, "warn");
    return c.json({ ok: true, expires_at: new Date(issued.record.expiresAt).toISOString() });
  });

  app.post("/recover-db", async (c) => {
    const ip = c.var.clientIp;
    const body = await jsonBody(c);
    const plain = passwordField(body, "password");
    const { ok, locked } = await limitedVerify(limiter, ip, () => password.verify(plain));
    if (!ok) {
      audit("config_db_recover_failed", { ...actorFields(c.var), locked_out: locked }, "warn");
      throw new AdminError("unauthorized", "Wrong password");
    }
    if (db.state.status !== "mismatch") {
      throw new AdminError(
        "conflict",
        "The config database is not waiting for recovery (the bootstrap password hash opens it)",
      );
    }
    const { asidePath } = await db.acknowledgeRecovery();
    audit("config_db_recovered", { ...actorFields(c.var), aside_path: asidePath }, "warn");
    return c.json({ ok: true, aside_path: asidePath });
  });

  return app;
}

export interface WhoamiDeps {
  sessions: AdminSessions;
  version: string;
  /** `bootstrap` until IAM exists. */
  mode?: () => string;
  /** The enabled external login providers (OIDC), for the login page's buttons. */
  externalProviders?: () => Promise<{ name: string; display_name: string | null }[]>;
}

/** `GET /_/api/whoami` → `{mode, version, user, external_providers}`; `user` null without a session. */
export function whoamiHandler(deps: WhoamiDeps): Handler<AdminEnv> {
  return async (c) => {
    const result = await deps.sessions.check(getCookie(c, SESSION_COOKIE), c.var.clientIp);
    return c.json({
      mode: deps.mode?.() ?? "bootstrap",
      version: deps.version,
      user: result.ok ? result.principal.user : null,
      external_providers: (await deps.externalProviders?.()) ?? [],
    });
  };
}

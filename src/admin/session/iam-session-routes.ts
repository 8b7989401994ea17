/**
 * Sessions for IAM users, mounted at `/_/api/admin` (SPEC "Admin API → Session"):
 *   POST /login-as                       {access_key_id, secret_access_key} (public): an IAM
 *                                        user holding `admin` gets an admin session
 *   POST /session/browser-connect        same body (public): any enabled IAM user gets a
 *                                        browse-only session; its key pair is kept for the panel
 *   POST /session/open-browser-connect   (public): a browse-only `$anonymous` session, only when
 *                                        `access.authentication: none`
 *   GET|PUT|DELETE /session/s3-credentials  the caller's own S3 key pair for the browse panel
 *   POST /migrate                        {name?}: the bootstrap key pair becomes an IAM admin user
 *
 * Key checks go through the login limiter like passwords (429 while an address is limited) and
 * compare secrets in constant time. The browse panel's key pairs live in memory, one per
 * session, and end with it (logout, expiry, restart: the user connects again); in a fleet they
 * also travel sealed in a cookie of their own, so every instance answers for them
 * (browse-credentials.ts). A session reads back only its own pair.
 */
import { Hono } from "hono";
import { getCookie } from "hono/cookie";
import type { IamStore } from "../../db/mod.ts";
import { BOOTSTRAP_PRINCIPAL, IamError, type IamIndex } from "../../iam/mod.ts";
import type { ConfigPort } from "../../config/mod.ts";
import type { AuditFn } from "../../observability/mod.ts";
import { actorFields, type AdminEnv, sessionOrigin } from "../admin-env.ts";
import { AdminError, jsonBody } from "../admin-error.ts";
import type { LoginLimiter } from "./login-limiter.ts";
import { limitedVerify } from "./session-routes.ts";
import { type AdminSessions, constantTimeEqual } from "./sessions.ts";
import { BROWSE_COOKIE, type BrowseCredentials, type KeyPair } from "./browse-credentials.ts";

export interface IamSessionDeps {
  sessions: AdminSessions;
  limiter: LoginLimiter;
  audit: AuditFn;
  config: Pick<ConfigPort, "current">;
  store: IamStore;
  /** The IAM index in effect. */
  index: () => IamIndex;
  /** Rebuilds the index after /migrate. */
  onChange: () => Promise<unknown>;
}

function keyPairOf(body: Record<string, unknown>): KeyPair {
  for (const name of ["access_key_id", "secret_access_key"]) {
    if (typeof body[name] !== "string" || body[name] === "") {
      throw new AdminError("bad_request", `Body field "${name}" must be a non-empty string`);
    }
  }
  return {
    access_key_id: body.access_key_id as string,
    secret_access_key: body.secret_access_key as string,
  };
}

export function iamSessionRoutes(deps: IamSessionDeps, browse: BrowseCredentials): Hono<AdminEnv> {
  const { sessions, limiter, audit } = deps;
  const app = new Hono<AdminEnv>();

  /** The enabled IAM user holding the pair, or null; counted by the limiter. */
  async function verifyPair(ip: string, pair: KeyPair) {
    let user: ReturnType<IamIndex["principal"]>;
    const { ok, locked } = await limitedVerify(limiter, ip, () => {
      user = deps.index().principal(pair.access_key_id);
      // Compared even for an unknown key, so timing does not tell which keys exist.
      const secret = user?.secretAccessKey ?? "\u0000no such key";
      return Promise.resolve(constantTimeEqual(secret, pair.secret_access_key) && !!user);
    });
    return { user: ok ? user! : null, locked };
  }

  app.post("/login-as", async (c) => {
    const ip = c.var.clientIp;
    const pair = keyPairOf(await jsonBody(c));
    const { user, locked } = await verifyPair(ip, pair);
    if (!user) {
      audit("admin_login_failed", { access_key_id: pair.access_key_id, ip, locked_out: locked });
      throw new AdminError("unauthorized", "Unknown access key or wrong secret");
    }
    if (!deps.index().isAdmin(user, ip)) {
      audit("admin_login_failed", { user: user.name, ip, reason: "not_admin" }, "warn");
      throw new AdminError(
        "forbidden",
        `User "${user.name}" has no admin permission; POST /session/browser-connect opens a ` +
          `browse-only session`,
      );
    }
    await sessions.prune();
    const issued = await sessions.issue(user.name, true, sessionOrigin(c.var), user.accessKeyId);
    c.header("set-cookie", issued.setCookie);
    audit("admin_login", { user: user.name, ip, session: issued.record.id, via: "login-as" });
    return c.json({
      ok: true,
      user: user.name,
      admin_gui: true,
      expires_at: new Date(issued.record.expiresAt).toISOString(),
    });
  });

  app.post("/session/browser-connect", async (c) => {
    const ip = c.var.clientIp;
    const pair = keyPairOf(await jsonBody(c));
    const { user, locked } = await verifyPair(ip, pair);
    if (!user) {
      audit("browse_connect_failed", { access_key_id: pair.access_key_id, ip, locked_out: locked });
      throw new AdminError("unauthorized", "Unknown access key or wrong secret");
    }
    await sessions.prune();
    const issued = await sessions.issue(user.name, false, sessionOrigin(c.var), user.accessKeyId);
    const sealed = browse.set(issued.record.id, pair, issued.record.expiresAt, c.var.https);
    c.header("set-cookie", issued.setCookie);
    if (sealed !== null) c.header("set-cookie", sealed, { append: true });
    audit("browse_connected", { user: user.name, ip, session: issued.record.id });
    return c.json({
      ok: true,
      user: user.name,
      admin_gui: false,
      expires_at: new Date(issued.record.expiresAt).toISOString(),
    });
  });

  app.post("/session/open-browser-connect", async (c) => {
    const ip = c.var.clientIp;
    if (deps.config.current().access.authentication?.trim().toLowerCase() !== "none") {
      throw new AdminError(
        "forbidden",
        "Open browsing needs access.authentication: none; connect with an access key instead",
      );
    }
    const issued = await sessions.issue("$anonymous", false, sessionOrigin(c.var));
    c.header("set-cookie", issued.setCookie);
    audit("browse_connected", { user: "$anonymous", ip, session: issued.record.id });
    return c.json({
      ok: true,
      user: "$anonymous",
      admin_gui: false,
      expires_at: new Date(issued.record.expiresAt).toISOString(),
    });
  });

  app.get("/session/s3-credentials", (c) => {
    const pair = browse.get(c.var.principal.sessionId, getCookie(c, BROWSE_COOKIE));
    c.header("cache-control", "no-store");
    return c.json(pair ? { stored: true, ...pair } : { stored: false });
  });

  app.put("/session/s3-credentials", async (c) => {
    const pair = keyPairOf(await jsonBody(c));
    const { principal } = c.var;
    const user = deps.index().principal(pair.access_key_id);
    const bootstrap = deps.config.current().access;
    const known = user
      ? constantTimeEqual(user.secretAccessKey, pair.secret_access_key)
      : bootstrap.access_key_id === pair.access_key_id &&
        constantTimeEqual(bootstrap.secret_access_key ?? "", pair.secret_access_key);
    if (!known) throw new AdminError("bad_request", "Unknown access key or wrong secret");
    // A browse-only session keeps to its own user's keys; an admin may hold any valid pair.
    if (!principal.admin && user?.name !== principal.user) {
      throw new AdminError("forbidden", "A browse session may store only its own user's keys");
    }
    const sealed = browse.set(
      principal.sessionId,
      pair,
      // Usable only with the session's own cookie, so the session's end bounds it anyway.
      Date.now() + 24 * 3600_000,
      c.var.https,
    );
    if (sealed !== null) c.header("set-cookie", sealed);
    audit("browse_credentials_stored", {
      ...actorFields(c.var),
      access_key_id: pair.access_key_id,
    });
    return c.json({ stored: true, access_key_id: pair.access_key_id });
  });

  app.delete("/session/s3-credentials", (c) => {
    const removed = browse.delete(c.var.principal.sessionId);
    const cleared = browse.clearCookie(c.var.https);
    if (cleared !== null) c.header("set-cookie", cleared);
    return c.json({ stored: false, removed });
  });

  app.post("/migrate", async (c) => {
    const body = await jsonBody(c).catch(() => ({} as Record<string, unknown>));
    const name = body.name === undefined ? "admin" : body.name;
    if (typeof name !== "string") {
      throw new AdminError("bad_request", `Body field "name" must be a string`);
    }
    const config = deps.config.current();
    if (config.access.iam_mode === "declarative") {
      throw new AdminError(
        "iam_declarative",
        "IAM is managed by the config file (access.iam_mode: declarative); add the admin user " +
          "to access.iam_users there",
      );
    }
    const { access_key_id, secret_access_key } = config.access;
    if (!access_key_id || !secret_access_key) {
      throw new AdminError("conflict", "There is no bootstrap key pair to migrate");
    }
    let user;
    try {
      user = await deps.store.createUser({
        name,
        access_key_id,
        secret_access_key,
        permissions: [{ effect: "Allow", actions: ["*"], resources: ["*"] }],
      });
    } catch (err) {
      if (err instanceof IamError) {
        throw new AdminError(err.kind === "invalid" ? "bad_request" : "conflict", err.message);
      }
      throw err;
    }
    await deps.onChange();
    audit("iam_bootstrap_migrated", {
      ...actorFields(c.var),
      target_user: user.name,
      access_key_id,
    }, "warn");
    return c.json({
      migrated: true,
      user: { id: user.id, name: user.name, access_key_id: user.access_key_id },
      // The pair now signs as this IAM user: its permissions apply, and rotating its keys
      // retires the old pair once the bootstrap pair is removed from the config.
      next_step: "Remove access.access_key_id / access.secret_access_key (or their SVC_ " +
        "variables) from the config so the key is governed by IAM alone",
    }, 201);
  });

  return app;
}

/** Whether a session's user may still hold it (see session-guard.ts `stillEntitled`). */
export function sessionEntitlement(index: () => IamIndex) {
  return (
    principal: { user: string; admin: boolean; accessKeyId?: string | null },
    clientIp: string,
  ): boolean => {
    if (principal.user === BOOTSTRAP_PRINCIPAL || principal.user === "$anonymous") return true;
    const user = index().principalByName(principal.user);
    if (!user) return false;
    // Keys rotated since login: the session ends like a disabled user's.
    if (principal.accessKeyId && principal.accessKeyId !== user.accessKeyId) return false;
    return !principal.admin || index().isAdmin(user, clientIp);
  };
}

/**
 * OAuth/OIDC admin login (SPEC Authentication 8 and 10), public routes under `/_/api/admin`:
 *   GET /oauth/authorize/:provider  → 302 to the provider, with PKCE (S256), state and nonce
 *   GET /oauth/callback             ← the provider's answer: code exchanged, ID token verified,
 *                                     the identity bound to its user (or a new external user
 *                                     provisioned when a mapping rule gives it groups), a session
 *                                     issued: admin when the user holds `admin`, else browse-only.
 * A flow lives ten minutes, is used once, and must come back to the address that started it. The
 * callback answers a small page that moves to `/_/` from this origin: a redirect chain started on
 * the provider's site would not carry the SameSite=Strict session cookie to the UI.
 */
import { Hono } from "hono";
import type { Context } from "hono";
import { type OidcClient, OidcError, randomToken } from "../../auth/mod.ts";
import type { ExtAuthStore } from "../../db/mod.ts";
import { IamError, type IamIndex, mappedGroups } from "../../iam/mod.ts";
import type { ConfigPort } from "../../config/mod.ts";
import type { AuditFn } from "../../observability/mod.ts";
import type { AdminEnv } from "../admin-env.ts";
import { AdminError, type AdminErrorCode } from "../admin-error.ts";
import type { BrowseCredentials } from "./iam-session-routes.ts";
import type { AdminSessions } from "./sessions.ts";

export interface OauthRouteDeps {
  store: ExtAuthStore;
  oidc: OidcClient;
  sessions: AdminSessions;
  /** Browse-only sessions get their user's key pair for the object browser. */
  browse: BrowseCredentials;
  config: Pick<ConfigPort, "current">;
  audit: AuditFn;
  index: () => IamIndex;
  /** Rebuilds the IAM index (after a user was provisioned). */
  onChange: () => Promise<unknown>;
  /** Counts each callback's outcome (svc_oauth_logins_total). */
  count?: (outcome: string) => void;
  now?: () => number;
}

interface PendingFlow {
  provider: string;
  verifier: string;
  nonce: string;
  redirectUri: string;
  ip: string;
  expiresAt: number;
}

const FLOW_TTL_MS = 10 * 60_000;
/** Flows started and not finished, at most: a stranger cannot grow the table without bound. */
const MAX_PENDING = 10_000;

/** The origin clients reach svc at (the forwarded one behind a trusted proxy). */
function publicOrigin(c: Context<AdminEnv>, trustProxy: boolean): string {
  const url = new URL(c.req.url);
  if (trustProxy) {
    const host = c.req.header("x-forwarded-host")?.split(",")[0].trim();
    const proto = c.req.header("x-forwarded-proto")?.split(",")[0].trim();
    if (host) return `${proto === "https" ? "https" : url.protocol.slice(0, -1)}://${host}`;
  }
  return url.origin;
}

/** A user name from the identity: its email, else provider and subject, in the allowed set. */
export function externalUserName(provider: string, claims: Record<string, unknown>): string {
  const source = typeof claims.email === "string" && claims.email !== ""
    ? claims.email
    : `${provider}-${claims.sub}`;
  return source.replace(/[^A-Za-z0-9_+=,.@-]/g, "-").replace(/^\$+/, "").slice(0, 64) || "user";
}

export function oauthRoutes(deps: OauthRouteDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const now = deps.now ?? Date.now;
  const pending = new Map<string, PendingFlow>();

  const prune = () => {
    const at = now();
    for (const [state, flow] of pending) if (flow.expiresAt <= at) pending.delete(state);
  };

  app.get("/oauth/authorize/:provider", async (c) => {
    const name = c.req.param("provider");
    const provider = await deps.store.providerByName(name);
    if (!provider || !provider.enabled) {
      throw new AdminError("not_found", `No enabled auth provider named "${name}"`);
    }
    prune();
    if (pending.size >= MAX_PENDING) {
      throw new AdminError("too_many_requests", "Too many logins in progress; try again shortly");
    }
    const trustProxy = deps.config.current().advanced.trust_proxy_headers;
    const redirectUri = `${publicOrigin(c, trustProxy)}/_/api/admin/oauth/callback`;
    const flow = { state: randomToken(), nonce: randomToken(), verifier: randomToken() };
    let location: string;
    try {
      location = await deps.oidc.authorizeUrl(provider, redirectUri, flow);
    } catch (err) {
      throw new AdminError("bad_gateway", `Provider "${name}": ${(err as Error).message}`);
    }
    pending.set(flow.state, {
      provider: name,
      verifier: flow.verifier,
      nonce: flow.nonce,
      redirectUri,
      ip: c.var.clientIp,
      expiresAt: now() + FLOW_TTL_MS,
    });
    return c.redirect(location, 302);
  });

  app.get("/oauth/callback", async (c) => {
    const ip = c.var.clientIp;
    const state = c.req.query("state") ?? "";
    const flow = pending.get(state);
    pending.delete(state);
    if (!flow || flow.expiresAt <= now() || flow.ip !== ip) {
      deps.audit("oauth_login_failed", { ip, reason: "unknown_state" }, "warn");
      deps.count?.("unknown_state");
      throw new AdminError("bad_request", "Unknown, used or expired login; start the login again");
    }
    const refused = (
      reason: string,
      message: string,
      code: AdminErrorCode = "forbidden",
    ): never => {
      deps.audit("oauth_login_failed", { ip, provider: flow.provider, reason }, "warn");
      deps.count?.(reason);
      throw new AdminError(code, message);
    };
    const error = c.req.query("error");
    if (error) refused("provider_error", `The provider refused the login: ${error}`);
    const provider = await deps.store.providerByName(flow.provider);
    if (!provider || !provider.enabled) {
      refused("provider_gone", `Auth provider "${flow.provider}" is gone or disabled`);
    }
    let claims: Record<string, unknown>;
    try {
      claims = await deps.oidc.signIn(provider!, flow.redirectUri, c.req.query("code") ?? "", flow);
    } catch (err) {
      if (!(err instanceof OidcError)) throw err;
      return refused("token_invalid", `Login through "${flow.provider}" failed: ${err.message}`);
    }
    const rules = await deps.store.listRules();
    let signedIn: { user: string; created: boolean };
    try {
      signedIn = await deps.store.signIn({
        providerId: provider!.id,
        subject: String(claims.sub),
        email: typeof claims.email === "string" ? claims.email : null,
        claims,
        name: externalUserName(flow.provider, claims),
        groups: mappedGroups(rules, flow.provider, claims),
      });
    } catch (err) {
      if (!(err instanceof IamError)) throw err;
      return refused("no_mapping", `No account for this identity: ${err.message}`);
    }
    if (signedIn.created) {
      await deps.onChange();
      deps.audit("oauth_user_provisioned", { user: signedIn.user, provider: flow.provider, ip });
    }
    const user = deps.index().principalByName(signedIn.user);
    if (!user) refused("user_disabled", `User "${signedIn.user}" is disabled`);
    const admin = deps.index().isAdmin(user!, ip);
    await deps.sessions.prune();
    const issued = await deps.sessions.issue(user!.name, admin, ip);
    if (!admin) {
      const pair = { access_key_id: user!.accessKeyId, secret_access_key: user!.secretAccessKey };
      deps.browse.set(issued.record.id, pair, issued.record.expiresAt);
    }
    c.header("set-cookie", issued.setCookie);
    c.header("cache-control", "no-store");
    deps.count?.("ok");
    deps.audit("admin_login", {
      user: user!.name,
      ip,
      session: issued.record.id,
      via: `oauth:${flow.provider}`,
      admin_gui: admin,
    });
    return c.html(
      '<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=/_/">' +
        '<title>Signed in</title><p>Signed in. <a href="/_/">Continue</a></p>',
    );
  });

  return app;
}

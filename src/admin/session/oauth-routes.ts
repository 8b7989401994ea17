/**
 * OAuth/OIDC admin login (SPEC Authentication 8 and 10), public routes under `/_/api/admin`:
 *   GET /oauth/authorize/:provider  → 302 to the provider, with PKCE (S256), state and nonce
 *   GET /oauth/callback             ← the provider's answer: code exchanged, ID token verified,
 *                                     the identity bound to its user (or a new external user
 *                                     provisioned when a mapping rule gives it groups), a session
 *                                     issued: admin when the user holds `admin`, else browse-only.
 * A flow lives ten minutes in a sealed cookie (oauth-flow.ts: no server table a stranger could
 * fill), is used once, and must come back to the address that started it; one address may start
 * at most 30 a minute. Whatever goes wrong with the provider's answer is a refusal (audited,
 * counted), never a 500. The callback answers a small page that moves to `/_/` from this origin: a redirect chain started on
 * the provider's site would not carry the SameSite=Strict session cookie to the UI.
 */
import { Hono } from "hono";
import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import { type OidcClient, OidcError, randomToken } from "../../auth/mod.ts";
import type { ExtAuthStore } from "../../db/mod.ts";
import { IamError, type IamIndex, mappedGroups } from "../../iam/mod.ts";
import type { ConfigPort } from "../../config/mod.ts";
import type { AuditFn } from "../../observability/mod.ts";
import { type AdminEnv, sessionOrigin } from "../admin-env.ts";
import { AdminError, type AdminErrorCode } from "../admin-error.ts";
import type { BrowseCredentials } from "./browse-credentials.ts";
import type { AdminSessions } from "./sessions.ts";
import {
  AuthorizeBudget,
  FLOW_COOKIE,
  FLOW_TTL_MS,
  flowCookie,
  type LoginFlow,
  openFlow,
  sealFlow,
  SpentStates,
} from "./oauth-flow.ts";

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
  /** The bootstrap hash in force: the flow cookie's key is derived from it. */
  passwordHash: () => string;
  /** Authorize calls one address may make (default: 30 a minute). */
  budget?: AuthorizeBudget;
  now?: () => number;
}

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
  const budget = deps.budget ?? new AuthorizeBudget();
  const spent = new SpentStates();

  app.get("/oauth/authorize/:provider", async (c) => {
    const name = c.req.param("provider");
    const provider = await deps.store.providerByName(name);
    if (!provider || !provider.enabled) {
      throw new AdminError("not_found", `No enabled auth provider named "${name}"`);
    }
    if (!budget.take(c.var.clientIp, now())) {
      deps.audit("oauth_authorize_limited", { ip: c.var.clientIp, provider: name }, "warn");
      throw new AdminError(
        "too_many_requests",
        "Too many logins started from this address; try again in a minute",
      );
    }
    const trustProxy = deps.config.current().advanced.trust_proxy_headers;
    const origin = publicOrigin(c, trustProxy);
    const redirectUri = `${origin}/_/api/admin/oauth/callback`;
    const flow = { state: randomToken(), nonce: randomToken(), verifier: randomToken() };
    let location: string;
    try {
      location = await deps.oidc.authorizeUrl(provider, redirectUri, flow);
    } catch (err) {
      throw new AdminError("bad_gateway", `Provider "${name}": ${(err as Error).message}`);
    }
    const sealed = sealFlow({
      provider: name,
      ...flow,
      redirectUri,
      ip: c.var.clientIp,
      expiresAt: now() + FLOW_TTL_MS,
    }, deps.passwordHash());
    const secure = origin.startsWith("https:");
    c.header("set-cookie", flowCookie(sealed, secure, FLOW_TTL_MS / 1000));
    c.header("cache-control", "no-store");
    return c.redirect(location, 302);
  });

  app.get("/oauth/callback", async (c) => {
    const ip = c.var.clientIp;
    const state = c.req.query("state") ?? "";
    const presented = getCookie(c, FLOW_COOKIE);
    const opened = openFlow(presented, deps.passwordHash());
    if (presented !== undefined) {
      const secure = publicOrigin(c, deps.config.current().advanced.trust_proxy_headers)
        .startsWith("https:");
      c.header("set-cookie", flowCookie("", secure, 0)); // used once, whatever the outcome
    }
    const flow: LoginFlow | null = opened && opened.state === state && opened.ip === ip &&
        opened.expiresAt > now() && spent.spend(state, opened.expiresAt, now())
      ? opened
      : null;
    if (!flow) {
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
      const callback = new URL(c.req.url).searchParams;
      claims = await deps.oidc.signIn(provider!, flow.redirectUri, callback, flow);
    } catch (err) {
      if (err instanceof OidcError) {
        return refused("token_invalid", `Login through "${flow.provider}" failed: ${err.message}`);
      }
      return refused(
        "provider_error",
        `Login through "${flow.provider}" failed: ${(err as Error).message}`,
        "bad_gateway",
      );
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
        groups: mappedGroups(rules, flow.provider, claims, { checkVerifiedEmail: true }),
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
    const issued = await deps.sessions.issue(
      user!.name,
      admin,
      sessionOrigin(c.var),
      user!.accessKeyId,
    );
    let sealed: string | null = null;
    if (!admin) {
      const pair = { access_key_id: user!.accessKeyId, secret_access_key: user!.secretAccessKey };
      sealed = deps.browse.set(issued.record.id, pair, issued.record.expiresAt, c.var.https);
    }
    c.header("set-cookie", issued.setCookie, { append: true });
    if (sealed !== null) c.header("set-cookie", sealed, { append: true });
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

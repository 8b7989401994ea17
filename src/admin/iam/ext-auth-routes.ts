/**
 * External authentication admin routes under `/_/api/admin` (SPEC Admin API → External auth):
 *   GET|POST /ext-auth/providers, PUT|DELETE /ext-auth/providers/:id, POST .../:id/test
 *   GET|POST /ext-auth/mappings, PUT|DELETE /ext-auth/mappings/:id, POST /ext-auth/mappings/preview
 *   GET /ext-auth/identities (read-only, never gated), POST /ext-auth/sync-memberships,
 *   GET /ext-auth/version
 * Mutations are refused in declarative mode (403 `iam_declarative`), audited, and rebuild the IAM
 * index (which also publishes to config sync). Client secrets are accepted, never answered.
 */
import { Hono } from "hono";
import type { OidcClient } from "../../auth/mod.ts";
import type { ExtAuthStore } from "../../db/mod.ts";
import { mappedGroups } from "../../iam/mod.ts";
import type { ConfigPort } from "../../config/mod.ts";
import type { AuditFn } from "../../observability/mod.ts";
import type { AdminEnv } from "../admin-env.ts";
import { AdminError } from "../admin-error.ts";
import { validBody } from "../valid-body.ts";
import {
  createProviderBody,
  createRuleBody,
  previewBody,
  updateProviderBody,
  updateRuleBody,
} from "./iam-bodies.ts";
import { changeAnswer, declarativeIamGate, store } from "./iam-routes.ts";

export interface ExtAuthRouteDeps {
  store: ExtAuthStore;
  oidc: OidcClient;
  config: Pick<ConfigPort, "current">;
  audit: AuditFn;
  /** Rebuilds the IAM index after a change. */
  onChange: () => Promise<unknown>;
  /** The IAM version in effect (the index's). */
  indexVersion: () => number;
}

export function extAuthRoutes(deps: ExtAuthRouteDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const gate = declarativeIamGate(deps.config);
  for (const path of ["/ext-auth/providers", "/ext-auth/providers/*", "/ext-auth/mappings"]) {
    app.use(path, gate);
  }
  app.use("/ext-auth/mappings/:id", async (c, next) => {
    // The preview changes nothing: allowed in declarative mode too.
    if (c.req.param("id") === "preview") return await next();
    return await gate(c, next);
  });
  app.use("/ext-auth/sync-memberships", gate);

  const changed = changeAnswer(deps);

  app.get(
    "/ext-auth/providers",
    async (c) => c.json({ providers: await store(() => deps.store.listProviders()) }),
  );

  app.post("/ext-auth/providers", async (c) => {
    const body = await validBody(c, createProviderBody);
    const provider = await store(() => deps.store.createProvider(body));
    return changed(c, "ext_auth_provider_created", { provider: provider.name }, provider, 201);
  });

  app.put("/ext-auth/providers/:id", async (c) => {
    const body = await validBody(c, updateProviderBody);
    const provider = await store(() => deps.store.updateProvider(c.req.param("id"), body));
    return changed(c, "ext_auth_provider_updated", { provider: provider.name }, provider);
  });

  app.delete("/ext-auth/providers/:id", async (c) => {
    await store(() => deps.store.deleteProvider(c.req.param("id")));
    return changed(c, "ext_auth_provider_deleted", { provider_id: c.req.param("id") }, {
      ok: true,
    });
  });

  app.post("/ext-auth/providers/:id/test", async (c) => {
    const id = c.req.param("id");
    const provider = (await deps.store.listProviders()).find((p) => p.id === id);
    if (!provider) throw new AdminError("not_found", `No auth provider with id "${id}"`);
    try {
      const discovery = await deps.oidc.discover(provider.issuer_url);
      return c.json({ ok: true, ...discovery });
    } catch (err) {
      return c.json({ ok: false, error: (err as Error).message });
    }
  });

  app.get(
    "/ext-auth/mappings",
    async (c) => c.json({ mappings: await store(() => deps.store.listRules()) }),
  );

  app.post("/ext-auth/mappings/preview", async (c) => {
    const body = await validBody(c, previewBody);
    const claims = body.claims ?? (body.email !== undefined ? { email: body.email } : null);
    if (claims === null) {
      throw new AdminError("bad_request", 'Body needs "email" or a "claims" object');
    }
    const rules = await deps.store.listRules();
    return c.json({ groups: mappedGroups(rules, body.provider, claims) });
  });

  app.post("/ext-auth/mappings", async (c) => {
    const body = await validBody(c, createRuleBody);
    const rule = await store(() => deps.store.createRule(body));
    return changed(c, "ext_auth_mapping_created", { group: rule.group }, rule, 201);
  });

  app.put("/ext-auth/mappings/:id", async (c) => {
    const body = await validBody(c, updateRuleBody);
    const rule = await store(() => deps.store.updateRule(c.req.param("id"), body));
    return changed(c, "ext_auth_mapping_updated", { group: rule.group }, rule);
  });

  app.delete("/ext-auth/mappings/:id", async (c) => {
    await store(() => deps.store.deleteRule(c.req.param("id")));
    return changed(c, "ext_auth_mapping_deleted", { mapping_id: c.req.param("id") }, { ok: true });
  });

  app.get(
    "/ext-auth/identities",
    async (c) => c.json({ identities: await deps.store.listIdentities() }),
  );

  app.post("/ext-auth/sync-memberships", async (c) => {
    const rules = await deps.store.listRules();
    // The stored claims are a token's: the rules' verified-email requirement applies.
    const options = { checkVerifiedEmail: true };
    const changedUsers = await store(() =>
      deps.store.syncMemberships((provider, claims) =>
        mappedGroups(rules, provider, claims, options)
      )
    );
    return changed(c, "ext_auth_memberships_synced", { users_changed: changedUsers }, {
      ok: true,
      users_changed: changedUsers,
    });
  });

  app.get("/ext-auth/version", (c) => c.json({ version: deps.indexVersion() }));

  return app;
}

/** Rows of the external login routes: OIDC providers, group mapping rules, identities. */
import {
  createProviderBody,
  createRuleBody,
  previewBody,
  updateProviderBody,
  updateRuleBody,
} from "../iam/iam-bodies.ts";
import { ref } from "./components.ts";
import { area, type RouteSpec } from "./route-spec.ts";

const ext = area("External login");
const provider = { id: "The provider's id." };
const rule = { id: "The rule's id." };

export const EXT_AUTH_ROUTES: RouteSpec[] = [
  ext.get("/ext-auth/providers", "List OIDC providers (secrets shown as has_secret)", {
    returns: "`{providers}`.",
  }),
  ext.post("/ext-auth/providers", "Add an OIDC provider", {
    body: createProviderBody,
    status: 201,
    returns: "The provider.",
  }),
  ext.put("/ext-auth/providers/:id", "Change an OIDC provider", {
    params: provider,
    body: updateProviderBody,
    returns: "The provider.",
  }),
  ext.delete("/ext-auth/providers/:id", "Remove an OIDC provider", {
    params: provider,
    response: ref("Ok"),
  }),
  ext.post("/ext-auth/providers/:id/test", "Try the provider's discovery document", {
    params: provider,
    returns: "`{ok: true, …discovery}` or `{ok: false, error}`.",
  }),
  ext.get("/ext-auth/mappings", "List group mapping rules", { returns: "`{mappings}`." }),
  ext.post("/ext-auth/mappings", "Add a group mapping rule", {
    body: createRuleBody,
    status: 201,
    returns: "The rule.",
  }),
  ext.put("/ext-auth/mappings/:id", "Change a group mapping rule", {
    params: rule,
    body: updateRuleBody,
    returns: "The rule.",
  }),
  ext.delete("/ext-auth/mappings/:id", "Remove a group mapping rule", {
    params: rule,
    response: ref("Ok"),
  }),
  ext.post("/ext-auth/mappings/preview", "The groups the rules give an identity", {
    body: previewBody,
    returns: "`{groups}` (empty: no account would be made).",
  }),
  ext.get("/ext-auth/identities", "List external identities", { returns: "`{identities}`." }),
  ext.post("/ext-auth/sync-memberships", "Apply the rules again to every external user", {
    returns: "`{ok, users_changed}`.",
  }),
  ext.get("/ext-auth/version", "The IAM index version in effect", { returns: "`{version}`." }),
];

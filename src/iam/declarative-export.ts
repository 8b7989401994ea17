/**
 * `GET /config/declarative-iam-export`: the database's IAM as an `access:` YAML fragment with
 * `iam_mode: declarative`, in the shape `desiredIam` reads back, so export → apply → export is
 * byte-identical and the apply changes nothing (SPEC "Declarative IAM" 6-7).
 *
 * Redacted (default): user `secret_access_key: ""` and provider `client_secret: null` (an apply
 * keeps the stored secrets for those). With secrets: the secrets, each user's `auth_source` and
 * the `external_identities` bindings, which only `/config/declarative-iam-apply` accepts back
 * (the main config file rejects them).
 */
import { stringify } from "yaml";
import type { IamState } from "./reconcile.ts";

export function declarativeIamFragment(state: IamState, includeSecrets: boolean) {
  const access: Record<string, unknown> = {
    iam_mode: "declarative",
    iam_groups: state.groups.map((g) => ({
      name: g.name,
      description: g.description,
      permissions: g.permissions,
    })),
    iam_users: state.users.map((u) => ({
      name: u.name,
      access_key_id: u.access_key_id,
      secret_access_key: includeSecrets ? u.secret_access_key : "",
      enabled: u.enabled,
      groups: u.groups,
      permissions: u.permissions,
      ...(includeSecrets ? { auth_source: u.auth_source } : {}),
    })),
    auth_providers: state.providers.map((p) => ({
      name: p.name,
      provider_type: p.provider_type,
      enabled: p.enabled,
      priority: p.priority,
      ...(p.display_name === null ? {} : { display_name: p.display_name }),
      client_id: p.client_id,
      client_secret: includeSecrets ? p.client_secret : null,
      issuer_url: p.issuer_url,
      scopes: p.scopes,
    })),
    group_mapping_rules: state.rules.map((r) => ({ ...r })),
  };
  if (includeSecrets) {
    access.external_identities = state.identities.map((i) => ({
      user: i.user,
      provider: i.provider,
      subject: i.subject,
      email: i.email,
      claims: i.claims,
    }));
  }
  return { access };
}

export function declarativeIamExport(state: IamState, includeSecrets: boolean): string {
  return stringify(declarativeIamFragment(state, includeSecrets), {
    lineWidth: 0,
    aliasDuplicateObjects: false,
  });
}

/**
 * External login (OIDC): providers (the discovery test, add, remove), the group mapping rules that
 * decide who gets an account and which groups (with a preview), the identities bound so far, and a
 * re-evaluation of every external user's groups. Client secrets are sent, never shown.
 */
import { useState } from "preact/hooks";
import { call } from "../api.ts";
import { html } from "../html.ts";
import { ErrorText, Notice, RowsTable, Section, useAction, useLoad, valueOf } from "../widgets.ts";
import { ConfirmButton } from "./users.ts";

type Row = Record<string, unknown>;

export function ExtAuthPage() {
  const providers = useLoad(() => call<{ providers: Row[] }>("ext-auth/providers"));
  const mappings = useLoad(() => call<{ mappings: Row[] }>("ext-auth/mappings"));
  const identities = useLoad(() => call<{ identities: Row[] }>("ext-auth/identities"));
  const action = useAction();
  const [provider, setProvider] = useState<Record<string, string>>({
    scopes: "openid email profile",
  });
  const [rule, setRule] = useState<Record<string, string>>({ match_type: "email_domain" });
  const [probe, setProbe] = useState<Record<string, string>>({});
  const field =
    (state: Record<string, string>, set: (v: Record<string, string>) => void) =>
    (name: string) =>
    (e: Event) => set({ ...state, [name]: valueOf(e) });
  const setP = field(provider, setProvider);
  const setR = field(rule, setRule);
  const setQ = field(probe, setProbe);
  const reloadAll = () => {
    providers.reload();
    mappings.reload();
    identities.reload();
  };
  const remove = (path: string, what: string) =>
    action.run(() => call(path, { method: "DELETE" }), () => {
      reloadAll();
      return `${what} removed.`;
    });
  const addProvider = (event: Event) => {
    event.preventDefault();
    action.run(() => call("ext-auth/providers", { body: provider }), () => {
      providers.reload();
      return `Provider "${provider.name}" added. Its login button shows on the login page.`;
    });
  };
  const addRule = (event: Event) => {
    event.preventDefault();
    const body = {
      ...rule,
      provider: rule.provider || null,
      priority: Number(rule.priority ?? 0),
      // Email rules accept only a provider-verified address unless the operator unticks it.
      require_verified_email: rule.require_verified_email !== "false",
    };
    action.run(() => call("ext-auth/mappings", { body }), () => {
      mappings.reload();
      return "Mapping rule added.";
    });
  };
  const preview = (event: Event) => {
    event.preventDefault();
    action.run(
      () => call<{ groups: string[] }>("ext-auth/mappings/preview", { body: probe }),
      (r) => r.groups.length ? `Groups: ${r.groups.join(", ")}.` : "No rule matches: no account.",
    );
  };
  return html`
    <div>
      <${Section} title="Login providers (OIDC)" actions=${html`<button onClick=${reloadAll}>Refresh</button>`}>
        <${ErrorText} error=${action.error ?? providers.error} />
        <${Notice} text=${action.notice} />
        <${RowsTable} rows=${providers.data?.providers ?? []}
          columns=${["name", "display_name", "issuer_url", "client_id", "has_secret", "enabled"]}
          actions=${(row: Row) =>
            html`
              <button onClick=${() =>
                action.run(
                  () =>
                    call<{ ok: boolean; error?: string }>(`ext-auth/providers/${row.id}/test`, {
                      method: "POST",
                    }),
                  (r) => r.ok ? "Discovery works." : `Discovery failed: ${r.error}`,
                )}>Test</button>
              <${ConfirmButton} label="Remove" onConfirm=${() =>
                remove(`ext-auth/providers/${row.id}`, `Provider "${row.name}"`)} />
            `} />
        <form class="stack" onSubmit=${addProvider}>
          <label>Name <input required value=${provider.name ?? ""} onInput=${setP(
            "name",
          )} /></label>
          <label>Display name <input value=${provider.display_name ?? ""} onInput=${setP(
            "display_name",
          )} /></label>
          <label>Issuer URL <input required placeholder="https://accounts.example.com"
            value=${provider.issuer_url ?? ""} onInput=${setP("issuer_url")} /></label>
          <label>Client ID <input required value=${provider.client_id ?? ""} onInput=${setP(
            "client_id",
          )} /></label>
          <label>Client secret <input type="password" value=${provider.client_secret ?? ""}
            onInput=${setP("client_secret")} /></label>
          <label>Scopes <input value=${provider.scopes} onInput=${setP("scopes")} /></label>
          <p class="muted">Redirect URI to register: ${location
            .origin}/_/api/admin/oauth/callback</p>
          <button type="submit" class="primary" disabled=${action.busy}>Add provider</button>
        </form>
        <//>
        <${Section} title="Group mapping rules">
          <p class="muted">A new external user gets an account only when a rule gives it a group.</p>
          <${RowsTable} rows=${mappings.data?.mappings ?? []}
            columns=${[
              "provider",
              "priority",
              "match_type",
              "match_field",
              "match_value",
              "group",
              "require_verified_email",
            ]}
            actions=${(row: Row) =>
              html`<${ConfirmButton} label="Remove" onConfirm=${() =>
                remove(`ext-auth/mappings/${row.id}`, "Mapping rule")} />`} />
          <form class="stack" onSubmit=${addRule}>
            <label>Provider (empty: all) <input value=${rule.provider ?? ""} onInput=${setR(
              "provider",
            )} /></label>
            <label>Match <select value=${rule.match_type} onChange=${setR("match_type")}>
            <option value="email_domain">email domain</option>
            <option value="email">email address</option>
            <option value="equals">claim equals</option>
          </select></label>
            <label>Claim <input placeholder="email" value=${rule.match_field ?? ""} onInput=${setR(
              "match_field",
            )} /></label>
            <label>Value <input required value=${rule.match_value ?? ""} onInput=${setR(
              "match_value",
            )} /></label>
            <label>Group <input required value=${rule.group ?? ""} onInput=${setR(
              "group",
            )} /></label>
            <label>Priority <input type="number" value=${rule.priority ?? "0"} onInput=${setR(
              "priority",
            )} /></label>
            <label><input type="checkbox" checked=${rule.require_verified_email !== "false"}
              onChange=${(e: Event) =>
                setRule({
                  ...rule,
                  require_verified_email: String((e.target as HTMLInputElement).checked),
                })} /> Email rules need a verified email</label>
            <button type="submit" class="primary" disabled=${action.busy}>Add rule</button>
          </form>
          <form class="inline" onSubmit=${preview}>
            <input required placeholder="provider" value=${probe.provider ?? ""} onInput=${setQ(
              "provider",
            )} />
            <input required placeholder="email" value=${probe.email ?? ""} onInput=${setQ(
              "email",
            )} />
            <button type="submit">Preview groups</button>
            <button type="button" onClick=${() =>
              action.run(
                () =>
                  call<{ users_changed: number }>("ext-auth/sync-memberships", { method: "POST" }),
                (r) => `${r.users_changed} user(s) changed.`,
              )}>Re-apply rules to every external user</button>
          </form>
          <//>
          <${Section} title="External identities">
            <${RowsTable} rows=${identities.data?.identities ?? []}
              columns=${["user", "provider", "subject", "email", "created_at"]} />
            <//>
            </div>
  `;
}

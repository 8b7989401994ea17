/**
 * Login: the bootstrap password, or an IAM access key and secret. A key pair with admin rights
 * opens the console (login-as); any other valid pair opens a browse-only session that sees what
 * that user may read.
 */
import { useEffect, useState } from "preact/hooks";
import { ApiError, call } from "../api.ts";
import type { Session } from "../app.ts";
import { html } from "../html.ts";
import { ErrorText, Notice, useAction } from "../widgets.ts";

export function LoginPage(
  { message, onLogin }: { message: string | null; onLogin: (s: Session) => void },
) {
  const [mode, setMode] = useState<"password" | "keys">("password");
  const [password, setPassword] = useState("");
  const [keyId, setKeyId] = useState("");
  const [secret, setSecret] = useState("");
  const action = useAction();
  const [providers, setProviders] = useState<{ name: string; display_name: string | null }[]>([]);
  useEffect(() => {
    call<{ external_providers: { name: string; display_name: string | null }[] }>(
      "/_/api/whoami",
      { login: true },
    ).then((who) => setProviders(who.external_providers ?? []), () => {});
  }, []);

  const submit = (event: Event) => {
    event.preventDefault();
    action.run(async () => {
      if (mode === "password") {
        const r = await call<{ user: string; admin_gui: boolean }>("login", {
          body: { password },
          login: true,
        });
        onLogin({ user: r.user, admin: r.admin_gui });
        return;
      }
      const pair = { access_key_id: keyId.trim(), secret_access_key: secret };
      try {
        const r = await call<{ user: string }>("login-as", { body: pair, login: true });
        onLogin({ user: r.user, admin: true });
      } catch (err) {
        // Not an admin: the same pair still opens a browse-only session.
        if (!(err instanceof ApiError) || err.status !== 403) throw err;
        const r = await call<{ user: string }>("session/browser-connect", {
          body: pair,
          login: true,
        });
        onLogin({ user: r.user, admin: false });
      }
    });
  };

  return html`
    <main class="login" id="main">
      <form class="card" onSubmit=${submit} aria-labelledby="login-title">
          <h1 id="login-title">svc console</h1>
          <${Notice} text=${message} />
          <div class="tabs" role="tablist">
            <button type="button" role="tab" aria-selected=${mode === "password"}
              onClick=${() => setMode("password")}>Admin password</button>
            <button type="button" role="tab" aria-selected=${mode === "keys"}
              onClick=${() => setMode("keys")}>Access key</button>
          </div>
          ${mode === "password"
            ? html`<label>Password
            <input type="password" name="password" autocomplete="current-password" required
              value=${password} onInput=${(e: Event) =>
              setPassword((e.target as HTMLInputElement).value)} />
          </label>`
            : html`
              <label>Access key ID
                          <input name="access_key_id" autocomplete="username" required value=${keyId}
                            onInput=${(e: Event) =>
                              setKeyId((e.target as HTMLInputElement).value)} />
                        </label>
              <label>Secret access key
                          <input type="password" name="secret_access_key" autocomplete="current-password"
                            required value=${secret}
                            onInput=${(e: Event) =>
                              setSecret((e.target as HTMLInputElement).value)} />
                        </label>
            `}
          <${ErrorText} error=${action.error} />
          <button type="submit" class="primary" disabled=${action.busy}>
            ${action.busy ? "Logging in…" : "Log in"}
          </button>
          ${providers.map((p) =>
            html`<a class="button" href=${`/_/api/admin/oauth/authorize/${
              encodeURIComponent(p.name)
            }`}>
              Sign in with ${p.display_name ?? p.name}</a>`
          )}
        </form>
    </main>
  `;
}

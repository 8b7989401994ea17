/** Backends: the list with availability; add one (an S3 endpoint is connection-tested first); remove. */
import { useState } from "preact/hooks";
import { call } from "../api.ts";
import { html } from "../html.ts";
import { ErrorText, Notice, RowsTable, Section, useAction, useLoad, valueOf } from "../widgets.ts";
import { ConfirmButton } from "./users.ts";

export function BackendsPage() {
  const backends = useLoad(() =>
    call<{ backends: Record<string, unknown>[]; default_backend: string; named: boolean }>(
      "backends",
    )
  );
  const action = useAction();
  const [form, setForm] = useState<Record<string, string>>({ type: "s3", name: "" });
  const set = (name: string) => (e: Event) => setForm({ ...form, [name]: valueOf(e) });
  const spec = () => {
    const body: Record<string, unknown> = { name: form.name.trim(), type: form.type };
    if (form.type === "filesystem") body.path = form.path;
    else {
      for (const k of ["endpoint", "region", "access_key_id", "secret_access_key"]) {
        if (form[k]) body[k] = form[k];
      }
      body.force_path_style = true;
    }
    return body;
  };
  const test = () =>
    action.run(
      () => call<{ buckets: unknown[] }>("test-s3", { body: { ...spec(), name: undefined } }),
      (r) =>
        `Connection works: ${Array.isArray(r.buckets) ? r.buckets.length : 0} bucket(s) visible.`,
    );
  const add = (event: Event) => {
    event.preventDefault();
    action.run(() => call("backends", { body: spec() }), () => {
      backends.reload();
      return `Backend "${form.name}" added.`;
    });
  };
  return html`
    <div>
      <${Section} title="Backends" actions=${html`<button onClick=${backends.reload}>Refresh</button>`}>
          <${ErrorText} error=${action.error ?? backends.error} />
          <${Notice} text=${action.notice} />
          ${backends.data
            ? html`<p>Default backend: <b>${backends.data.default_backend}</b>${
              backends.data.named
                ? ""
                : " (single-backend config: switch to storage.backends to add more)"
            }</p>`
            : null}
          <${RowsTable} rows=${backends.data?.backends ?? []} actions=${(
            row: Record<string, unknown>,
          ) =>
            html`<${ConfirmButton} label="Remove" onConfirm=${() =>
              action.run(
                () =>
                  call(`backends/${encodeURIComponent(String(row.name))}`, { method: "DELETE" }),
                () => {
                  backends.reload();
                  return `Backend "${row.name}" removed.`;
                },
              )} />`} />
        <//>
        <${Section} title="Add a backend">
          <form class="stack" onSubmit=${add}>
            <label>Name <input required value=${form.name} onInput=${set("name")} /></label>
            <label>Type <select value=${form.type} onChange=${set("type")}>
              <option value="s3">S3-compatible</option><option value="filesystem">Filesystem</option>
            </select></label>
            ${form.type === "filesystem"
              ? html`<label>Path <input required value=${form.path ?? ""} onInput=${
                set("path")
              } /></label>`
              : html`
                <label>Endpoint <input required placeholder="https://s3.example.com" value=${form
                  .endpoint ?? ""}
                  onInput=${set("endpoint")} /></label>
                <label>Region <input value=${form.region ?? ""} onInput=${set("region")} /></label>
                <label>Access key ID <input value=${form.access_key_id ?? ""} onInput=${set(
                  "access_key_id",
                )} /></label>
                <label>Secret access key <input type="password" value=${form.secret_access_key ??
                  ""}
                  onInput=${set("secret_access_key")} /></label>
              `}
            <div class="inline">
              ${form.type === "s3"
                ? html`<button type="button" onClick=${test} disabled=${action.busy}>Test connection</button>`
                : null}
              <button type="submit" class="primary" disabled=${action.busy}>Add backend</button>
            </div>
          </form>
        <//>
      </div>
  `;
}

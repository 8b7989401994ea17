/**
 * Buckets with their backend routing, creating one on a chosen backend, and each bucket's policy
 * (`storage.buckets.<name>` in the config) edited as JSON through the config section route.
 */
import { useState } from "preact/hooks";
import { call } from "../api.ts";
import { html } from "../html.ts";
import { ErrorText, Notice, RowsTable, Section, useAction, useLoad, valueOf } from "../widgets.ts";

export function BucketsPage() {
  const buckets = useLoad(() =>
    call<{ buckets: Record<string, unknown>[]; default_backend: string }>("buckets")
  );
  const storage = useLoad(() =>
    call<{ buckets?: Record<string, unknown> }>("config/section/storage")
  );
  const action = useAction();
  const [name, setName] = useState("");
  const [backend, setBackend] = useState("");
  const [editing, setEditing] = useState<string | null>(null);
  const [policy, setPolicy] = useState("");
  const policies = (storage.data?.buckets ?? {}) as Record<string, unknown>;
  const edit = (bucket: string) => {
    setEditing(bucket);
    setPolicy(JSON.stringify(policies[bucket] ?? {}, null, 2));
  };
  const save = () =>
    action.run(async () => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(policy);
      } catch (err) {
        throw new Error(`The policy is not valid JSON: ${(err as Error).message}`);
      }
      return await call("config/section/storage", {
        method: "PUT",
        body: { buckets: { [editing!]: parsed } },
      });
    }, () => {
      storage.reload();
      buckets.reload();
      return `Policy of "${editing}" saved.`;
    });
  return html`
    <div>
      <${Section} title="Buckets" actions=${html`<button onClick=${buckets.reload}>Refresh</button>`}>
          <form class="inline" onSubmit=${(e: Event) => {
            e.preventDefault();
            action.run(
              () =>
                call("buckets", { body: { name: name.trim(), ...(backend ? { backend } : {}) } }),
              () => {
                buckets.reload();
                return `Bucket "${name}" created.`;
              },
            );
          }}>
            <label>Name <input required value=${name} onInput=${(e: Event) =>
              setName(valueOf(e))} /></label>
            <label>Backend <input placeholder=${buckets.data?.default_backend ??
              "default"} value=${backend}
              onInput=${(e: Event) => setBackend(valueOf(e))} /></label>
            <button type="submit">Create</button>
          </form>
          <${ErrorText} error=${action.error ?? buckets.error ?? storage.error} />
          <${Notice} text=${action.notice} />
          <${RowsTable} rows=${buckets.data?.buckets ?? []} actions=${(
            row: Record<string, unknown>,
          ) => html`<button onClick=${() => edit(String(row.name))}>Policy…</button>`} />
        <//>
        ${editing
          ? html`
            <${Section} title=${`Policy of "${editing}" (storage.buckets.${editing})`}>
              <textarea class="yaml" aria-label="Bucket policy JSON" value=${policy}
                onInput=${(e: Event) =>
                  setPolicy((e.target as HTMLTextAreaElement).value)}></textarea>
              <div class="inline"><button class="primary" onClick=${save}>Save policy</button>
                        <button onClick=${() => setEditing(null)}>Close</button></div>
              <//>
          `
          : null}
      </div>
  `;
}

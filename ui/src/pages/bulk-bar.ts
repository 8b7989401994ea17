/** Actions on the selected objects: copy or move to another bucket/folder, delete, ZIP. */
import { useState } from "preact/hooks";
import { ADMIN, call, queryString } from "../api.ts";
import { html } from "../html.ts";
import type { useAction } from "../widgets.ts";

interface BatchAnswer {
  succeeded: number;
  failed: number;
  results: { ok: boolean; message?: string; key?: string; source_key?: string }[];
}

function summary(verb: string, answer: BatchAnswer): string {
  const failures = answer.results.filter((r) => !r.ok);
  const first = failures[0];
  return `${verb} ${answer.succeeded} object${answer.succeeded === 1 ? "" : "s"}` +
    (failures.length > 0
      ? `; ${failures.length} failed (${first.key ?? first.source_key}: ${first.message})`
      : ".");
}

export function BulkBar(
  { bucket, prefix, keys, onDone, action }: {
    bucket: string;
    prefix: string;
    keys: string[];
    onDone: () => void;
    action: ReturnType<typeof useAction>;
  },
) {
  const [mode, setMode] = useState<"copy" | "move" | "delete" | null>(null);
  const [destBucket, setDestBucket] = useState(bucket);
  const [destPrefix, setDestPrefix] = useState(prefix);
  const transfer = (event: Event) => {
    event.preventDefault();
    const verb = mode === "move" ? "Moved" : "Copied";
    const folder = destPrefix === "" || destPrefix.endsWith("/") ? destPrefix : destPrefix + "/";
    action.run(
      () =>
        call<BatchAnswer>(`objects/${mode}`, {
          body: {
            items: keys.map((key) => ({
              source_bucket: bucket,
              source_key: key,
              destination_bucket: destBucket.trim(),
              destination_key: folder + key.slice(prefix.length),
            })),
          },
        }),
      (answer) => {
        setMode(null);
        onDone();
        return summary(verb, answer);
      },
    );
  };
  const remove = () =>
    action.run(() => call<BatchAnswer>("objects/delete", { body: { bucket, keys } }), (answer) => {
      setMode(null);
      onDone();
      return summary("Deleted", answer);
    });
  return html`<div class="bulk" role="region" aria-label="Selected objects">
    <strong>${keys.length} selected</strong>
    <button onClick=${() => setMode("copy")}>Copy…</button>
    <button onClick=${() => setMode("move")}>Move…</button>
    <button onClick=${() => setMode("delete")}>Delete…</button>
    <a class="button" download href=${`${ADMIN}/objects/zip${queryString({ bucket, key: keys })}`}
      >Download ZIP</a>
    ${
    mode === "copy" || mode === "move"
      ? html`
        <form class="inline" onSubmit=${transfer}>
          <label>To bucket <input name="destination_bucket" required value=${destBucket}
                    onInput=${(e: Event) =>
                      setDestBucket((e.target as HTMLInputElement).value)} /></label>
          <label>Folder <input name="destination_prefix" value=${destPrefix} placeholder="(top)"
                    onInput=${(e: Event) =>
                      setDestPrefix((e.target as HTMLInputElement).value)} /></label>
          <button type="submit" class="primary" disabled=${action.busy}>
                    ${mode === "move" ? "Move" : "Copy"} ${keys.length}</button>
          <button type="button" onClick=${() => setMode(null)}>Cancel</button>
        </form>
      `
      : null
  }
    ${
    mode === "delete"
      ? html`<span class="confirm">Delete ${keys.length} object${keys.length === 1 ? "" : "s"}?
          <button class="danger" onClick=${remove} disabled=${action.busy}>Delete</button>
          <button onClick=${() => setMode(null)}>Keep</button></span>`
      : null
  }
  </div>`;
}

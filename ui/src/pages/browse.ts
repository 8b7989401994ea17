/**
 * The object browser: the bucket list (create, delete), or one bucket's folder with breadcrumbs.
 * URL: `/_/browse/<bucket>/<folder path>/`, each segment percent-encoded.
 */
import { useState } from "preact/hooks";
import { call } from "../api.ts";
import type { Session } from "../app.ts";
import { html } from "../html.ts";
import { linkClick } from "../router.ts";
import { ErrorText, formatTime, Notice, Section, useAction, useLoad } from "../widgets.ts";
import { ObjectList } from "./object-list.ts";

export function browseHref(bucket?: string, prefix = ""): string {
  if (bucket === undefined) return "/_/browse";
  const parts = prefix === "" ? [] : prefix.split("/");
  return `/_/browse/${[bucket, ...parts].map(encodeURIComponent).join("/")}`;
}

export function BrowsePage({ segments }: { segments: string[]; session: Session }) {
  const bucket = segments[0];
  if (!bucket) return html`<${BucketList} />`;
  const rest = segments.slice(1);
  // `/_/browse/b/a/b/` → prefix "a/b/"; a folder link always ends with "/".
  const prefix = rest.length === 0 ? "" : rest.join("/");
  return html`
    <div>
      <${Breadcrumbs} bucket=${bucket} prefix=${prefix} />
      <${ObjectList} bucket=${bucket} prefix=${prefix} key=${bucket + "\u0000" + prefix} />
    </div>
  `;
}

function Breadcrumbs({ bucket, prefix }: { bucket: string; prefix: string }) {
  const parts = prefix.split("/").filter((p) => p !== "");
  return html`<nav class="crumbs" aria-label="Folder">
    <a href="/_/browse" onClick=${linkClick}>Buckets</a>
    <span aria-hidden="true">/</span>
    <a href=${browseHref(bucket)} onClick=${linkClick}>${bucket}</a>
    ${
    parts.map((part, i) =>
      html`
        <span aria-hidden="true">/</span><a
          href=${browseHref(bucket, parts.slice(0, i + 1).join("/") + "/")}
          onClick=${linkClick}
          aria-current=${i === parts.length - 1 ? "page" : undefined}>${part}</a>
      `
    )
  }
  </nav>`;
}

interface BucketRow {
  name: string;
  created: string | null;
}

function BucketList() {
  const buckets = useLoad(() => call<{ buckets: BucketRow[] }>("objects/list"));
  const [name, setName] = useState("");
  const [confirming, setConfirming] = useState<string | null>(null);
  const action = useAction();
  const create = (event: Event) => {
    event.preventDefault();
    action.run(
      () => call("objects/buckets", { body: { bucket: name.trim() } }),
      () => {
        buckets.reload();
        const made = name.trim();
        setName("");
        return `Bucket "${made}" created.`;
      },
    );
  };
  const remove = (bucket: string) =>
    action.run(
      () => call(`objects/buckets/${encodeURIComponent(bucket)}`, { method: "DELETE" }),
      () => {
        setConfirming(null);
        buckets.reload();
        return `Bucket "${bucket}" deleted.`;
      },
    );
  return html`<${Section} title="Buckets">
    <form class="inline" onSubmit=${create}>
      <label>New bucket
        <input name="bucket" required pattern="[a-z0-9][a-z0-9.\\-]{1,61}[a-z0-9]"
          title="3–63 characters: lower-case letters, digits, dots and hyphens"
          value=${name} onInput=${(e: Event) => setName((e.target as HTMLInputElement).value)} />
      </label>
      <button type="submit" disabled=${action.busy}>Create bucket</button>
    </form>
    <${ErrorText} error=${action.error ?? buckets.error} />
    <${Notice} text=${action.notice} />
    ${buckets.loading && !buckets.data ? html`<p class="loading">Loading buckets…</p>` : null}
    ${
    buckets.data && buckets.data.buckets.length === 0
      ? html`<p>No buckets you can see yet.</p>`
      : null
  }
    <ul class="buckets">
      ${
    (buckets.data?.buckets ?? []).map((b) =>
      html`<li>
          <a href=${browseHref(b.name)} onClick=${linkClick}>${b.name}</a>
          <small>${formatTime(b.created)}</small>
          ${
        confirming === b.name
          ? html`<span class="confirm">Delete "${b.name}"? It must be empty.
                <button class="danger" onClick=${() => remove(b.name)}>Delete</button>
                <button onClick=${() => setConfirming(null)}>Keep</button></span>`
          : html`
            <button class="ghost" aria-label=${`Delete bucket ${b.name}`}
              onClick=${() => setConfirming(b.name)}>Delete</button>
          `
      }
        </li>`
    )
  }
    </ul>
  <//>`;
}
